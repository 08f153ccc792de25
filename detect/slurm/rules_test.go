package slurm

import (
	"slices"
	"testing"

	"github.com/spank-otel/spank-otel/environ"
	"github.com/spank-otel/spank-otel/internal/keys"
	"github.com/spank-otel/spank-otel/libcarrier"
)

// keyCases has one case per key of the allowlist: a job's environment that
// sets what the key is derived from, and the value derived. A Slurm key
// added to the key table (internal/keys) needs its case here: TestEveryKey
// fails for a key without one.
var keyCases = []struct {
	key   string
	env   environ.Map // besides SLURM_JOB_ID=100
	want  string      // "" for a key that is only ever inherited
	ranks bool        // detected with Task.Ranks: a rank key
}{
	{"nv.dl.job.uuid", environ.Map{"SLURM_CLUSTER_NAME": "c"}, jobUUID("c", "100"), false},
	{"nv.dl.local_rank", environ.Map{"SLURM_LOCALID": "1", "SLURM_STEP_ID": "0"}, "1", true},
	{"nv.dl.rank", environ.Map{"SLURM_PROCID": "5", "SLURM_STEP_ID": "0"}, "5", true},
	{"nv.dl.run.uuid", environ.Map{"TORCHELASTIC_RUN_ID": "r"}, "", false},
	{"nv.dl.world_size", environ.Map{"SLURM_STEP_NUM_TASKS": "8", "SLURM_STEP_ID": "0"}, "8", true},
	{"slurm.array.count", environ.Map{"SLURM_ARRAY_TASK_COUNT": "4"}, "4", false},
	{"slurm.array.job_id", environ.Map{"SLURM_ARRAY_JOB_ID": "99", "SLURM_ARRAY_TASK_ID": "1"}, "99", false},
	{"slurm.array.sluid", environ.Map{"LENS_SLURM_ARRAY_SLUID": "as"}, "as", false},
	{"slurm.array.task_id", environ.Map{"SLURM_ARRAY_TASK_ID": "3"}, "3", false},
	{"slurm.cluster.name", environ.Map{"SLURM_CLUSTER_NAME": "c"}, "c", false},
	{"slurm.head_node.name", environ.Map{"SLURMD_NODENAME": "c1"}, "c1", false},
	{"slurm.job.account", environ.Map{"SLURM_JOB_ACCOUNT": "research"}, "research", false},
	{"slurm.job.id", environ.Map{"SLURM_ARRAY_JOB_ID": "99", "SLURM_ARRAY_TASK_ID": "1"}, "99_1", false},
	{"slurm.job.id.raw", environ.Map{"SLURM_ARRAY_JOB_ID": "99", "SLURM_ARRAY_TASK_ID": "1"}, "100", false},
	{"slurm.job.name", environ.Map{"SLURM_JOB_NAME": "train"}, "train", false},
	{"slurm.job.qos", environ.Map{"SLURM_JOB_QOS": "high"}, "high", false},
	{"slurm.job.reservation", environ.Map{"SLURM_JOB_RESERVATION": "maint"}, "maint", false},
	{"slurm.job.user", environ.Map{"SLURM_JOB_USER": "alice"}, "alice", false},
	{"slurm.nnodes", environ.Map{"SLURM_JOB_NUM_NODES": "2"}, "2", false},
	{"slurm.node.name", environ.Map{"SLURMD_NODENAME": "c2", "SLURM_STEP_ID": "0"}, "c2", false},
	{"slurm.ntasks", environ.Map{"SLURM_NTASKS": "8"}, "8", false},
	{"slurm.partition", environ.Map{"SLURM_JOB_PARTITION": "gpu"}, "gpu", false},
	{"slurm.restart_count", environ.Map{"SLURM_RESTART_COUNT": "2"}, "2", false},
	{"slurm.segment", environ.Map{"SLURM_SEGMENT": "seg1"}, "seg1", false},
	{"slurm.sluid", environ.Map{"SLURM_JOB_SLUID": "sAWNM8RBK7JF00"}, "sAWNM8RBK7JF00", false},
	// Task keys: in a step only.
	{"slurm.step.id", environ.Map{"SLURM_STEP_ID": "3"}, "3", false},
	{"slurm.step.ntasks", environ.Map{"SLURM_STEP_NUM_TASKS": "4", "SLURM_STEP_ID": "0"}, "4", false},
	{"slurm.task.id", environ.Map{"SLURM_PROCID": "3", "SLURM_STEP_ID": "0"}, "3", false},
	{"slurm.task.local_id", environ.Map{"SLURM_LOCALID": "1", "SLURM_STEP_ID": "0"}, "1", false},
	{"slurm.topology.addr", environ.Map{"SLURM_TOPOLOGY_ADDR": "sw0.c1", "SLURM_STEP_ID": "0"}, "sw0.c1", false},
	{"slurm.topology.addr_pattern", environ.Map{"SLURM_TOPOLOGY_ADDR_PATTERN": "switch.node", "SLURM_STEP_ID": "0"}, "switch.node", false},
}

