// Package uuidderive derives the stable job UUID and the per-attempt run UUID
// of a Slurm job (or of a local run) from the raw scheduler environment.
//
// Both UUIDs are version 5 (SHA-1) UUIDs in the URL namespace
// (6ba7b811-9dad-11d1-80b4-00c04fd430c8). The names hashed are fixed by the
// specification, so every tool that follows it derives the same UUID for the
// same job:
//
//	job: nemo.lens.job/<cluster>/<job key>
//	run: nemo.lens.run/<cluster>/<job key>[/sr<restart>][/te<restart>]
//	     nemo.lens.run/local/<run id>/te<restart>
//
// The job key is SLURM_ARRAY_JOB_ID when SLURM_ARRAY_TASK_ID is set, else
// SLURM_JOB_ID, and "nojob" when that value is empty; the cluster is
// SLURM_CLUSTER_NAME, or "nocluster" when it is empty or unset. The job UUID is
// therefore the same for every step, restart, requeue and element of an array
// job.
//
// Only the environment passed in is read, never the process environment, and
// attributes inherited through OTEL_RESOURCE_ATTRIBUTES play no part.
//
// The SPANK plugin derives the job UUID in every task with this package, so
// it needs nothing but the standard library: its [UUID] is a plain array,
// which converts to github.com/google/uuid's as uuid.UUID(u). That module,
// and crypto/sha1, would bring net, crypto/rand, encoding/json and the FIPS
// 140 module into the library that every task loads.
package uuidderive

import (
	"cmp"

	"github.com/spank-otel/spank-otel/environ"
)

// The names hashed are fixed by the specification, so every tool that
// follows it derives the same UUIDs for the same job.
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

// nameBufSize is large enough for the names of real jobs, so that hashing
// them needs no heap allocation; a longer name still works, it just
// allocates.
const nameBufSize = 192

// JobName returns the name the job UUID is derived from:
// "nemo.lens.job/<cluster>/<job key>".
func JobName(env environ.Env) string {
	var buf [nameBufSize]byte
	return string(jobVarsOf(env).appendName(buf[:0]))
}

// JobUUID returns the job UUID, uuid5(URL, JobName(env)). It is defined for
// every environment: without Slurm variables it is the UUID of
// "nemo.lens.job/nocluster/nojob".
func JobUUID(env environ.Env) UUID {
	return jobVarsOf(env).UUID()
}

// RunName returns the name the run (attempt) UUID is derived from, and false
// when there is none.
//
// With a Slurm job (SLURM_JOB_ID or SLURM_ARRAY_JOB_ID non-empty) the name is
// "nemo.lens.run/<cluster>/<job key>", followed by "/sr<SLURM_RESTART_COUNT>"
// (0 when unset or empty) unless the job is an array job, followed by
// "/te<TORCHELASTIC_RESTART_COUNT>" when that variable is set; runID is not
// used. Without a Slurm job the name is
// "nemo.lens.run/local/<run id>/te<TORCHELASTIC_RESTART_COUNT or 0>", where
// the run id is runID or else TORCHELASTIC_RUN_ID; with neither there is no
// name.
func RunName(env environ.Env, runID string) (string, bool) {
	var buf [nameBufSize]byte
	b, ok := appendRunName(buf[:0], env, runID)
	if !ok {
		return "", false
	}
	return string(b), true
}

// RunUUID returns uuid5(URL, name) for the name of RunName, and false when
// RunName has none.
func RunUUID(env environ.Env, runID string) (UUID, bool) {
	var buf [len(UUID{}) + nameBufSize]byte
	ns := namespaceURL()
	b := append(buf[:0], ns[:]...)
	b, ok := appendRunName(b, env, runID)
	if !ok {
		return UUID{}, false
	}
	return sum(b), true
}

// JobVars are the values of the variables that the job UUID is derived
// from, for a caller that has them at hand: [JobUUID] of an environment
// that holds them is their UUID. The zero value stands for an environment
// without them.
type JobVars struct {
	Cluster    string // SLURM_CLUSTER_NAME
	JobID      string // SLURM_JOB_ID
	ArrayJobID string // SLURM_ARRAY_JOB_ID
	ArrayTask  bool   // whether SLURM_ARRAY_TASK_ID is set, even to ""
}

// UUID returns the job UUID of v: uuid5(URL, "nemo.lens.job/<cluster>/<job key>").
func (v JobVars) UUID() UUID {
	var buf [len(UUID{}) + nameBufSize]byte
	ns := namespaceURL()
	b := append(buf[:0], ns[:]...)
	return sum(v.appendName(b))
}

// jobVarsOf returns the JobVars of env.
func jobVarsOf(env environ.Env) JobVars {
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

// appendName appends the name the job UUID is derived from.
func (v JobVars) appendName(b []byte) []byte {
	b = append(b, jobPrefix...)
	b = append(b, v.cluster()...)
	b = append(b, '/')
	return append(b, v.key()...)
}

// appendRunName appends the name of [RunName] to b, and reports false, with
// b unchanged, when there is none.
func appendRunName(b []byte, env environ.Env, runID string) ([]byte, bool) {
	if job := jobVarsOf(env); job.JobID != "" || job.ArrayJobID != "" {
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
func valueOr(env environ.Env, name, def string) string {
	if v, _ := env.Lookup(name); v != "" {
		return v
	}
	return def
}
