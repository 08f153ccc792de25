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
// The naming rules live in an internal package that the per-task library
// shares; this package returns its results as github.com/google/uuid values.
package uuidderive

import (
	"github.com/google/uuid"

	"github.com/spank-otel/spank-otel/internal/uuidv5"
)

// Env is what the derivations read: the raw scheduler environment of one task.
// Lookup reports the value of a variable and whether it is set at all.
// It is the same type as detect.Env.
type Env = uuidv5.Env

// JobName returns the name the job UUID is derived from:
// "nemo.lens.job/<cluster>/<job key>".
func JobName(env Env) string {
	var buf [uuidv5.NameBufSize]byte
	return string(uuidv5.JobVarsOf(env).AppendName(buf[:0]))
}

// JobUUID returns the job UUID, uuid5(URL, JobName(env)). It is defined for
// every environment: without Slurm variables it is the UUID of
// "nemo.lens.job/nocluster/nojob".
func JobUUID(env Env) uuid.UUID {
	return uuid.UUID(uuidv5.JobVarsOf(env).UUID())
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
func RunName(env Env, runID string) (string, bool) {
	var buf [uuidv5.NameBufSize]byte
	b, ok := uuidv5.AppendRunName(buf[:0], env, runID)
	if !ok {
		return "", false
	}
	return string(b), true
}

// RunUUID returns uuid5(URL, name) for the name of RunName, and false when
// RunName has none.
func RunUUID(env Env, runID string) (uuid.UUID, bool) {
	var buf [16 + uuidv5.NameBufSize]byte
	b := append(buf[:0], uuid.NameSpaceURL[:]...)
	b, ok := uuidv5.AppendRunName(b, env, runID)
	if !ok {
		return uuid.Nil, false
	}
	return uuid.UUID(uuidv5.Sum(b)), true
}
