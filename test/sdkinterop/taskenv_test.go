package sdkinterop_test

import (
	"maps"
	"strings"
	"testing"

	"github.com/spank-otel/spank-otel/internal/taskenv"
	"github.com/spank-otel/spank-otel/libcarrier"
)

// FuzzTaskEnvSDK feeds the plugin's computation hostile task
// environments, as cgo's FuzzTaskEnv feeds the library's export, and
// checks that every value it writes reads the same in the SDK as in our
// parser.
func FuzzTaskEnvSDK(f *testing.F) {
	f.Add("user.team=ml%2Cinfra", "77", "c1", "0")
	f.Add("a=1,,b = 2 ,c=%", "", "", "")
	f.Add("slurm.ntasks=x,slurm.job.id=9", "77_3", "c\xff", "")
	f.Add("k=\xff", "1", "n", "1")
	f.Add("=,=,,", "-1", "", "batch")
	f.Add("a=%zz%2", "007", "node with spaces", "0")
	f.Add("x=a+b%20c,y=%E6%97%A5", "1", "c\t1", "2")
	f.Add(strings.Repeat("k=v,", 1000), "1", "c1", "0")
	f.Fuzz(func(t *testing.T, inherited, jobID, node, stepID string) {
		env := []string{
			"OTEL_RESOURCE_ATTRIBUTES=" + inherited, "SLURM_JOB_ID=" + jobID, "SLURMD_NODENAME=" + node,
			"SLURM_STEP_ID=" + stepID, "SLURM_TOPOLOGY_ADDR=" + node, "SLURM_NTASKS=" + jobID,
			"SLURM_CLUSTER_NAME=" + node,
		}
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
