package sdkinterop_test

import (
	"maps"
	"testing"

	"github.com/spank-otel/spank-otel/detect/slurm/slurmtest"
	"github.com/spank-otel/spank-otel/libcarrier"
	"github.com/spank-otel/spank-otel/taskenv"
)

// FuzzTaskEnvSDK feeds the plugin's computation hostile task
// environments, as cgo's FuzzTaskEnv feeds the library's export, and
// checks that every value it writes reads the same in the SDK as in our
// parser.
func FuzzTaskEnvSDK(f *testing.F) {
	slurmtest.AddTaskSeeds(f)
	f.Fuzz(func(t *testing.T, inherited, jobID, node, stepID string) {
		env := slurmtest.TaskFuzzEnv(inherited, jobID, node, stepID)
		res := taskenv.Compute(env, taskenv.Options{})
		if !res.Changed || res.Unset {
			return
		}
		ours, _ := libcarrier.Parse(res.Value)
		if sdk := sdkAttributes(t, res.Value); !maps.Equal(ours, sdk) {
			t.Fatalf("written %q: Parse = %q, SDK = %q", res.Value, ours, sdk)
		}
	})
}
