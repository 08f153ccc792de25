// Package detect reads resource attributes from an environment that is given
// to it, never from the process environment, so that the SPANK plugin can hand
// it the environment of one Slurm task.
//
// Four detectors exist:
//
//   - [Local]: host.name, process.pid and host.gpu.count;
//   - [Slurm] (and its string form [SlurmStrings]): the identity of the Slurm
//     job, derived from the task's SLURM_* variables and merged with the
//     allowlisted keys inherited through OTEL_RESOURCE_ATTRIBUTES;
//   - [Kubernetes]: the pod's identity, from K8S_* variables;
//   - [Resource]: the three above, merged in that order.
//
// Results are [Attributes]: values are strings, or int64 for the integer keys
// (see [libcarrier.IsIntegerKey]). Problems are reported as
// [libcarrier.Warning] values; a detector never fails.
//
// The Slurm detector runs in every task of every job step, so it has a
// path that builds no maps: [SlurmEnvList] keeps only the variables it
// reads, and [AppendSlurmStrings] works on slices of
// [libcarrier.KeyValue], as returned by [libcarrier.AppendParse] and
// written by [libcarrier.FormatList].
package detect
