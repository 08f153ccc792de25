package slurm

import (
	"testing"

	"github.com/spank-otel/spank-otel/environ"
)

func TestInStep(t *testing.T) {
	tests := []struct {
		name string
		env  environ.Map
		want bool
	}{
		{"no step id: the batch script of 22.05 and 24.11", environ.Map{}, false},
		{"empty step id", environ.Map{"SLURM_STEP_ID": ""}, false},
		{"step 0 is a step", environ.Map{"SLURM_STEP_ID": "0"}, true},
		{"step 7", environ.Map{"SLURM_STEP_ID": "7"}, true},
		{"the older name alone", environ.Map{"SLURM_STEPID": "0"}, true},
		{"the batch script of 26.05", environ.Map{"SLURM_STEP_ID": "-5", "SLURM_STEPID": "-5"}, false},
		{"the batch step written unsigned", environ.Map{"SLURM_STEP_ID": "4294967291"}, false},
		{"the extern step", environ.Map{"SLURM_STEP_ID": "-4"}, false},
		{"the extern step by name", environ.Map{"SLURM_STEP_ID": "extern"}, false},
		{"the batch step by name", environ.Map{"SLURM_STEP_ID": "batch"}, false},
		{"the batch step of releases before 20.11, unsigned", environ.Map{"SLURM_STEP_ID": "4294967294"}, false},
		{"one above the largest regular step", environ.Map{"SLURM_STEP_ID": "4294967281"}, false},
		{"the interactive step by name", environ.Map{"SLURM_STEP_ID": "interactive"}, false},
		{"the largest regular step", environ.Map{"SLURM_STEP_ID": "4294967280"}, true},
		{"an odd non-numeric id still counts as a step", environ.Map{"SLURM_STEP_ID": "x"}, true},
		{"SLURM_STEP_ID wins over SLURM_STEPID", environ.Map{"SLURM_STEP_ID": "-5", "SLURM_STEPID": "3"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := readList(list(tc.env)).InStep(); got != tc.want {
				t.Errorf("InStep(%v) = %v, want %v", tc.env, got, tc.want)
			}
		})
	}
}

// TestHeadNodeInTheBatchScriptOf2605: Slurm 26.05 marks the batch script
// with SLURM_STEP_ID=-5; it is still where the head node comes from.
func TestHeadNodeInTheBatchScriptOf2605(t *testing.T) {
	env := environ.Map{"SLURM_JOB_ID": "9", "SLURM_STEP_ID": "-5", "SLURM_STEPID": "-5", "SLURMD_NODENAME": "c1"}
	got, _ := Strings(env)
	if got["slurm.head_node.name"] != "c1" {
		t.Errorf("slurm.head_node.name = %q, want c1 (result %v)", got["slurm.head_node.name"], got)
	}
}

// TestStepID: slurm.step.id and the level it decides, from the id the
// plugin is given (SetStep), from the variables, or fixed by SetInStep.
func TestStepID(t *testing.T) {
	none := ^uint64(0) // no SetStep
	tests := []struct {
		name    string
		env     environ.Map
		setStep uint64 // none, or the id given to SetStep
		inStep  string // "", "job", "step": SetInStep
		want    string // slurm.step.id, "" for none
		task    bool   // the task's other keys written
	}{
		{"from SLURM_STEP_ID", environ.Map{"SLURM_STEP_ID": "4"}, none, "", "4", true},
		{"from SLURM_STEPID", environ.Map{"SLURM_STEPID": "4"}, none, "", "4", true},
		{"canonical", environ.Map{"SLURM_STEP_ID": "04"}, none, "", "4", true},
		{"a step named by text has no id", environ.Map{"SLURM_STEP_ID": "x"}, none, "", "", true},
		{"the batch script of 26.05", environ.Map{"SLURM_STEP_ID": "-5"}, none, "", "", false},
		{"Slurm's id wins over the variable", environ.Map{"SLURM_STEP_ID": "4"}, 7, "", "7", true},
		{"Slurm's id without variables", environ.Map{}, 0, "", "0", true},
		{"Slurm's batch step: a job context whatever the variable says", environ.Map{"SLURM_STEP_ID": "4"}, 0xfffffffb, "", "", false},
		{"Slurm's interactive step", environ.Map{}, 0xfffffffa, "", "", false},
		{"the largest regular step", environ.Map{}, MaxRegularStepID, "", "4294967280", true},
		{"--stage task without an id", environ.Map{}, none, "step", "", true},
		{"--stage task keeps the variable's id", environ.Map{"SLURM_STEP_ID": "2"}, none, "step", "2", true},
		{"--stage sbatch", environ.Map{"SLURM_STEP_ID": "2"}, none, "job", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := with(tc.env, "SLURM_JOB_ID", "9", "SLURM_PROCID", "1")
			task := Task{Vars: *readList(list(env))}
			if tc.setStep != none {
				task.Vars.SetStep(uint32(tc.setStep))
			}
			switch tc.inStep {
			case "job":
				task.Vars.SetInStep(false)
			case "step":
				task.Vars.SetInStep(true)
			}
			kvs, _ := task.AppendStrings(nil, nil)
			got := map[string]string{}
			for _, kv := range kvs {
				got[kv.Key] = kv.Value
			}
			if got["slurm.step.id"] != tc.want || (got["slurm.task.id"] == "1") != tc.task {
				t.Errorf("slurm.step.id %q, slurm.task.id %q; want %q, task keys %v", got["slurm.step.id"], got["slurm.task.id"], tc.want, tc.task)
			}
		})
	}
}
