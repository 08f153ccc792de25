package slurm

import "strconv"

// stepOverride is what SetInStep fixed; stepFromEnv until it is called.
type stepOverride int8

const (
	stepFromEnv stepOverride = iota
	stepJobLevel
	stepInStep
)

// SetInStep fixes what [Vars.InStep] reports, whatever the step
// variables say. The detector writes slurm.head_node.name only at the job
// level, and a caller that also decides about other keys by the stage (the
// plugin writes the topology only in a step) must make both decisions from
// one answer.
func (e *Vars) SetInStep(inStep bool) {
	e.step = stepJobLevel
	if inStep {
		e.step = stepInStep
	}
}

// InStep reports whether e is the environment of a task of a job step, as
// opposed to the batch script, unless [Vars.SetInStep] has fixed the
// answer: SLURM_STEP_ID (or, when that is unset or empty, the older
// SLURM_STEPID) names a regular step, "0" included.
//
// A step id is regular when it is a base-10 number from 0 to 0xfffffff0,
// or any other non-empty text that is not a number. Slurm's special steps
// are job level: negative ids (Slurm 26.05 sets SLURM_STEP_ID=-5 in the
// batch script), ids above 0xfffffff0 (the same steps written unsigned:
// 4294967291 for the batch step, 4294967294 before Slurm 20.11) and the
// names batch, extern and interactive. Otherwise the batch script would
// lose its head node and pass its own topology to every step.
func (e *Vars) InStep() bool {
	switch e.step {
	case stepJobLevel:
		return false
	case stepInStep:
		return true
	}
	id := e.value(varStepID)
	if id == "" {
		id = e.value(varStepIDOld)
	}
	return isStepID(id)
}

// maxRegularStepID is the largest id Slurm gives a regular step; the ids
// above it name the batch, extern and interactive steps.
const maxRegularStepID = 0xfffffff0

func isStepID(id string) bool {
	switch id {
	case "", "batch", "extern", "interactive":
		return false
	}
	if n, err := strconv.ParseInt(id, 10, 64); err == nil {
		return n >= 0 && n <= maxRegularStepID
	}
	return true
}
