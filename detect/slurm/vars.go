package slurm

import (
	"github.com/spank-otel/spank-otel/environ"
	"github.com/spank-otel/spank-otel/internal/keys"
	"github.com/spank-otel/spank-otel/internal/strs"
	"github.com/spank-otel/spank-otel/libcarrier"
)

// The variables that the detector's code reads by index, first in a Vars:
// the inherited carrier, what slurm.job.id and the job UUID are derived
// from, the step ids, and what package uuidderive reads for a run UUID.
// The variables of the rules follow them, in varNames (lookup_gen.go).
const (
	varCarrier = iota
	varJobID
	varArrayJobID
	varArrayTaskID
	varClusterName
	varStepID
	varStepIDOld
	varRestartCount
	varTorchRestartCount
	varTorchRunID

	numFixedVars
)

// fixedVarNames are the names of the variables above, by index.
var fixedVarNames = [numFixedVars]string{
	varCarrier:           libcarrier.EnvVar,
	varJobID:             "SLURM_JOB_ID",
	varArrayJobID:        "SLURM_ARRAY_JOB_ID",
	varArrayTaskID:       "SLURM_ARRAY_TASK_ID",
	varClusterName:       "SLURM_CLUSTER_NAME",
	varStepID:            "SLURM_STEP_ID",
	varStepIDOld:         "SLURM_STEPID",
	varRestartCount:      "SLURM_RESTART_COUNT",
	varTorchRestartCount: "TORCHELASTIC_RESTART_COUNT",
	varTorchRunID:        "TORCHELASTIC_RUN_ID",
}

// gpuVarNames are the variables package gpu reads, which a Vars holds too
// (after fixedVarNames, before the rules'), so that the task path reads a
// task's environment once and hands the GPU search the same Vars, as an
// [environ.Env]. It reads them by name, through [Vars.Lookup].
var gpuVarNames = [...]string{
	keys.VarVisibleDevices,
	keys.VarStepGPUs,
	keys.VarGPUsOnNode,
	keys.VarSlurmConf,
	keys.VarNodeName,
	keys.VarDeviceOrder,
}

// Vars.set has one bit per variable.
var _ [64 - numVars]struct{}

// Vars is the part of a task's environment that the Slurm detector, the
// derivations of package uuidderive and the GPU search (package gpu)
// read: OTEL_RESOURCE_ATTRIBUTES, a fixed set of about thirty SLURM_*,
// SLURMD_*, LENS_*, NV_LAUNCH_* and TORCHELASTIC_* variables, and the
// GPU search's CUDA_* and SLURM_* variables (internal/keys). Every other
// variable is unset in a Vars.
//
// [Vars.ReadList] fills a fixed array in one pass over the environment
// and does not allocate, where a map of the whole environment would: a
// *Vars is the one view, and the [environ.Env], of a task's environment
// on the per-task path. The zero Vars is an empty environment.
type Vars struct {
	values [numVars]string
	set    uint64 // bit i: values[i] is set
	step   stepSource
	stepID uint32 // with step == stepKnown
}

// ReadList sets e to the variables of kv, "NAME=value" entries such as
// the envp of execve, that a Vars holds: an entry without '=' is ignored,
// and the first occurrence of a name wins, as for getenv(3) and
// [environ.List]. Values share memory with kv. It works in place, so that
// the per-task path can keep the Vars off the stack.
func (e *Vars) ReadList(kv []string) {
	*e = Vars{}
	for _, entry := range kv {
		eq := strs.IndexByte(entry, '=')
		if eq < 0 {
			continue
		}
		if i := varIndex(entry[:eq]); i >= 0 && !e.has(i) {
			e.put(i, entry[eq+1:])
		}
	}
}

// varsOf returns the Vars of env: the variables of env that a Vars holds.
func varsOf(env environ.Env) Vars {
	if e, ok := env.(*Vars); ok {
		return *e
	}
	var e Vars
	for i, name := range varNames {
		if v, ok := env.Lookup(name); ok {
			e.put(i, v)
		}
	}
	return e
}

// Lookup returns the value of the variable name and whether it is set.
// A variable that a Vars does not hold is reported unset.
func (e *Vars) Lookup(name string) (string, bool) {
	i := varIndex(name)
	if i < 0 {
		return "", false
	}
	return e.values[i], e.has(i)
}

// has reports whether the variable of index i is set.
func (e *Vars) has(i int) bool { return e.set&(1<<i) != 0 }

// value returns the value of the variable of index i, "" when it is unset.
func (e *Vars) value(i int) string { return e.values[i] }

func (e *Vars) put(i int, value string) {
	e.values[i] = value
	e.set |= 1 << i
}

// firstOf returns the first non-empty value of the variables vars, and that
// variable's index; "" and -1 when all are unset or empty.
func (e *Vars) firstOf(vars []uint8) (value string, i int) {
	for _, i := range vars {
		if v := e.value(int(i)); v != "" {
			return v, int(i)
		}
	}
	return "", -1
}
