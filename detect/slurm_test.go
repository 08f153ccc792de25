package detect_test

import (
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/spank-otel/spank-otel/detect"
	"github.com/spank-otel/spank-otel/internal/slurm"
	"github.com/spank-otel/spank-otel/internal/slurm/slurmtest"
	"github.com/spank-otel/spank-otel/libcarrier"
	"github.com/spank-otel/spank-otel/uuidderive"
)

// The detector's own tests are in package internal/slurm. These check the
// public wrappers, and that the per-task path (slurm.Vars, AppendStrings)
// agrees with detect's Env types and with package uuidderive.

const (
	deleted    = slurmtest.Deleted
	carrierVar = slurmtest.CarrierVar
)

var (
	baseEnv            = detect.EnvMap(slurmtest.BaseEnv)
	fullEnv            = detect.EnvMap(slurmtest.FullEnv)
	jobUUID            = slurmtest.JobUUID
	taskEnv            = slurmtest.TaskEnv
	taskEnvWithCarrier = slurmtest.TaskEnvWithCarrier
)

var warningKeys = slurmtest.WarningKeys

func sorted(m map[string]string) string { return slurmtest.Sorted(m) }

func with[M ~map[string]string](m M, pairs ...string) M { return slurmtest.With(m, pairs...) }

func TestSlurm(t *testing.T) {
	got, warns := detect.Slurm(with(fullEnv, carrierVar, "slurm.ntasks=%2B016,slurm.job.id=007,nv.dl.run.uuid=R,slurm.restart_count=x"))
	want := detect.Attributes{
		"slurm.job.id":                "007",
		"slurm.job.id.raw":            "100",
		"slurm.array.job_id":          "100",
		"slurm.array.task_id":         "0",
		"slurm.array.count":           int64(1),
		"slurm.restart_count":         int64(1),
		"slurm.cluster.name":          "c",
		"nv.dl.job.uuid":              jobUUID("c", "100"),
		"nv.dl.run.uuid":              "R",
		"slurm.job.name":              "train",
		"slurm.partition":             "gpu",
		"slurm.nnodes":                int64(2),
		"slurm.ntasks":                int64(16),
		"slurm.job.user":              "alice",
		"slurm.job.account":           "research",
		"slurm.job.qos":               "high",
		"slurm.job.reservation":       "maint",
		"slurm.segment":               "seg1",
		"slurm.topology.addr":         "sw0.c1",
		"slurm.topology.addr_pattern": "switch.node",
		"slurm.head_node.name":        "c1",
		"slurm.sluid":                 "sluid-lens",
		"slurm.array.sluid":           "asluid-lens",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Slurm =\n%v\nwant\n%v", got, want)
	}
	if len(got) != 23 {
		t.Errorf("%d keys, want all 23", len(got))
	}
	if keys := warningKeys(warns); !slices.Equal(keys, []string{"slurm.restart_count"}) {
		t.Errorf("warnings %v", warns)
	}
	if got, _ := detect.Slurm(detect.EnvMap{}); got == nil || len(got) != 0 {
		t.Errorf("inactive Slurm = %#v, want empty", got)
	}
}

// recorder is an Env that records every variable looked up in it.
type recorder struct {
	env  detect.Env
	read map[string]bool
}

func (r recorder) Lookup(name string) (string, bool) {
	r.read[name] = true
	return r.env.Lookup(name)
}

// slurmEnvVariants are environments that lead the Slurm detector and the
// UUID derivations down each of their paths.
func slurmEnvVariants(tb testing.TB) []detect.EnvMap {
	tb.Helper()
	variants := []detect.EnvMap{
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
		detect.EnvList(taskEnv(tb)),
		detect.EnvList(taskEnvWithCarrier(tb)),
	}
	return variants
}

// TestSlurmEnvHoldsWhatDetectorsRead guards Vars, which reports every
// variable it does not hold as unset: if the Slurm detector or a UUID
// derivation starts to read another variable, this test fails until
// Vars holds it too. It also keeps Vars from holding more.
//
// The Slurm detector itself reads a Vars by variable index, so it can
// only read what a Vars holds; from any other Env it copies them by
// name first (VarsOf), which the recording checks against VarsList.
// Package uuidderive looks variables up by name, and a Vars is meant to
// serve it too.
func TestVarsHoldWhatDetectorsRead(t *testing.T) {
	read := map[string]bool{}
	for _, env := range slurmEnvVariants(t) {
		r := recorder{env: env, read: read}
		detect.SlurmStrings(r)
		detect.Slurm(r)
		kvs, _ := libcarrier.AppendParse(nil, env[carrierVar])
		se := slurm.VarsOf(r)
		slurm.AppendStrings(nil, &se, kvs)
		for _, runID := range []string{"", "run-1"} {
			uuidderive.JobName(r)
			uuidderive.JobUUID(r)
			uuidderive.RunName(r, runID)
			uuidderive.RunUUID(r, runID)
		}
	}
	for name := range read {
		env := slurm.VarsList([]string{name + "=v"})
		if v, ok := env.Lookup(name); v != "v" || !ok {
			t.Errorf("a detector reads %s, which Vars does not hold", name)
		}
	}
	for _, name := range slurmtest.VarNames {
		if !read[name] {
			t.Errorf("Vars holds %s, which no detector reads", name)
		}
	}
}

