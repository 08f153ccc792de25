package detect

import (
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/spank-otel/spank-otel/internal/carrier"
	"github.com/spank-otel/spank-otel/libcarrier"
	"github.com/spank-otel/spank-otel/uuidderive"
)

func TestSlurmEnvList(t *testing.T) {
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
			env := SlurmEnvList(tt.kv)
			if v, ok := env.Lookup(tt.key); v != tt.value || ok != tt.ok {
				t.Errorf("Lookup(%q) = %q, %v; want %q, %v", tt.key, v, ok, tt.value, tt.ok)
			}
		})
	}
	var zero SlurmEnv
	if v, ok := zero.Lookup("SLURM_JOB_ID"); v != "" || ok {
		t.Errorf("zero SlurmEnv: Lookup = %q, %v", v, ok)
	}
}

func TestSlurmEnvListAllocations(t *testing.T) {
	kv := taskEnvWithCarrier(t)
	if got := testing.AllocsPerRun(100, func() { _ = SlurmEnvList(kv) }); got != 0 {
		t.Errorf("SlurmEnvList: %v allocations, want 0", got)
	}
}

func TestSlurmEnvOf(t *testing.T) {
	env := EnvMap{"SLURM_JOB_ID": "7", "SLURM_ARRAY_TASK_ID": "", "HOME": "/root"}
	se := SlurmEnvOf(env)
	for _, name := range slurmEnvNames {
		want, wantOK := env.Lookup(name)
		if v, ok := se.Lookup(name); v != want || ok != wantOK {
			t.Errorf("Lookup(%s) = %q, %v; want %q, %v", name, v, ok, want, wantOK)
		}
	}
	if v, ok := se.Lookup("HOME"); v != "" || ok {
		t.Errorf("Lookup(HOME) = %q, %v; a SlurmEnv does not hold it", v, ok)
	}
	if again := SlurmEnvOf(&se); again != se {
		t.Errorf("SlurmEnvOf(SlurmEnv) = %+v, want %+v", again, se)
	}
	if got := SlurmEnvOf(EnvMap{}); got != (SlurmEnv{}) {
		t.Errorf("SlurmEnvOf(empty) = %+v", got)
	}
}

// slurmEnvNames are the variables a SlurmEnv holds: exactly those that the
// Slurm detector and package uuidderive read (see
// TestSlurmEnvHoldsWhatDetectorsRead).
var slurmEnvNames = []string{
	libcarrier.EnvVar,
	"SLURM_JOB_ID", "SLURM_ARRAY_JOB_ID", "SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT",
	"SLURM_CLUSTER_NAME", "SLURM_JOB_NAME", "SLURM_JOB_PARTITION", "SLURM_PARTITION",
	"SLURM_JOB_NUM_NODES", "SLURM_NNODES", "SLURM_NTASKS", "SLURM_RESTART_COUNT",
	"SLURM_JOB_USER", "SLURM_JOB_ACCOUNT", "SLURM_JOB_QOS", "SLURM_JOB_RESERVATION",
	"SLURM_SEGMENT", "SLURM_TOPOLOGY_ADDR", "SLURM_TOPOLOGY_ADDR_PATTERN",
	"SLURMD_NODENAME", "SLURM_STEP_ID", "SLURM_STEPID",
	"LENS_SLURM_SLUID", "NV_LAUNCH_SLUID", "SLURM_JOB_SLUID", "LENS_SLURM_ARRAY_SLUID", "NV_LAUNCH_ARRAY_SLUID",
	"TORCHELASTIC_RESTART_COUNT", "TORCHELASTIC_RUN_ID",
}

