package slurm

//go:generate go test -run TestLookupGenerated -update .

import (
	"github.com/spank-otel/spank-otel/internal/strs"
	"github.com/spank-otel/spank-otel/libcarrier"
	"github.com/spank-otel/spank-otel/uuidderive"
)

// The variables a Vars holds, by their index in it: what the Slurm
// detector reads, and what package uuidderive reads. To add one: a
// constant here, its name in slurmVarNames, `go generate`, then the code
// that reads it.
const (
	varCarrier = iota // OTEL_RESOURCE_ATTRIBUTES
	varJobID
	varArrayJobID
	varArrayTaskID
	varArrayTaskCount
	varClusterName
	varJobName
	varJobPartition
	varPartition
	varJobNumNodes
	varNNodes
	varNTasks
	varRestartCount
	varJobUser
	varJobAccount
	varJobQOS
	varJobReservation
	varSegment
	varTopologyAddr
	varTopologyAddrPattern
	varNodeName
	varStepID
	varStepIDOld
	varLensSLUID
	varNVSLUID
	varJobSLUID
	varLensArraySLUID
	varNVArraySLUID
	varTorchRestartCount
	varTorchRunID

	slurmVarCount
)

// Vars.set has one bit per variable.
var _ [64 - slurmVarCount]struct{}

// slurmVarNames are the names of the variables a Vars holds, by index: the
// table that slurmVar, its reverse, is generated from.
var slurmVarNames = [slurmVarCount]string{
	varCarrier:             libcarrier.EnvVar,
	varJobID:               "SLURM_JOB_ID",
	varArrayJobID:          "SLURM_ARRAY_JOB_ID",
	varArrayTaskID:         "SLURM_ARRAY_TASK_ID",
	varArrayTaskCount:      "SLURM_ARRAY_TASK_COUNT",
	varClusterName:         "SLURM_CLUSTER_NAME",
	varJobName:             "SLURM_JOB_NAME",
	varJobPartition:        "SLURM_JOB_PARTITION",
	varPartition:           "SLURM_PARTITION",
	varJobNumNodes:         "SLURM_JOB_NUM_NODES",
	varNNodes:              "SLURM_NNODES",
	varNTasks:              "SLURM_NTASKS",
	varRestartCount:        "SLURM_RESTART_COUNT",
	varJobUser:             "SLURM_JOB_USER",
	varJobAccount:          "SLURM_JOB_ACCOUNT",
	varJobQOS:              "SLURM_JOB_QOS",
	varJobReservation:      "SLURM_JOB_RESERVATION",
	varSegment:             "SLURM_SEGMENT",
	varTopologyAddr:        "SLURM_TOPOLOGY_ADDR",
	varTopologyAddrPattern: "SLURM_TOPOLOGY_ADDR_PATTERN",
	varNodeName:            "SLURMD_NODENAME",
	varStepID:              "SLURM_STEP_ID",
	varStepIDOld:           "SLURM_STEPID",
	varLensSLUID:           "LENS_SLURM_SLUID",
	varNVSLUID:             "NV_LAUNCH_SLUID",
	varJobSLUID:            "SLURM_JOB_SLUID",
	varLensArraySLUID:      "LENS_SLURM_ARRAY_SLUID",
	varNVArraySLUID:        "NV_LAUNCH_ARRAY_SLUID",
	varTorchRestartCount:   "TORCHELASTIC_RESTART_COUNT",
	varTorchRunID:          "TORCHELASTIC_RUN_ID",
}

// Vars is the part of a task's environment that the Slurm detector
// ([Strings], [AppendStrings]) and the derivations of package uuidderive
// read: OTEL_RESOURCE_ATTRIBUTES and a fixed set of about thirty SLURM_*,
// SLURMD_*, LENS_*, NV_LAUNCH_* and TORCHELASTIC_* variables. Every other
// variable is unset in a Vars, so it is no Env for detect's Local,
// Kubernetes or Resource.
//
// Unlike detect.EnvList, which builds a map of the whole environment,
// [VarsList] fills a fixed array and does not allocate: it is the Env of
// the per-task hot path. Its zero value is an empty environment.
type Vars struct {
	values [slurmVarCount]string
	set    uint64 // bit i: values[i] is set
	step   stepOverride
}

// stepOverride is what SetInStep fixed; stepFromEnv until it is called.
type stepOverride int8

const (
	stepFromEnv stepOverride = iota
	stepJobLevel
	stepInStep
)

// SetInStep fixes what [Vars.InStep] reports, whatever the step
// variables say. The Slurm detector writes slurm.head_node.name only at the
// job level, and a caller that also decides about other keys by the stage
// (package taskenv: topology is written only in a step) must make both
// decisions from one answer.
func (e *Vars) SetInStep(inStep bool) {
	e.step = stepJobLevel
	if inStep {
		e.step = stepInStep
	}
}

// VarsList returns the Vars of "NAME=value" entries, such as the
// envp of execve, read by the rules of detect.EnvList: an entry without '=' is
// ignored, and the first occurrence of a name wins. Values share memory
// with kv.
func VarsList(kv []string) Vars {
	var e Vars
	e.ReadList(kv)
	return e
}

// ReadList sets e to the Vars of kv, as [VarsList] returns it, in place:
// a Vars is about 500 bytes, and the per-task path keeps it off the stack.
func (e *Vars) ReadList(kv []string) {
	*e = Vars{}
	for _, entry := range kv {
		eq := strs.IndexByte(entry, '=')
		if eq < 0 {
			continue
		}
		if i := slurmVar(entry[:eq]); i >= 0 && !e.has(i) {
			e.put(i, entry[eq+1:])
		}
	}
}

// VarsOf returns the Vars of env: the variables of env that a
// Vars holds.
func VarsOf(env uuidderive.Env) Vars {
	if e, ok := env.(*Vars); ok {
		return *e
	}
	var e Vars
	for i, name := range slurmVarNames {
		if v, ok := env.Lookup(name); ok {
			e.put(i, v)
		}
	}
	return e
}

// Lookup returns the value of the variable name and whether it is set.
// A variable that a Vars does not hold is reported unset.
func (e *Vars) Lookup(name string) (string, bool) {
	i := slurmVar(name)
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
func (e *Vars) firstOf(vars ...int) (value string, i int) {
	for _, i := range vars {
		if v := e.value(i); v != "" {
			return v, i
		}
	}
	return "", -1
}
