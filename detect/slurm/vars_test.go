package slurm

import (
	"maps"
	"slices"
	"testing"

	"github.com/spank-otel/spank-otel/libcarrier"
)

func TestVarsList(t *testing.T) {
	tests := []struct {
		name  string
		kv    []string
		key   string
		value string
		ok    bool
	}{
		{"nil", nil, "SLURM_JOB_ID", "", false},
		{"set", []string{"HOME=/", "SLURM_JOB_ID=7"}, "SLURM_JOB_ID", "7", true},
		{"empty value is set", []string{"SLURM_ARRAY_TASK_ID="}, "SLURM_ARRAY_TASK_ID", "", true},
		{"first occurrence wins", []string{"SLURM_JOB_ID=1", "SLURM_JOB_ID=2"}, "SLURM_JOB_ID", "1", true},
		{"first occurrence wins even when empty", []string{"SLURM_JOB_ID=", "SLURM_JOB_ID=2"}, "SLURM_JOB_ID", "", true},
		{"entries without '=' are ignored", []string{"SLURM_JOB_ID", "SLURM_JOB_ID=3"}, "SLURM_JOB_ID", "3", true},
		{"value keeps later '='", []string{"OTEL_RESOURCE_ATTRIBUTES=a=1,b=2"}, libcarrier.EnvVar, "a=1,b=2", true},
		{"names are case-sensitive", []string{"slurm_job_id=7"}, "SLURM_JOB_ID", "", false},
		{"a name prefix is another name", []string{"SLURM_JOB_IDX=7", "SLURM_JOB=8"}, "SLURM_JOB_ID", "", false},
		{"variables outside the set are unset", []string{"HOME=/root", "SLURM_JOBID=7"}, "HOME", "", false},
		{"SLURM_JOBID is not SLURM_JOB_ID", []string{"SLURM_JOBID=7"}, "SLURM_JOB_ID", "", false},
		{"torchelastic", []string{"TORCHELASTIC_RUN_ID=r"}, "TORCHELASTIC_RUN_ID", "r", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := VarsList(tt.kv)
			if v, ok := env.Lookup(tt.key); v != tt.value || ok != tt.ok {
				t.Errorf("Lookup(%q) = %q, %v; want %q, %v", tt.key, v, ok, tt.value, tt.ok)
			}
		})
	}
	var zero Vars
	if v, ok := zero.Lookup("SLURM_JOB_ID"); v != "" || ok {
		t.Errorf("zero Vars: Lookup = %q, %v", v, ok)
	}
}

func TestVarsListAllocations(t *testing.T) {
	kv := taskEnvWithCarrier(t)
	if got := testing.AllocsPerRun(100, func() { _ = VarsList(kv) }); got != 0 {
		t.Errorf("VarsList: %v allocations, want 0", got)
	}
}

func TestVarsOf(t *testing.T) {
	env := EnvMap{"SLURM_JOB_ID": "7", "SLURM_ARRAY_TASK_ID": "", "HOME": "/root"}
	se := varsOf(env)
	for _, name := range varNames {
		want, wantOK := env.Lookup(name)
		if v, ok := se.Lookup(name); v != want || ok != wantOK {
			t.Errorf("Lookup(%s) = %q, %v; want %q, %v", name, v, ok, want, wantOK)
		}
	}
	if v, ok := se.Lookup("HOME"); v != "" || ok {
		t.Errorf("Lookup(HOME) = %q, %v; a Vars does not hold it", v, ok)
	}
	if again := varsOf(&se); again != se {
		t.Errorf("varsOf(Vars) = %+v, want %+v", again, se)
	}
	if got := varsOf(EnvMap{}); got != (Vars{}) {
		t.Errorf("varsOf(empty) = %+v", got)
	}
}

// TestVarNames: every variable a Vars holds has its own slot: set alone,
// it is the only one set.
func TestVarNames(t *testing.T) {
	for _, name := range varNames {
		env := VarsList([]string{name + "=v"})
		for _, other := range varNames {
			v, ok := env.Lookup(other)
			if want := other == name; ok != want || (ok && v != "v") {
				t.Errorf("with only %s set, Lookup(%s) = %q, %v", name, other, v, ok)
			}
		}
	}
}

func kvMap(kvs []libcarrier.KeyValue) map[string]string {
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		m[kv.Key] = kv.Value
	}
	return m
}