func TestSlurmEnvNames(t *testing.T) {
	if len(slurmEnvNames) != slurmVarCount {
		t.Fatalf("test lists %d names, SlurmEnv holds %d", len(slurmEnvNames), slurmVarCount)
	}
	for i, name := range slurmVarNames {
		if slurmVar(name) != i {
			t.Errorf("slurmVar(%q) = %d, want %d", name, slurmVar(name), i)
		}
	}
	if !slices.Equal(slices.Sorted(slices.Values(slurmVarNames[:])), slices.Sorted(slices.Values(slurmEnvNames))) {
		t.Errorf("slurmVarNames = %q, want %q", slurmVarNames, slurmEnvNames)
	}
	seen := map[int]string{}
	for _, name := range slurmEnvNames {
		i := slurmVar(name)
		if i < 0 || i >= slurmVarCount {
			t.Errorf("%s: index %d", name, i)
		}
		if other, dup := seen[i]; dup {
			t.Errorf("%s and %s share index %d", name, other, i)
		}
		seen[i] = name
		// Every name has its own slot: set alone, it is the only one set.
		env := SlurmEnvList([]string{name + "=v"})
		for _, other := range slurmEnvNames {
			v, ok := env.Lookup(other)
			if want := other == name; ok != want || (ok && v != "v") {
				t.Errorf("with only %s set, Lookup(%s) = %q, %v", name, other, v, ok)
			}
		}
	}
}

// recorder is an Env that records every variable looked up in it.
type recorder struct {
	env  Env
	read map[string]bool
}

func (r recorder) Lookup(name string) (string, bool) {
	r.read[name] = true
	return r.env.Lookup(name)
}

// slurmEnvVariants are environments that lead the Slurm detector and the
// UUID derivations down each of their paths.
func slurmEnvVariants(tb testing.TB) []EnvMap {
	tb.Helper()
	variants := []EnvMap{
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
		EnvList(taskEnv(tb)),
		EnvList(taskEnvWithCarrier(tb)),
	}
	return variants
}

// TestSlurmEnvHoldsWhatDetectorsRead guards SlurmEnv, which reports every
// variable it does not hold as unset: if the Slurm detector or a UUID
// derivation starts to read another variable, this test fails until
// SlurmEnv holds it too. It also keeps SlurmEnv from holding more.
//
// The Slurm detector itself reads a SlurmEnv by variable index, so it can
// only read what a SlurmEnv holds; from any other Env it copies them by
// name first (SlurmEnvOf), which the recording checks against SlurmEnvList.
// Package uuidderive looks variables up by name, and a SlurmEnv is meant to
// serve it too.
func TestSlurmEnvHoldsWhatDetectorsRead(t *testing.T) {
	read := map[string]bool{}
	for _, env := range slurmEnvVariants(t) {
		r := recorder{env: env, read: read}
		SlurmStrings(r)
		Slurm(r)
		inherited, _ := libcarrier.Parse(env[carrierVar])
		SlurmStringsInherited(r, inherited)
		kvs, _ := carrier.AppendParse(nil, env[carrierVar])
		se := SlurmEnvOf(r)
		AppendSlurmStrings(nil, &se, kvs)
		for _, runID := range []string{"", "run-1"} {
			uuidderive.JobName(r)
			uuidderive.JobUUID(r)
			uuidderive.RunName(r, runID)
			uuidderive.RunUUID(r, runID)
		}
	}
	for name := range read {
		env := SlurmEnvList([]string{name + "=v"})
		if v, ok := env.Lookup(name); v != "v" || !ok {
			t.Errorf("a detector reads %s, which SlurmEnv does not hold", name)
		}
	}
	for _, name := range slurmEnvNames {
		if !read[name] {
			t.Errorf("SlurmEnv holds %s, which no detector reads", name)
		}
	}
}

