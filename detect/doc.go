// Package detect reads resource attributes from an environment that is given
// to it (an [environ.Env]), never from the process environment, so that a
// launcher or the spank-otel command can hand it the environment of one
// Slurm task.
//
// Three detectors exist:
//
//   - [Local]: host.name, process.pid and host.gpu.count;
//   - the Slurm detector, package detect/slurm: the identity of the Slurm
//     job, derived from the task's SLURM_* variables and merged with the
//     allowlisted keys inherited through OTEL_RESOURCE_ATTRIBUTES;
//   - [Kubernetes]: the pod's identity, from K8S_* variables.
//
// [Resource] is no detector of its own: it runs the three and merges their
// results in that order.
//
// Results are [Attributes]: values are strings, or int64 for the integer keys
// (see [libcarrier.IsIntegerKey]). Problems are reported as
// [libcarrier.Warning] values; a detector never fails.
package detect