// TestEveryKey checks each key of the allowlist on its own: derived from
// its case's environment, absent without a job, and inherited (an
// inherited value wins over the local one, but for a task's key, which is
// always the task's own).
func TestEveryKey(t *testing.T) {
	var covered []string
	for _, c := range keyCases {
		covered = append(covered, c.key)
		t.Run(c.key, func(t *testing.T) {
			env := with(c.env, "SLURM_JOB_ID", "100")
			got, warns := detectStrings(env, c.ranks)
			if value, ok := got[c.key]; value != c.want || ok != (c.want != "") || warns != nil {
				t.Errorf("from %v: %s = %q, %v (warnings %v), want %q", env, c.key, value, ok, warns, c.want)
			}
			if c.ranks {
				if got, _ := Strings(env); got[c.key] != "" {
					t.Errorf("without ranks asked for: %s = %q", c.key, got[c.key])
				}
			}
			if got, _ := detectStrings(c.env, c.ranks); len(got) != 0 {
				t.Errorf("without a job: %v", got)
			}
			inherited := "7" // a valid value of every key, integer or not
			want := inherited
			if rules[keyIndex(c.key)].level == keys.LevelTask || c.key == "slurm.job.id.raw" {
				// A task's key is the task's own; a raw job id of 7
				// names another job than 100, whose keys are replaced.
				want = c.want
			}
			got, _ = detectStrings(with(env, carrierVar, c.key+"="+inherited), c.ranks)
			if got[c.key] != want {
				t.Errorf("inherited %s=%s: %q, want %q", c.key, inherited, got[c.key], want)
			}
		})
	}
	var keys []string
	for _, r := range rules {
		keys = append(keys, r.key)
	}
	if !slices.Equal(covered, keys) {
		t.Errorf("keyCases cover %q,\nthe allowlist is %q: one case per key, in its order", covered, keys)
	}
}

// TestRules checks the variables the rules are read from: varIndex is
// varNames' own index, varNames start with fixedVarNames and hold no name
// twice. The rules themselves are the key table's rows, which its
// TestTable checks (internal/keys).
func TestRules(t *testing.T) {
	for i, name := range varNames {
		if varIndex(name) != i {
			t.Errorf("varIndex(%q) = %d, want %d", name, varIndex(name), i)
		}
	}
	if !slices.Equal(varNames[:numFixedVars], fixedVarNames[:]) {
		t.Errorf("varNames do not start with fixedVarNames: run go generate ./detect/slurm")
	}
	seen := map[string]bool{}
	for _, name := range varNames {
		if seen[name] {
			t.Errorf("varNames hold %s twice", name)
		}
		seen[name] = true
	}
}

// TestKeyTable ties the cases to the project's key table: the value each
// case derives for an integer key of the table is an integer.
func TestKeyTable(t *testing.T) {
	// A string key may hold digits (slurm.job.id.raw): only an integer
	// key's value is checked.
	for _, c := range keyCases {
		if _, ok := libcarrier.ParseInteger(c.want); c.want != "" && keys.IsInteger(c.key) && !ok {
			t.Errorf("%s = %q, not an integer: the key table's type is Integer", c.key, c.want)
		}
	}
}

// TestKeySet: every allowlist index, past 32 and 64 as the table grows, is
// a member of its own and of no other set.
func TestKeySet(t *testing.T) {
	for i := range NumKeys {
		var s keySet
		s.add(i)
		for j := range NumKeys {
			if s.has(j) != (i == j) {
				t.Fatalf("after add(%d), has(%d) = %v", i, j, s.has(j))
			}
		}
	}
}

// TestLevels: where each level's keys are written, and what an inherited
// value does there.
func TestLevels(t *testing.T) {
	job := environ.Map{"SLURM_JOB_ID": "100", "SLURMD_NODENAME": "c1", "SLURM_TOPOLOGY_ADDR": "c1", "SLURM_JOB_NAME": "train"}
	step := with(job, "SLURM_STEP_ID", "0", "SLURMD_NODENAME", "c2", "SLURM_TOPOLOGY_ADDR", "c2")
	inherited := "slurm.head_node.name=c0,slurm.topology.addr=c0,slurm.job.name=outer"
	tests := []struct {
		name string
		env  environ.Map
		want map[string]string // of the three keys; "" for absent
	}{
		{"job context", job, map[string]string{"slurm.head_node.name": "c1", "slurm.topology.addr": "", "slurm.job.name": "train"}},
		{"job context, inherited", with(job, carrierVar, inherited),
			map[string]string{"slurm.head_node.name": "c0", "slurm.topology.addr": "", "slurm.job.name": "outer"}},
		{"step", step, map[string]string{"slurm.head_node.name": "", "slurm.topology.addr": "c2", "slurm.job.name": "train"}},
		{"step, inherited", with(step, carrierVar, inherited),
			map[string]string{"slurm.head_node.name": "c0", "slurm.topology.addr": "c2", "slurm.job.name": "outer"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _ := Strings(tt.env)
			for key, want := range tt.want {
				if got[key] != want {
					t.Errorf("%s = %q, want %q", key, got[key], want)
				}
			}
		})
	}
}