// checkSlurmEnv checks that the Slurm detector and the UUID derivations
// give the same results over slurm.VarsList(kv) as over detect.EnvList(kv).
func checkSlurmEnv(t *testing.T, kv []string) {
	t.Helper()
	full := detect.EnvList(kv)
	slim := slurm.VarsList(kv)
	wantS, wantW := detect.SlurmStrings(full)
	if got, warns := detect.SlurmStrings(&slim); !maps.Equal(got, wantS) || !slices.Equal(warns, wantW) {
		t.Fatalf("env %q: SlurmStrings over Vars =\n%v %v\nover EnvList\n%v %v", kv, sorted(got), warns, sorted(wantS), wantW)
	}
	wantA, wantAW := detect.Slurm(full)
	if got, warns := detect.Slurm(&slim); !reflect.DeepEqual(got, wantA) || !slices.Equal(warns, wantAW) {
		t.Fatalf("env %q: Slurm over Vars = %v %v, over EnvList %v %v", kv, got, warns, wantA, wantAW)
	}
	if got := slurm.VarsOf(full); got != slim {
		t.Fatalf("env %q: slurm.VarsOf(EnvList) = %+v, VarsList = %+v", kv, got, slim)
	}
	text, _ := slim.Lookup(libcarrier.EnvVar)
	inherited, _ := libcarrier.AppendParse(nil, text)
	kvs, warns := slurm.AppendStrings(nil, &slim, inherited)
	for i := 1; i < len(kvs); i++ {
		if kvs[i-1].Key >= kvs[i].Key {
			t.Fatalf("env %q: AppendStrings not sorted: %q", kv, kvs)
		}
	}
	if got := kvMap(kvs); !maps.Equal(got, wantS) || !slices.Equal(warns, wantW) {
		t.Fatalf("env %q: AppendStrings = %q %v, want %v %v", kv, kvs, warns, sorted(wantS), wantW)
	}
	// A derived job UUID is uuidderive's.
	if !slices.ContainsFunc(inherited, func(kv libcarrier.KeyValue) bool { return kv.Key == detect.KeyJobUUID && kv.Value != "" }) {
		if got, ok := wantS[detect.KeyJobUUID]; ok && got != uuidderive.JobUUID(full).String() {
			t.Fatalf("env %q: nv.dl.job.uuid %s, uuidderive.JobUUID %s", kv, got, uuidderive.JobUUID(full))
		}
	}
	for _, runID := range []string{"", "r"} {
		if got, want := uuidderive.JobName(&slim), uuidderive.JobName(full); got != want {
			t.Fatalf("env %q: JobName %q over Vars, %q over EnvList", kv, got, want)
		}
		got, gotOK := uuidderive.RunName(&slim, runID)
		want, wantOK := uuidderive.RunName(full, runID)
		if got != want || gotOK != wantOK {
			t.Fatalf("env %q: RunName %q %v over Vars, %q %v over EnvList", kv, got, gotOK, want, wantOK)
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

// list returns env as "NAME=value" entries, in name order.
func list(env detect.EnvMap) []string {
	var kv []string
	for _, name := range slices.Sorted(maps.Keys(env)) {
		kv = append(kv, name+"="+env[name])
	}
	return kv
}

func TestVarsMatchEnvList(t *testing.T) {
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
// every variable Vars holds, and a few it does not.
var fuzzNames = append(slices.Clone(slurmtest.VarNames), "SLURM_JOBID", "HOME", "SLURM_JOB_I", "SLURM_JOB_IDX")

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

func BenchmarkSlurmStrings(b *testing.B) {
	for _, bc := range []struct {
		name string
		kv   []string
	}{
		{"task", taskEnv(b)},
		{"task+carrier25", taskEnvWithCarrier(b)},
	} {
		env := detect.EnvList(bc.kv)
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, _ = detect.SlurmStrings(env)
			}
		})
		// What a task pays in all: building the map from envp, then detecting.
		b.Run(bc.name+"/EnvList", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, _ = detect.SlurmStrings(detect.EnvList(bc.kv))
			}
		})
		// The same with the Env of the hot path.
		b.Run(bc.name+"/VarsList", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				env := slurm.VarsList(bc.kv)
				_, _ = detect.SlurmStrings(&env)
			}
		})
	}
}

func BenchmarkEnvList(b *testing.B) {
	kv := taskEnv(b)
	b.ReportAllocs()
	for b.Loop() {
		_ = detect.EnvList(kv)
	}
}
