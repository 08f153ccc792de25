package taskenv_test

import (
	"slices"
	"testing"

	"github.com/spank-otel/spank-otel/libcarrier"
	"github.com/spank-otel/spank-otel/taskenv"
)

// TestComputeRepairs: a malformed inherited carrier costs only its bad
// entries (SPEC §5), one Dropped warning each; the user's other attributes
// and the identity are written.
func TestComputeRepairs(t *testing.T) {
	tests := []struct {
		name    string
		env     []string
		want    map[string]string // user attributes that must be kept
		dropped []string          // Dropped, as text
		absent  []string
	}{
		{
			name:    "entries without '=', with an empty key, blank",
			env:     step("OTEL_RESOURCE_ATTRIBUTES=,,noequals,=novalue, ,k=v,,"),
			want:    map[string]string{"k": "v"},
			dropped: []string{`entry "noequals" has no '=': dropped`, `entry "=novalue" has an empty key: dropped`},
		},
		{
			name: "keys no SDK decodes the same way",
			env:  step("OTEL_RESOURCE_ATTRIBUTES=key%2Cpart=v,good=1,semi;key=x"),
			want: map[string]string{"good": "1"},
			dropped: []string{`key "key%2Cpart": key contains '%': dropped`,
				`key "semi;key": key contains ';': dropped`},
		},
		{
			name:    "a user value that is not UTF-8",
			env:     step("OTEL_RESOURCE_ATTRIBUTES=a=%FF,b=2"),
			want:    map[string]string{"b": "2"},
			dropped: []string{`key "a": value is not valid UTF-8: dropped`},
			absent:  []string{"a"},
		},
		{
			name:    "a job name that is not UTF-8 costs only slurm.job.name",
			env:     step("SLURM_JOB_NAME=run-\xff", "OTEL_RESOURCE_ATTRIBUTES=u=1"),
			want:    map[string]string{"u": "1"},
			dropped: []string{`key "slurm.job.name": value is not valid UTF-8: dropped`},
			absent:  []string{"slurm.job.name"},
		},
		{
			name:    "an inherited Slurm value that is not UTF-8 gives way to the local one",
			env:     step("SLURM_JOB_NAME=train", "OTEL_RESOURCE_ATTRIBUTES=slurm.job.name=%FF"),
			want:    map[string]string{"slurm.job.name": "train"},
			dropped: []string{`key "slurm.job.name": value is not valid UTF-8: dropped`},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := taskenv.Compute(tc.env, taskenv.Options{})
			if !res.Changed || res.Reason != "" {
				t.Fatalf("not written: %+v", res)
			}
			got := decode(t, res.Value)
			if got["slurm.job.id"] != "77" {
				t.Errorf("identity missing from %q", res.Value)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("%s = %q, want %q in %q", k, got[k], v, res.Value)
				}
			}
			for _, k := range tc.absent {
				if _, ok := got[k]; ok {
					t.Errorf("%s must be absent from %q", k, res.Value)
				}
			}
			var dropped []string
			for _, w := range res.Dropped {
				dropped = append(dropped, w.String())
			}
			if !slices.Equal(dropped, tc.dropped) {
				t.Errorf("Dropped = %q, want %q", dropped, tc.dropped)
			}
			// The repaired carrier is stable: the next step changes nothing
			// but what the stage changes.
			again := taskenv.Compute(append([]string{libcarrier.EnvVar + "=" + res.Value}, tc.env...), taskenv.Options{})
			if again.Changed {
				t.Errorf("a second pass changed %q to %q", res.Value, again.Value)
			}
		})
	}
}

// TestComputeRepairsACanonicalIdentity: a carrier that already holds the
// identity but also a bad entry is still rewritten, without the entry.
func TestComputeRepairsACanonicalIdentity(t *testing.T) {
	first := taskenv.Compute(step("OTEL_RESOURCE_ATTRIBUTES=u=1"), taskenv.Options{})
	res := taskenv.Compute(step("OTEL_RESOURCE_ATTRIBUTES="+first.Value+",junk"), taskenv.Options{})
	if !res.Changed || res.Value != first.Value || len(res.Dropped) != 1 {
		t.Errorf("got %+v, want %q with one entry dropped", res, first.Value)
	}
}

// TestComputeLeavesMalformedAloneOutsideSlurm: with no identity to write,
// the user's carrier is nobody else's business.
func TestComputeLeavesMalformedAloneOutsideSlurm(t *testing.T) {
	res := taskenv.Compute([]string{"OTEL_RESOURCE_ATTRIBUTES=,,noequals,a=%FF"}, taskenv.Options{})
	if res.Changed || res.Reason != "" || len(res.Dropped) != 0 {
		t.Errorf("got %+v, want the variable left alone", res)
	}
}

// TestComputeUnsets: when every inherited entry is one the plugin
// removes, the variable is unset, not set empty.
func TestComputeUnsets(t *testing.T) {
	for _, env := range [][]string{
		// The batch script of an enclosing job passed its topology on.
		{"OTEL_RESOURCE_ATTRIBUTES=slurm.topology.addr=c1"},
		{"SLURM_STEP_ID=batch", "OTEL_RESOURCE_ATTRIBUTES=slurm.topology.addr=c1,slurm.topology.addr_pattern=node,,junk"},
	} {
		res := taskenv.Compute(env, taskenv.Options{})
		if !res.Changed || !res.Unset || res.Value != "" {
			t.Errorf("Compute(%q) = %+v, want Changed and Unset", env, res)
		}
	}
	// Not when something is left.
	res := taskenv.Compute([]string{"OTEL_RESOURCE_ATTRIBUTES=slurm.topology.addr=c1,u=1"}, taskenv.Options{})
	if res.Unset || res.Value != "u=1" {
		t.Errorf("got %+v, want u=1", res)
	}
}

// TestStageDrivesBothKeys: the head node and the topology follow one
// decision, for every stage and environment.
func TestStageDrivesBothKeys(t *testing.T) {
	envs := map[string][]string{
		"batch script":          batch(),
		"batch script (26.05)":  batch("SLURM_STEP_ID=-5", "SLURM_STEPID=-5"),
		"batch step by name":    batch("SLURM_STEP_ID=batch"),
		"step 3":                step(),
		"step 0 (SLURM_STEPID)": append(batch(), "SLURM_STEPID=0"),
	}
	stepEnvs := map[string]bool{"step 3": true, "step 0 (SLURM_STEPID)": true}
	for name, env := range envs {
		for _, stage := range []taskenv.Stage{taskenv.StageAuto, taskenv.StageBatch, taskenv.StageTask} {
			inStep := stage == taskenv.StageTask || stage == taskenv.StageAuto && stepEnvs[name]
			res := taskenv.Compute(env, taskenv.Options{Stage: stage})
			got := decode(t, res.Value)
			_, head := got["slurm.head_node.name"]
			_, topo := got["slurm.topology.addr"]
			_, pattern := got["slurm.topology.addr_pattern"]
			if head == inStep || topo != inStep || pattern != inStep {
				t.Errorf("%s, stage %d: head node %v, topology %v/%v; want head node %v, topology %v",
					name, stage, head, topo, pattern, !inStep, inStep)
			}
		}
	}
}
