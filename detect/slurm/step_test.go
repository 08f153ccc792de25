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