func TestAppendStrings(t *testing.T) {
	env := with(fullEnv, "SLURM_NTASKS", "x")
	inherited := []libcarrier.KeyValue{
		{Key: "slurm.job.name", Value: "first"}, {Key: "service.name", Value: "s"}, {Key: "slurm.job.name", Value: "last"},
		{Key: "slurm.nnodes", Value: "2"}, {Key: "slurm.nnodes", Value: "two"}, // the last entry counts: discarded
		{Key: "slurm.job.user", Value: ""},
	}
	dst := []libcarrier.KeyValue{{Key: "kept", Value: "as is"}}
	task := Task{Vars: varsOf(env)}
	got, warns := task.AppendStrings(dst, inherited)
	if got[0] != dst[0] {
		t.Errorf("dst changed: %q", got[0])
	}
	// Strings reads the same entries from the carrier.
	text, _ := libcarrier.FormatList(inherited)
	wantS, wantW := Strings(with(env, carrierVar, text))
	if !maps.Equal(kvMap(got[1:]), wantS) || !slices.Equal(warns, wantW) {
		t.Errorf("AppendStrings = %q %v, want %v %v", got[1:], warns, sorted(wantS), wantW)
	}
	if want := []string{"slurm.nnodes", "slurm.ntasks"}; !slices.Equal(warningKeys(warns), want) {
		t.Errorf("warning keys %q, want %q", warningKeys(warns), want)
	}
	for i := 2; i < len(got); i++ {
		if got[i-1].Key >= got[i].Key {
			t.Errorf("not sorted by key: %q", got[1:])
		}
	}
	if got[1:][slices.IndexFunc(got[1:], func(kv libcarrier.KeyValue) bool { return kv.Key == "slurm.job.name" })].Value != "last" {
		t.Errorf("the last inherited slurm.job.name must win: %q", got)
	}
	if got, warns := new(Task).AppendStrings(nil, nil); len(got) != 0 || warns != nil {
		t.Errorf("inactive: %q %v", got, warns)
	}
}

// TestTask checks that a Task, reused, gives what a new one gives:
// ReadList and AppendStrings start from nothing.
func TestTask(t *testing.T) {
	kv := taskEnvWithCarrier(t)
	env := VarsList(kv)
	text, _ := env.Lookup(libcarrier.EnvVar)
	inherited, _ := libcarrier.AppendParse(nil, text)
	fresh := Task{Vars: env}
	want, wantW := fresh.AppendStrings(nil, inherited)

	var task Task
	task.Vars.ReadList([]string{"SLURM_JOB_ID=1", "SLURM_JOB_NAME=other", "SLURM_NTASKS=x"})
	task.AppendStrings(nil, nil)
	task.Vars.ReadList(kv)
	if task.Vars != env {
		t.Errorf("ReadList over a used Vars = %+v, want %+v", task.Vars, env)
	}
	got, gotW := task.AppendStrings(nil, inherited)
	if !slices.Equal(got, want) || !slices.Equal(gotW, wantW) {
		t.Errorf("Task.AppendStrings = %q %v, want %q %v", got, gotW, want, wantW)
	}
}

func TestAppendStringsAllocations(t *testing.T) {
	task := &Task{Vars: VarsList(taskEnvWithCarrier(t))}
	text, _ := task.Vars.Lookup(libcarrier.EnvVar)
	inherited, _ := libcarrier.AppendParse(nil, text)
	buf := make([]libcarrier.KeyValue, 0, NumKeys)
	// The inherited carrier holds nv.dl.job.uuid: nothing to allocate.
	if got := testing.AllocsPerRun(100, func() { task.AppendStrings(buf, inherited) }); got != 0 {
		t.Errorf("AppendStrings: %v allocations, want 0", got)
	}
}

// TestKeyIndex guards keyIndex, the reverse of rules.
func TestKeyIndex(t *testing.T) {
	for i, r := range rules {
		if keyIndex(r.key) != i {
			t.Errorf("keyIndex(%q) = %d, want %d", r.key, keyIndex(r.key), i)
		}
	}
}

// TestSetInStep: a stage fixed by the caller decides the head node, whatever
// the step variables say.
func TestSetInStep(t *testing.T) {
	for _, stepID := range []string{"", "0", "-5"} {
		for _, inStep := range []bool{false, true} {
			env := VarsList([]string{"SLURM_JOB_ID=9", "SLURMD_NODENAME=c1", "SLURM_STEP_ID=" + stepID})
			env.SetInStep(inStep)
			if got := env.InStep(); got != inStep {
				t.Errorf("SLURM_STEP_ID=%q, SetInStep(%v): InStep() = %v", stepID, inStep, got)
			}
			task := Task{Vars: env}
			got, _ := task.AppendStrings(nil, nil)
			head := false
			for _, kv := range got {
				head = head || kv.Key == "slurm.head_node.name"
			}
			if head == inStep {
				t.Errorf("SLURM_STEP_ID=%q, SetInStep(%v): head node written %v", stepID, inStep, head)
			}
		}
	}
}
