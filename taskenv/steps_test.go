package taskenv_test

import (
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/spank-otel/spank-otel/libcarrier"
	"github.com/spank-otel/spank-otel/taskenv"
)

// TestBatchScriptOf2605 covers Slurm 26.05, which sets SLURM_STEP_ID=-5 in
// the batch script: it must be treated as the batch step, or the head node
// is lost and the batch node's topology leaks into every later step.
func TestBatchScriptOf2605(t *testing.T) {
	res := taskenv.Compute(batch("SLURM_STEP_ID=-5", "SLURM_STEPID=-5"), taskenv.Options{})
	assert.Assert(t, res.Changed)
	got := decode(t, res.Value)
	assert.Equal(t, got["slurm.head_node.name"], "c2")
	_, hasTopology := got["slurm.topology.addr"]
	assert.Assert(t, !hasTopology, "topology written in the batch script: %q", res.Value)
}

// TestTaskLevelKeys: a step's task writes its own task keys over any
// inherited ones; a job context writes none and removes inherited ones;
// the rank keys follow Ranks, and are the user's own without it.
func TestTaskLevelKeys(t *testing.T) {
	task := []string{"SLURM_PROCID=5", "SLURM_LOCALID=1", "SLURM_STEP_NUM_TASKS=8"}
	outer := libcarrier.EnvVar + "=slurm.job.id.raw=77,slurm.task.id=0,slurm.step.id=0,slurm.node.name=c9,slurm.task.local_id=0," +
		"slurm.step.ntasks=1,nv.dl.rank=0,u=1"
	step4, batchStep := uint32(4), uint32(0xfffffffb)
	absent := "-"
	tests := []struct {
		name string
		env  []string
		opts taskenv.Options
		want map[string]string // absent: not in the result
	}{
		{"a step's task", first(task, step()), taskenv.Options{},
			map[string]string{"slurm.step.id": "3", "slurm.task.id": "5", "slurm.task.local_id": "1", "slurm.step.ntasks": "8",
				"slurm.node.name": "c2", "nv.dl.rank": absent}},
		{"the step id Slurm gives wins", first(task, step()), taskenv.Options{Step: &step4},
			map[string]string{"slurm.step.id": "4", "slurm.task.id": "5"}},
		{"an outer task's keys are replaced", first(task, step(outer)), taskenv.Options{},
			map[string]string{"slurm.step.id": "3", "slurm.task.id": "5", "slurm.node.name": "c2", "slurm.step.ntasks": "8",
				"nv.dl.rank": "0", "u": "1"}},
		{"the batch script writes none", first(task, batch()), taskenv.Options{},
			map[string]string{"slurm.step.id": absent, "slurm.task.id": absent, "slurm.node.name": absent, "slurm.head_node.name": "c2"}},
		{"the batch step by Slurm's id, whatever the variables", first(task, step()), taskenv.Options{Step: &batchStep},
			map[string]string{"slurm.step.id": absent, "slurm.task.id": absent, "slurm.head_node.name": "c2"}},
		{"a job context removes inherited task keys, keeps the user's rank", first(task, batch(outer)), taskenv.Options{},
			map[string]string{"slurm.step.id": absent, "slurm.task.id": absent, "slurm.node.name": absent, "nv.dl.rank": "0", "u": "1"}},
		{"ranks asked for", first(task, step()), taskenv.Options{Ranks: true},
			map[string]string{"nv.dl.rank": "5", "nv.dl.local_rank": "1", "nv.dl.world_size": "8", "slurm.task.id": "5"}},
		{"ranks asked for replace the inherited rank", first(task, step(outer)), taskenv.Options{Ranks: true},
			map[string]string{"nv.dl.rank": "5"}},
		{"ranks asked for in the batch script: none, and the inherited one goes", first(task, batch(outer)), taskenv.Options{Ranks: true},
			map[string]string{"nv.dl.rank": absent, "nv.dl.world_size": absent}},
		{"an excluded rank key stays the user's", first(task, step(outer)), taskenv.Options{Ranks: true, Exclude: []string{"nv.dl.rank"}},
			map[string]string{"nv.dl.rank": "0", "nv.dl.world_size": "8"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := taskenv.Compute(tc.env, tc.opts)
			assert.Assert(t, res.Changed, "%+v", res)
			got := decode(t, res.Value)
			for key, want := range tc.want {
				value, ok := got[key]
				if want == absent {
					assert.Assert(t, !ok, "%s = %q in %s", key, value, res.Value)
					continue
				}
				assert.Equal(t, value, want, "%s in %s", key, res.Value)
			}
		})
	}
}

// TestExecBudgetFromInputs: the budget the plugin's inputs give is the one
// ExecBudget computes, and MaxEnvBytes replaces it.
func TestExecBudgetFromInputs(t *testing.T) {
	env := step("FILL=" + strings.Repeat("x", 3000))
	free := taskenv.Compute(env, taskenv.Options{})
	// A stack limit whose budget cannot hold the environment.
	tiny := taskenv.Exec{StackLimit: 4 * taskenv.ExecArgFloor, ArgCount: 1, ArgBytes: taskenv.ExecArgFloor - taskenv.ExecSlack - 2000}
	assert.Assert(t, taskenv.ExecBudget(tiny) < envCost(env), "budget %d", taskenv.ExecBudget(tiny))
	res := taskenv.Compute(env, taskenv.Options{Exec: tiny})
	assert.Assert(t, !res.Changed && strings.Contains(res.Reason, "execve budget"), "%+v", res)
	res = taskenv.Compute(env, taskenv.Options{Exec: tiny, MaxEnvBytes: 1 << 20})
	assert.Equal(t, res.Value, free.Value)
	res = taskenv.Compute(env, taskenv.Options{Exec: taskenv.ExecOf(^uint64(0), []string{"python", "train.py"})})
	assert.Equal(t, res.Value, free.Value)
}

// first is env with vars ahead of it: the first occurrence of a name wins.
func first(vars, env []string) []string {
	return append(append([]string(nil), vars...), env...)
}