// checkSlurmEnv checks that the Slurm detector and the UUID derivations
// give the same results over SlurmEnvList(kv) as over EnvList(kv).
func checkSlurmEnv(t *testing.T, kv []string) {
	t.Helper()
	full := EnvList(kv)
	slim := SlurmEnvList(kv)
	wantS, wantW := SlurmStrings(full)
	if got, warns := SlurmStrings(&slim); !maps.Equal(got, wantS) || !slices.Equal(warns, wantW) {
		t.Fatalf("env %q: SlurmStrings over SlurmEnv =\n%v %v\nover EnvList\n%v %v", kv, sorted(got), warns, sorted(wantS), wantW)
	}
	wantA, wantAW := Slurm(full)
	if got, warns := Slurm(&slim); !reflect.DeepEqual(got, wantA) || !slices.Equal(warns, wantAW) {
		t.Fatalf("env %q: Slurm over SlurmEnv = %v %v, over EnvList %v %v", kv, got, warns, wantA, wantAW)
	}
	if got := SlurmEnvOf(full); got != slim {
		t.Fatalf("env %q: SlurmEnvOf(EnvList) = %+v, SlurmEnvList = %+v", kv, got, slim)
	}
	text, _ := slim.Lookup(libcarrier.EnvVar)
	inherited, _ := carrier.AppendParse(nil, text)
	kvs, warns := AppendSlurmStrings(nil, &slim, inherited)
	for i := 1; i < len(kvs); i++ {
		if kvs[i-1].Key >= kvs[i].Key {
			t.Fatalf("env %q: AppendSlurmStrings not sorted: %q", kv, kvs)
		}
	}
	if got := kvMap(kvs); !maps.Equal(got, wantS) || !slices.Equal(warns, wantW) {
		t.Fatalf("env %q: AppendSlurmStrings = %q %v, want %v %v", kv, kvs, warns, sorted(wantS), wantW)
	}
	// A derived job UUID is uuidderive's.
	if !slices.ContainsFunc(inherited, func(kv carrier.KeyValue) bool { return kv.Key == KeyJobUUID && kv.Value != "" }) {
		if got, ok := wantS[KeyJobUUID]; ok && got != uuidderive.JobUUID(full).String() {
			t.Fatalf("env %q: nv.dl.job.uuid %s, uuidderive.JobUUID %s", kv, got, uuidderive.JobUUID(full))
		}
	}
	for _, runID := range []string{"", "r"} {
		if got, want := uuidderive.JobName(&slim), uuidderive.JobName(full); got != want {
			t.Fatalf("env %q: JobName %q over SlurmEnv, %q over EnvList", kv, got, want)
		}
		got, gotOK := uuidderive.RunName(&slim, runID)
		want, wantOK := uuidderive.RunName(full, runID)
		if got != want || gotOK != wantOK {
			t.Fatalf("env %q: RunName %q %v over SlurmEnv, %q %v over EnvList", kv, got, gotOK, want, wantOK)
		}
	}
}

func kvMap(kvs []carrier.KeyValue) map[string]string {
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		m[kv.Key] = kv.Value
	}
	return m
}

// list returns env as "NAME=value" entries, in name order.
func list(env EnvMap) []string {
	var kv []string
	for _, name := range slices.Sorted(maps.Keys(env)) {
		kv = append(kv, name+"="+env[name])
	}
	return kv
}

func TestSlurmEnvMatchesEnvList(t *testing.T) {
	for _, env := range slurmEnvVariants(t) {
		checkSlurmEnv(t, list(env))
	}
	// Repeated names and entries without '=': the first occurrence wins.
	checkSlurmEnv(t, []string{"SLURM_JOB_ID=1", "SLURM_JOB_ID=2", "SLURM_CLUSTER_NAME", "SLURM_CLUSTER_NAME=c",
		"OTEL_RESOURCE_ATTRIBUTES=slurm.job.name=a", "OTEL_RESOURCE_ATTRIBUTES=slurm.job.name=b",
		"SLURM_STEP_ID=", "SLURM_STEP_ID=4", "SLURMD_NODENAME=n"})
	checkSlurmEnv(t, append(taskEnvWithCarrier(t), "SLURM_JOB_ID=other", "SLURM_TOPOLOGY_ADDR=other"))
}

// fuzzNames are the names that FuzzSlurmEnv's environments are made of:
// every variable SlurmEnv holds, and a few it does not.
var fuzzNames = append(slices.Clone(slurmEnvNames), "SLURM_JOBID", "HOME", "SLURM_JOB_I", "SLURM_JOB_IDX")

// fuzzEnv turns text into an environment: each line that starts with a
// byte from 'A' on picks a name of fuzzNames by that byte, followed by the
// rest of the line as the value; any other line is an entry as it is.
func fuzzEnv(text string) []string {
	var kv []string
	for _, line := range strings.Split(text, "\n") {
		if line != "" && line[0] >= 'A' && int(line[0]-'A') < len(fuzzNames) {
			kv = append(kv, fuzzNames[line[0]-'A']+"="+line[1:])
			continue
		}
		kv = append(kv, line)
	}
	return kv
}

