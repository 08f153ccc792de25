// Package uuidv5 derives the job UUID as a plain [16]byte, for the per-task
// library.
//
// Package uuidderive is the public API and returns github.com/google/uuid
// values. That module imports net, crypto/rand and encoding/json, whose
// initialisation and size cost load time in every task (measured with the
// spank/ harness: about 6% of a fork, dlopen and call). The per-task path
// (package detect) therefore uses this package, which needs only the
// standard library; uuidderive builds on it, and its tests check every
// result against uuid.NewSHA1.
package uuidv5

import (
	"cmp"

	"github.com/spank-otel/spank-otel/internal/sha1"
)

// UUID is a version 5 UUID.
type UUID [16]byte

// NamespaceURL returns the URL namespace of RFC 9562,
// 6ba7b811-9dad-11d1-80b4-00c04fd430c8.
func NamespaceURL() UUID {
	return UUID{0x6b, 0xa7, 0xb8, 0x11, 0x9d, 0xad, 0x11, 0xd1, 0x80, 0xb4, 0x00, 0xc0, 0x4f, 0xd4, 0x30, 0xc8}
}

// Sum returns the version 5 UUID of namespace||name, given already
// concatenated in b. The internal sha1 keeps everything on the stack and
// the FIPS module out of the per-task library.
func Sum(b []byte) UUID {
	sum := sha1.Sum(b)
	var u UUID
	copy(u[:], sum[:16])
	u[6] = (u[6] & 0x0f) | 0x50 // version 5
	u[8] = (u[8] & 0x3f) | 0x80 // RFC 4122 variant
	return u
}

// String returns u in the canonical form xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx,
// lower-case.
func (u UUID) String() string {
	const hex = "0123456789abcdef"
	var b [36]byte
	j := 0
	for i, c := range u {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			b[j] = '-'
			j++
		}
		b[j], b[j+1] = hex[c>>4], hex[c&15]
		j += 2
	}
	return string(b[:])
}

// Name prefixes and defaults of the job name.
const (
	jobPrefix = "nemo.lens.job/"
	noJob     = "nojob"
	noCluster = "nocluster"
)

// NameBufSize is large enough for the names of real jobs, so that hashing
// them needs no heap allocation; a longer name still works, it just
// allocates.
const NameBufSize = 192

// JobVars are the values of the variables that the job UUID is derived
// from. The zero value stands for an environment without them.
type JobVars struct {
	Cluster    string // SLURM_CLUSTER_NAME
	JobID      string // SLURM_JOB_ID
	ArrayJobID string // SLURM_ARRAY_JOB_ID
	ArrayTask  bool   // whether SLURM_ARRAY_TASK_ID is set, even to ""
}

// AppendName appends the name the job UUID is derived from:
// "nemo.lens.job/<cluster>/<job key>", where the job key is the array job id
// for an array element and the job id otherwise.
func (v JobVars) AppendName(b []byte) []byte {
	key := v.JobID
	if v.ArrayTask {
		key = v.ArrayJobID
	}
	b = append(b, jobPrefix...)
	b = append(b, cmp.Or(v.Cluster, noCluster)...)
	b = append(b, '/')
	return append(b, cmp.Or(key, noJob)...)
}

// UUID returns uuid5(URL, the job name).
func (v JobVars) UUID() UUID {
	var buf [16 + NameBufSize]byte
	ns := NamespaceURL()
	b := append(buf[:0], ns[:]...)
	return Sum(v.AppendName(b))
}

// Env is the environment the derivations and the detectors read. Lookup
// reports the value of a variable and whether it is set at all; a variable
// set to "" is set. detect.Env and uuidderive.Env are this type.
type Env interface {
	Lookup(key string) (string, bool)
}
