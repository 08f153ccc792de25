// Package uuidv5 owns the naming of the job and run UUIDs (the names
// hashed, the job key, nojob and nocluster) and derives them as a plain
// [16]byte, for the per-task library.
//
// Package uuidderive is the public API and returns github.com/google/uuid
// values. That module imports net, crypto/rand and encoding/json, whose
// initialisation and size cost load time in every task (measured with the
// spank/ harness: about 6% of a fork, dlopen and call). The per-task path
// (package internal/slurm) therefore uses this package, which needs only the
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

// The names hashed are fixed by the specification, so every tool that
// follows it derives the same UUIDs for the same job:
//
//	job: nemo.lens.job/<cluster>/<job key>
//	run: nemo.lens.run/<cluster>/<job key>[/sr<restart>][/te<restart>]
//	     nemo.lens.run/local/<run id>/te<restart>
const (
	jobPrefix    = "nemo.lens.job/"
	runPrefix    = "nemo.lens.run/"
	localCluster = "local"
	noJob        = "nojob"
	noCluster    = "nocluster"
)

// Names of the environment variables the names are derived from.
const (
	envJobID             = "SLURM_JOB_ID"
	envArrayJobID        = "SLURM_ARRAY_JOB_ID"
	envArrayTaskID       = "SLURM_ARRAY_TASK_ID"
	envClusterName       = "SLURM_CLUSTER_NAME"
	envRestartCount      = "SLURM_RESTART_COUNT"
	envTorchRestartCount = "TORCHELASTIC_RESTART_COUNT"
	envTorchRunID        = "TORCHELASTIC_RUN_ID"
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

// JobVarsOf returns the JobVars of env.
func JobVarsOf(env Env) JobVars {
	cluster, _ := env.Lookup(envClusterName)
	jobID, _ := env.Lookup(envJobID)
	arrayJobID, _ := env.Lookup(envArrayJobID)
	_, array := env.Lookup(envArrayTaskID)
	return JobVars{Cluster: cluster, JobID: jobID, ArrayJobID: arrayJobID, ArrayTask: array}
}

// cluster returns the cluster of the names: SLURM_CLUSTER_NAME, or
// "nocluster" when it is empty or unset.
func (v JobVars) cluster() string { return cmp.Or(v.Cluster, noCluster) }

// key returns the job key: the array job id for an array element, the job
// id otherwise, and "nojob" when that is empty. It is why every step,
// restart, requeue and element of an array job has one job UUID.
func (v JobVars) key() string {
	key := v.JobID
	if v.ArrayTask {
		key = v.ArrayJobID
	}
	return cmp.Or(key, noJob)
}

// AppendName appends the name the job UUID is derived from:
// "nemo.lens.job/<cluster>/<job key>".
func (v JobVars) AppendName(b []byte) []byte {
	b = append(b, jobPrefix...)
	b = append(b, v.cluster()...)
	b = append(b, '/')
	return append(b, v.key()...)
}

// UUID returns uuid5(URL, the job name).
func (v JobVars) UUID() UUID {
	var buf [16 + NameBufSize]byte
	ns := NamespaceURL()
	b := append(buf[:0], ns[:]...)
	return Sum(v.AppendName(b))
}

// AppendRunName appends the name the run (attempt) UUID of env is derived
// from, and reports false, with b unchanged, when there is none.
//
// With a Slurm job (SLURM_JOB_ID or SLURM_ARRAY_JOB_ID non-empty) the name
// is "nemo.lens.run/<cluster>/<job key>", followed by
// "/sr<SLURM_RESTART_COUNT>" (0 when unset or empty) unless the job is an
// array job, followed by "/te<TORCHELASTIC_RESTART_COUNT>" when that
// variable is set; runID is not used. Without a Slurm job the name is
// "nemo.lens.run/local/<run id>/te<TORCHELASTIC_RESTART_COUNT or 0>", where
// the run id is runID or else TORCHELASTIC_RUN_ID; with neither there is no
// name.
func AppendRunName(b []byte, env Env, runID string) ([]byte, bool) {
	if job := JobVarsOf(env); job.JobID != "" || job.ArrayJobID != "" {
		b = append(b, runPrefix...)
		b = append(b, job.cluster()...)
		b = append(b, '/')
		b = append(b, job.key()...)
		if !job.ArrayTask {
			b = append(b, "/sr"...)
			b = append(b, valueOr(env, envRestartCount, "0")...)
		}
		if te, ok := env.Lookup(envTorchRestartCount); ok {
			b = append(b, "/te"...)
			b = append(b, te...)
		}
		return b, true
	}
	if runID == "" {
		runID, _ = env.Lookup(envTorchRunID)
	}
	if runID == "" {
		return b, false
	}
	b = append(b, runPrefix...)
	b = append(b, localCluster...)
	b = append(b, '/')
	b = append(b, runID...)
	b = append(b, "/te"...)
	return append(b, valueOr(env, envTorchRestartCount, "0")...), true
}

// valueOr returns the value of the variable name, or def when it is unset
// or empty.
func valueOr(env Env, name, def string) string {
	if v, _ := env.Lookup(name); v != "" {
		return v
	}
	return def
}

// Env is the environment the derivations and the detectors read. Lookup
// reports the value of a variable and whether it is set at all; a variable
// set to "" is set. detect.Env and uuidderive.Env are this type.
type Env interface {
	Lookup(key string) (string, bool)
}