func FuzzSlurmEnv(f *testing.F) {
	f.Add("B77\nFspank\nV3\nL4\nK2\nSc2\nTnode\nNalice")
	f.Add("B101\nC100\nD3\nE4\nFc\nXsl\nYnv\nZa\n[b\n\\2\n]r")
	f.Add("B101\nD\nFc\nH\nI\nJx\nK\nM-1\nW0")
	f.Add("Aslurm.job.id=9,nv.dl.run.uuid=R,service.name=s\nFc")
	f.Add("B7\nAslurm.ntasks=lots,slurm.nnodes=+02,a=%2C\nLx\nK1e3\nA=ignored")
	f.Add("B1\nB2\nA\nAslurm.job.name=x\nSLURM_JOB_ID\n=\n^HOME")
	f.Add(strings.Join(taskEnvWithCarrier(f), "\n"))
	f.Fuzz(func(t *testing.T, text string) {
		checkSlurmEnv(t, fuzzEnv(text))
	})
}

func TestAppendSlurmStrings(t *testing.T) {
	env := with(fullEnv, "SLURM_NTASKS", "x")
	inherited := []carrier.KeyValue{
		{Key: "slurm.job.name", Value: "first"}, {Key: "service.name", Value: "s"}, {Key: "slurm.job.name", Value: "last"},
		{Key: "slurm.nnodes", Value: "2"}, {Key: "slurm.nnodes", Value: "two"}, // the last entry counts: discarded
		{Key: "slurm.job.user", Value: ""},
	}
	dst := []carrier.KeyValue{{Key: "kept", Value: "as is"}}
	se := SlurmEnvOf(env)
	got, warns := AppendSlurmStrings(dst, &se, inherited)
	if got[0] != dst[0] {
		t.Errorf("dst changed: %q", got[0])
	}
	wantS, wantW := SlurmStringsInherited(env, kvMap(inherited))
	if !maps.Equal(kvMap(got[1:]), wantS) || !slices.Equal(warns, wantW) {
		t.Errorf("AppendSlurmStrings = %q %v, want %v %v", got[1:], warns, sorted(wantS), wantW)
	}
	if want := []string{"slurm.nnodes", "slurm.ntasks"}; !slices.Equal(warningKeys(warns), want) {
		t.Errorf("warning keys %q, want %q", warningKeys(warns), want)
	}
	for i := 2; i < len(got); i++ {
		if got[i-1].Key >= got[i].Key {
			t.Errorf("not sorted by key: %q", got[1:])
		}
	}
	if got[1:][slices.IndexFunc(got[1:], func(kv carrier.KeyValue) bool { return kv.Key == KeySlurmJobName })].Value != "last" {
		t.Errorf("the last inherited slurm.job.name must win: %q", got)
	}
	if got, warns := AppendSlurmStrings(nil, &SlurmEnv{}, nil); len(got) != 0 || warns != nil {
		t.Errorf("inactive: %q %v", got, warns)
	}
}

func TestAppendSlurmStringsAllocations(t *testing.T) {
	env := SlurmEnvList(taskEnvWithCarrier(t))
	text, _ := env.Lookup(libcarrier.EnvVar)
	inherited, _ := carrier.AppendParse(nil, text)
	buf := make([]carrier.KeyValue, 0, slurmKeyCount)
	// The inherited carrierVar holds nv.dl.job.uuid: nothing to allocate.
	if got := testing.AllocsPerRun(100, func() { AppendSlurmStrings(buf, &env, inherited) }); got != 0 {
		t.Errorf("AppendSlurmStrings: %v allocations, want 0", got)
	}
}

func TestSlurmKeys(t *testing.T) {
	if !slices.IsSorted(slurmKeys[:]) {
		t.Errorf("slurmKeys are not in byte order: %q", slurmKeys)
	}
	for i, key := range slurmKeys {
		if slurmKey(key) != i {
			t.Errorf("slurmKey(%q) = %d, want %d", key, slurmKey(key), i)
		}
	}
}
