package slurm

import "strconv"

// stepSource says where [Vars.InStep] and the step id come from.
type stepSource uint8

const (
	// stepFromEnv: the step variables, SLURM_STEP_ID or SLURM_STEPID.
	stepFromEnv stepSource = iota
	// stepJobLevel, stepInStep: fixed by SetInStep, without an id.
	stepJobLevel
	stepInStep
	// stepKnown: the id Slurm gave the plugin, by SetStep.
	stepKnown
)

// MaxRegularStepID is the largest id Slurm gives a regular job step. The
// ids above it name Slurm's special steps, which are job contexts: the
// batch script (0xfffffffb), the interactive step of salloc (0xfffffffa)
// and the extern step (0xfffffffc), which runs no task.
const MaxRegularStepID = 0xfffffff0

// SetStep fixes the task's step to id, as Slurm numbers it (the plugin's
// S_JOB_STEPID): [Vars.InStep] reports whether id is a regular step, and
// slurm.step.id is id. The step variables are then not read: a user can
// set them, Slurm's own answer cannot be.
func (e *Vars) SetStep(id uint32) {
	e.step, e.stepID = stepKnown, id
}

// SetInStep fixes what [Vars.InStep] reports, whatever the step
// variables say, without a step id: the command's --stage. One answer
// decides every level of the rules table.
func (e *Vars) SetInStep(inStep bool) {
	e.step = stepJobLevel
	if inStep {
		e.step = stepInStep
	}
}

// InStep reports whether e is the environment of a task of a job step, as
// opposed to a job context (the batch script, the interactive step),
// unless [Vars.SetStep] or [Vars.SetInStep] has fixed the answer:
// SLURM_STEP_ID (or, when that is unset or empty, the older SLURM_STEPID)
// names a regular step, "0" included.
//
// A step id is regular when it is a base-10 number from 0 to
// [MaxRegularStepID], or any other non-empty text that is not a number.
// Slurm's special steps are job level: negative ids (Slurm 26.05 sets
// SLURM_STEP_ID=-5 in the batch script), ids above MaxRegularStepID (the
// same steps written unsigned: 4294967291 for the batch step, 4294967294
// before Slurm 20.11) and the names batch, extern and interactive.
func (e *Vars) InStep() bool {
	switch e.step {
	case stepJobLevel:
		return false
	case stepInStep:
		return true
	case stepKnown:
		return e.stepID <= MaxRegularStepID
	}
	return isStepID(e.envStepID())
}

// envStepID is the step id the variables give: SLURM_STEP_ID, or
// SLURM_STEPID when that is unset or empty.
func (e *Vars) envStepID() string {
	if id := e.value(varStepID); id != "" {
		return id
	}
	return e.value(varStepIDOld)
}

func isStepID(id string) bool {
	switch id {
	case "", "batch", "extern", "interactive":
		return false
	}
	if n, err := strconv.ParseInt(id, 10, 64); err == nil {
		return n >= 0 && n <= MaxRegularStepID
	}
	return true
}

// deriveStepID is slurm.step.id: the id SetStep fixed, else the step
// variables' when it is a regular step's number; "" in a job context and
// for a step named by text, which is no integer.
func deriveStepID(env *Vars) string {
	switch env.step {
	case stepKnown:
		if env.stepID <= MaxRegularStepID {
			return strconv.FormatUint(uint64(env.stepID), 10)
		}
		return ""
	case stepJobLevel:
		return ""
	}
	id := env.envStepID()
	if n, err := strconv.ParseUint(id, 10, 32); err == nil && n <= MaxRegularStepID {
		return strconv.FormatUint(n, 10)
	}
	return ""
}
