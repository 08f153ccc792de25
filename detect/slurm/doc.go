// Package slurm is the Slurm detector: the identity of the Slurm job that
// a task belongs to, read from that task's environment, which is given to
// it, never from the process environment.
//
// The identity is the allowlist of keys, rules: the slurm.* keys,
// nv.dl.job.uuid and nv.dl.run.uuid, each one row of the project's key
// table (internal/keys), from which rules_gen.go is generated. Values
// inherited through the allowlisted keys of the environment's
// OTEL_RESOURCE_ATTRIBUTES win; the task's SLURM_* variables fill the keys
// left, but only when SLURM_JOB_ID is non-empty. [Strings] returns every
// value as a string, [Detect] the integer keys as int64.
//
// The SPANK plugin runs this detector in every task of every job step, in
// a helper process of the task's own: so that its library stays small and
// starts fast, this package links neither fmt nor os (the plugin's
// cgo/deps_test.go checks it). [Vars] and [Task] are the forms of that
// path: the variables the detector reads, in a fixed array, and results
// appended to a slice. [Task.AppendStrings] is the one detection; [Strings]
// and [Detect] wrap it for any [environ.Env].
package slurm
