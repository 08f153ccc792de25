package taskenv_test

import (
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/spank-otel/spank-otel/detect/slurm/slurmtest"
	"github.com/spank-otel/spank-otel/libcarrier"
	"github.com/spank-otel/spank-otel/taskenv"
)

// step is the environment of task 0 (of 4) of step 3 of job 77 on node c2.
func step(extra ...string) []string {
	return append([]string{
		"SLURM_JOB_ID=77", "SLURM_CLUSTER_NAME=spank", "SLURM_STEP_ID=3",
		"SLURM_NNODES=2", "SLURM_NTASKS=4", "SLURMD_NODENAME=c2",
		"SLURM_TOPOLOGY_ADDR=c2", "SLURM_TOPOLOGY_ADDR_PATTERN=node",
		"SLURM_JOB_USER=alice", "SLURM_PROCID=0", "SLURM_LOCALID=0", "SLURM_STEP_NUM_TASKS=4", "HOME=/home/alice",
	}, extra...)
}

// batch is the environment of the batch script of the same job.
func batch(extra ...string) []string {
	var env []string
	for _, kv := range step() {
		if !strings.HasPrefix(kv, "SLURM_STEP_ID=") {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

func decode(t *testing.T, value string) map[string]string {
	t.Helper()
	m, w := libcarrier.Parse(value)
	assert.Equal(t, len(w), 0, "warnings %v", w)
	return m
}

const uuid77 = "nv.dl.job.uuid" // present in every active result

func TestCompute(t *testing.T) {
	tests := []struct {
		name    string
		env     []string
		opts    taskenv.Options
		changed bool
		want    map[string]string // attributes that must be present with this value
		absent  []string          // attributes that must not be present
		reason  string            // substring of Reason
	}{
		{
			name: "no Slurm and no carrier leaves the variable unset",
			env:  []string{"HOME=/root"},
		},
		{
			name: "no Slurm keeps a user carrier exactly",
			env:  []string{"OTEL_RESOURCE_ATTRIBUTES=a=1 , b=2"},
		},
		{
			name:    "step task gets identity and topology but no head node",
			env:     step(),
			changed: true,
			want: map[string]string{"slurm.job.id": "77", "slurm.ntasks": "4", "slurm.topology.addr": "c2",
				"slurm.topology.addr_pattern": "node", "slurm.job.user": "alice"},
			absent: []string{"slurm.head_node.name"},
		},
		{
			name:    "batch step gets the head node and no topology",
			env:     batch(),
			changed: true,
			want:    map[string]string{"slurm.head_node.name": "c2", "slurm.job.id": "77"},
			absent:  []string{"slurm.topology.addr", "slurm.topology.addr_pattern"},
		},
		{
			name: "a job submitted from another job's task: its own identity, the user's keys kept",
			env: batch("OTEL_RESOURCE_ATTRIBUTES=slurm.job.id.raw=5,slurm.job.id=5,slurm.head_node.name=c9," +
				"slurm.topology.addr=c9,nv.dl.job.uuid=U,nv.dl.run.uuid=R,service.name=train"),
			changed: true,
			want:    map[string]string{"slurm.job.id": "77", "slurm.job.id.raw": "77", "slurm.head_node.name": "c2", "service.name": "train"},
			absent:  []string{"nv.dl.run.uuid", "slurm.topology.addr"},
		},
		{
			name:    "a step of another job (srun --jobid): its own identity",
			env:     step("OTEL_RESOURCE_ATTRIBUTES=slurm.job.id.raw=5,slurm.job.name=outer,slurm.head_node.name=c9"),
			changed: true,
			want:    map[string]string{"slurm.job.id": "77", "slurm.job.id.raw": "77", "slurm.topology.addr": "c2"},
			absent:  []string{"slurm.job.name", "slurm.head_node.name"},
		},
		{
			name:    "batch step drops an inherited topology",
			env:     batch("OTEL_RESOURCE_ATTRIBUTES=slurm.topology.addr=old"),
			changed: true,
			absent:  []string{"slurm.topology.addr"},
		},
		{
			name:    "user keys survive, percent-encoded comma included",
			env:     step("OTEL_RESOURCE_ATTRIBUTES=user.team=ml%2Cinfra,service.name=train"),
			changed: true,
			want:    map[string]string{"user.team": "ml,infra", "service.name": "train", "slurm.job.id": "77"},
		},
		{
			name:    "inherited Slurm values win over local ones",
			env:     step("OTEL_RESOURCE_ATTRIBUTES=slurm.ntasks=16,slurm.head_node.name=c1"),
			changed: true,
			want:    map[string]string{"slurm.ntasks": "16", "slurm.head_node.name": "c1"},
		},
		{
			name:    "an invalid inherited integer is replaced by the local value",
			env:     step("OTEL_RESOURCE_ATTRIBUTES=slurm.ntasks=lots"),
			changed: true,
			want:    map[string]string{"slurm.ntasks": "4"},
		},
		{
			name:    "retired keys are user keys now and kept",
			env:     step("OTEL_RESOURCE_ATTRIBUTES=slurm.nodelist=c[1-2]"),
			changed: true,
			want:    map[string]string{"slurm.nodelist": "c[1-2]"},
		},
		{
			name:    "excluded keys are not written",
			env:     step(),
			opts:    taskenv.Options{Exclude: []string{"slurm.job.user", "slurm.topology.addr"}},
			changed: true,
			want:    map[string]string{"slurm.job.id": "77"},
			absent:  []string{"slurm.job.user", "slurm.topology.addr"},
		},
		{
			name:    "an excluded key the user set is the user's",
			env:     step("OTEL_RESOURCE_ATTRIBUTES=slurm.job.user=someone"),
			opts:    taskenv.Options{Exclude: []string{"slurm.job.user"}},
			changed: true,
			want:    map[string]string{"slurm.job.user": "someone"},
		},
		{
			name:    "forcing the batch stage in a step",
			env:     step(),
			opts:    taskenv.Options{Stage: taskenv.StageBatch},
			changed: true,
			want:    map[string]string{"slurm.head_node.name": "c2"},
			absent:  []string{"slurm.topology.addr"},
		},
		{
			name:    "forcing the task stage in the batch script",
			env:     batch(),
			opts:    taskenv.Options{Stage: taskenv.StageTask},
			changed: true,
			want:    map[string]string{"slurm.topology.addr": "c2"},
		},
		{
			name:    "a malformed carrier is repaired",
			env:     step("OTEL_RESOURCE_ATTRIBUTES=a=1,garbage"),
			changed: true,
			want:    map[string]string{"a": "1", "slurm.job.id": "77"},
		},
		{
			name:    "a percent at the end is kept literally",
			env:     step("OTEL_RESOURCE_ATTRIBUTES=user.pct=50%"),
			changed: true,
			want:    map[string]string{"user.pct": "50%"},
		},
		{
			name:   "a value over the kernel's per-variable limit is not written",
			env:    step("OTEL_RESOURCE_ATTRIBUTES=big=" + strings.Repeat("x", taskenv.MaxArgStrlen-100)),
			reason: "limit for one variable",
		},
		{
			name:   "an environment over the execve budget is not grown",
			env:    step("FILL=" + strings.Repeat("x", 4000)),
			opts:   taskenv.Options{MaxEnvBytes: 4400},
			reason: "execve budget",
		},
		{
			name:    "an environment within the budget is written",
			env:     step("FILL=" + strings.Repeat("x", 4000)),
			opts:    taskenv.Options{MaxEnvBytes: 8000},
			changed: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := taskenv.Compute(tc.env, tc.opts)
			assert.Equal(t, res.Changed, tc.changed, "result %+v", res)
			if tc.reason != "" {
				assert.Assert(t, strings.Contains(res.Reason, tc.reason), "reason %q", res.Reason)
			} else {
				assert.Equal(t, res.Reason, "")
			}
			if !res.Changed {
				assert.Equal(t, res.Value, "")
				return
			}
			got := decode(t, res.Value)
			assert.Assert(t, got[uuid77] != "")
			for k, v := range tc.want {
				assert.Equal(t, got[k], v, "key %s in %q", k, res.Value)
			}
			for _, k := range tc.absent {
				_, ok := got[k]
				assert.Assert(t, !ok, "key %s must be absent from %q", k, res.Value)
			}
		})
	}
}

// TestComputeIsAFixedPoint: a task whose carrier already holds what the
// plugin would write is left byte for byte, so nested launches (srun inside
// a batch step) do not churn.
func TestComputeIsAFixedPoint(t *testing.T) {
	for _, env := range [][]string{step(), batch(), step("OTEL_RESOURCE_ATTRIBUTES=u=1%2C2")} {
		first := taskenv.Compute(env, taskenv.Options{})
		assert.Assert(t, first.Changed)
		// The first occurrence wins, so put the new value first.
		second := taskenv.Compute(append([]string{"OTEL_RESOURCE_ATTRIBUTES=" + first.Value}, env...), taskenv.Options{})
		assert.Assert(t, !second.Changed, "second pass changed %q to %q", first.Value, second.Value)
	}
}

// TestComputeMatchesSDKCanonicalForm checks that the output is the
// canonical format: formatting its parse gives it back.
func TestComputeOutputIsCanonical(t *testing.T) {
	res := taskenv.Compute(slurmtest.TaskEnvWithCarrier(t), taskenv.Options{})
	assert.Assert(t, res.Changed)
	again, w := libcarrier.FormatStrings(decode(t, res.Value))
	assert.Equal(t, len(w), 0)
	assert.Equal(t, again, res.Value)
}

// TestComputeAllocations checks the hot-path promise on a realistic task:
// no map is built and nothing allocates per entry. The one allocation is
// the scratch, which holds the entry lists, the decoded values and the
// result. In a new process each allocation of a new size costs a few
// microseconds.
func TestComputeAllocations(t *testing.T) {
	env := slurmtest.TaskEnvWithCarrier(t)
	got := testing.AllocsPerRun(100, func() { taskenv.Compute(env, taskenv.Options{MaxEnvBytes: 2 << 20}) })
	if got > 1 {
		t.Errorf("Compute: %v allocations, want 1", got)
	}
}

func BenchmarkCompute(b *testing.B) {
	env := slurmtest.TaskEnvWithCarrier(b)
	b.ReportAllocs()
	for b.Loop() {
		res := taskenv.Compute(env, taskenv.Options{MaxEnvBytes: 2 << 20})
		if !res.Changed {
			b.Fatal("nothing written")
		}
	}
}

// TestRunnerReusesNothingButMemory: a Runner answers task after task in
// the same memory, and each answer is what a fresh Run gives, whatever the
// tasks before it were: a malformed carrier, a large one, none, another
// job's, one outside Slurm.
func TestRunnerReusesNothingButMemory(t *testing.T) {
	big := make([]string, 40)
	for i := range big {
		big[i] = "user.k" + strings.Repeat("x", i) + "=v"
	}
	requests := []struct {
		name string
		env  []string
	}{
		{"a step task", step()},
		{"a malformed inherited carrier", step("OTEL_RESOURCE_ATTRIBUTES=user.ok=1,garbage,%zz=2")},
		{"a carrier of more entries than the scratch makes room for", step("OTEL_RESOURCE_ATTRIBUTES=" + strings.Join(big, ","))},
		{"the batch script", batch()},
		{"outside Slurm", []string{"HOME=/root", "OTEL_RESOURCE_ATTRIBUTES=a=1"}},
		{"another job", append(step(), "SLURM_JOB_ID=78", "SLURM_ARRAY_JOB_ID=78", "SLURM_ARRAY_TASK_ID=3")},
		{"a step task again", step()},
	}
	var r taskenv.Runner
	for _, rq := range requests {
		want := *taskenv.Run(&taskenv.Request{Env: rq.env})
		got := r.Run(&taskenv.Request{Env: rq.env})
		assert.DeepEqual(t, *got, want)
		assert.Equal(t, got.Value, want.Value, rq.name)
	}
}
