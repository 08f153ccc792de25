package slurm

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/spank-otel/spank-otel/detect/slurm/slurmtest"
	"github.com/spank-otel/spank-otel/environ"
	"github.com/spank-otel/spank-otel/libcarrier"
	"github.com/spank-otel/spank-otel/uuidderive"
)

func TestReadList(t *testing.T) {
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
			env := readList(tt.kv)
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

func TestReadListAllocations(t *testing.T) {
	kv := taskEnvWithCarrier(t)
	var env Vars
	if got := testing.AllocsPerRun(100, func() { env.ReadList(kv) }); got != 0 {
		t.Errorf("ReadList: %v allocations, want 0", got)
	}
}

func TestVarsOf(t *testing.T) {
	env := environ.Map{"SLURM_JOB_ID": "7", "SLURM_ARRAY_TASK_ID": "", "HOME": "/root"}
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
	if got := varsOf(environ.Map{}); got != (Vars{}) {
		t.Errorf("varsOf(empty) = %+v", got)
	}
}

// TestVarNames: every variable a Vars holds has its own slot: set alone,
// it is the only one set.
func TestVarNames(t *testing.T) {
	for _, name := range varNames {
		env := readList([]string{name + "=v"})
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
	env := *readList(kv)
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
	task := &Task{Vars: *readList(taskEnvWithCarrier(t))}
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
			env := readList([]string{"SLURM_JOB_ID=9", "SLURMD_NODENAME=c1", "SLURM_STEP_ID=" + stepID})
			env.SetInStep(inStep)
			if got := env.InStep(); got != inStep {
				t.Errorf("SLURM_STEP_ID=%q, SetInStep(%v): InStep() = %v", stepID, inStep, got)
			}
			task := Task{Vars: *env}
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

// slurmEnvVariants are environments that lead the Slurm detector and the
// UUID derivations down each of their paths.
func slurmEnvVariants(tb testing.TB) []environ.Map {
	tb.Helper()
	return []environ.Map{
		{},
		baseEnv,
		fullEnv,
		with(fullEnv, "SLURM_STEP_ID", "0"),
		with(fullEnv, "SLURM_STEPID", "3"),
		with(fullEnv, "SLURM_STEP_ID", "", "SLURM_STEPID", ""),
		// Fallback names.
		with(fullEnv, "SLURM_JOB_PARTITION", deleted, "SLURM_JOB_NUM_NODES", "",
			"LENS_SLURM_SLUID", deleted, "LENS_SLURM_ARRAY_SLUID", ""),
		// Array jobs.
		with(baseEnv, "SLURM_JOB_ID", "101", "SLURM_ARRAY_JOB_ID", "100", "SLURM_ARRAY_TASK_ID", "1", "SLURM_ARRAY_TASK_COUNT", "4"),
		with(baseEnv, "SLURM_ARRAY_TASK_ID", "3"),
		with(baseEnv, "SLURM_ARRAY_JOB_ID", "100"),
		// Torchelastic, with and without a Slurm job.
		with(baseEnv, "TORCHELASTIC_RESTART_COUNT", "2", "TORCHELASTIC_RUN_ID", "r"),
		{"TORCHELASTIC_RUN_ID": "r", "TORCHELASTIC_RESTART_COUNT": "1"},
		{"TORCHELASTIC_RUN_ID": "r"},
		{"SLURM_ARRAY_JOB_ID": "100", "SLURM_ARRAY_TASK_ID": "2", "TORCHELASTIC_RESTART_COUNT": "1"},
		// Invalid integers, locally and inherited.
		with(fullEnv, "SLURM_NTASKS", "x", "SLURM_RESTART_COUNT", "y", "SLURM_ARRAY_TASK_COUNT", "z", "SLURM_JOB_NUM_NODES", "w"),
		with(baseEnv, carrierVar, "slurm.ntasks=x,slurm.nnodes=2,nv.dl.job.uuid=U,nv.dl.run.uuid=R"),
		// Inherited keys only.
		{carrierVar: "slurm.job.id=9,service.name=s"},
		environ.List(taskEnv(tb)),
		environ.List(taskEnvWithCarrier(tb)),
	}
}

// TestVarsHoldWhatDetectorsRead guards Vars, which reports every
// variable it does not hold as unset: if the Slurm detector or a UUID
// derivation starts to read another variable, this test fails until
// Vars holds it too. It also keeps Vars from holding more.
//
// The Slurm detector reads a Vars by variable index, so it can only read
// what a Vars holds: the carrier, the step ids, the variables of its
// rules, and those of the job UUID. Package uuidderive looks variables
// up by name, and a Vars is meant to serve it too. So is the GPU search,
// which reads gpuVarNames: taskenv's TestVarsHoldWhatGPUSearchReads
// checks that it reads no other.
func TestVarsHoldWhatDetectorsRead(t *testing.T) {
	read := map[string]bool{}
	for _, i := range []int{varCarrier, varStepID, varStepIDOld} {
		read[varNames[i]] = true
	}
	for _, name := range gpuVarNames {
		read[name] = true
	}
	for _, r := range rules {
		for _, name := range r.vars {
			read[name] = true
		}
	}
	for _, env := range slurmEnvVariants(t) {
		r := slurmtest.Recorder{Env: env, Read: read}
		for _, runID := range []string{"", "run-1"} {
			uuidderive.JobName(r)
			uuidderive.JobUUID(r)
			uuidderive.RunName(r, runID)
			uuidderive.RunUUID(r, runID)
		}
	}
	for name := range read {
		if v, ok := readList([]string{name + "=v"}).Lookup(name); v != "v" || !ok {
			t.Errorf("a detector reads %s, which Vars does not hold", name)
		}
	}
	for _, name := range varNames {
		if !read[name] {
			t.Errorf("Vars holds %s, which no detector reads", name)
		}
	}
}

// list returns env as "NAME=value" entries, in name order.
func list(env environ.Map) []string {
	var kv []string
	for _, name := range slices.Sorted(maps.Keys(env)) {
		kv = append(kv, name+"="+env[name])
	}
	return kv
}

// checkReadList checks that ReadList reads kv as environ.List does, for
// the variables a Vars holds, and that the job UUID the detector derives
// from a Vars by index is the one package uuidderive derives by name.
func checkReadList(t *testing.T, kv []string) {
	t.Helper()
	full := environ.List(kv)
	slim := readList(kv)
	if got := varsOf(full); got != *slim {
		t.Fatalf("env %q: ReadList = %+v, varsOf(environ.List) = %+v", kv, *slim, got)
	}
	got, _ := Strings(slim)
	inherited, _ := libcarrier.Parse(full[carrierVar])
	if uuid, ok := got["nv.dl.job.uuid"]; ok && inherited["nv.dl.job.uuid"] == "" {
		if want := uuidderive.JobUUID(full).String(); uuid != want {
			t.Fatalf("env %q: nv.dl.job.uuid %s, uuidderive.JobUUID %s", kv, uuid, want)
		}
	}
}

func TestReadListMatchesEnviron(t *testing.T) {
	for _, env := range slurmEnvVariants(t) {
		checkReadList(t, list(env))
	}
	// Repeated names and entries without '=': the first occurrence wins.
	checkReadList(t, []string{"SLURM_JOB_ID=1", "SLURM_JOB_ID=2", "SLURM_CLUSTER_NAME", "SLURM_CLUSTER_NAME=c",
		"OTEL_RESOURCE_ATTRIBUTES=slurm.job.name=a", "OTEL_RESOURCE_ATTRIBUTES=slurm.job.name=b",
		"SLURM_STEP_ID=", "SLURM_STEP_ID=4", "SLURMD_NODENAME=n"})
	checkReadList(t, append(taskEnvWithCarrier(t), "SLURM_JOB_ID=other", "SLURM_TOPOLOGY_ADDR=other"))
}

// fuzzNames are the names that FuzzReadList's environments are made of:
// every variable Vars holds, and a few it does not.
var fuzzNames = append(slices.Clone(varNames[:]), "SLURM_JOBID", "HOME", "SLURM_JOB_I", "SLURM_JOB_IDX")

func FuzzReadList(f *testing.F) {
	f.Add("B77\nFspank\nV3\nL4\nK2\nSc2\nTnode\nNalice")
	f.Add("B101\nC100\nD3\nE4\nFc\nXsl\nYnv\nZa\n[b\n\\2\n]r")
	f.Add("B101\nD\nFc\nH\nI\nJx\nK\nM-1\nW0")
	f.Add("Aslurm.job.id=9,nv.dl.run.uuid=R,service.name=s\nFc")
	f.Add("B7\nAslurm.ntasks=lots,slurm.nnodes=+02,a=%2C\nLx\nK1e3\nA=ignored")
	f.Add("B1\nB2\nA\nAslurm.job.name=x\nSLURM_JOB_ID\n=\n^HOME")
	f.Add(strings.Join(taskEnvWithCarrier(f), "\n"))
	f.Fuzz(func(t *testing.T, text string) {
		checkReadList(t, slurmtest.LinesEnv(fuzzNames, text))
	})
}
