package slurm

import (
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/spank-otel/spank-otel/internal/slurmtest"
	"github.com/spank-otel/spank-otel/libcarrier"
	"github.com/spank-otel/spank-otel/uuidderive"
)

// These check that the per-task path (Vars, Task.AppendStrings) agrees
// with the detector over any other Env, and with package uuidderive.

func TestDetect(t *testing.T) {
	got, warns := Detect(with(fullEnv, carrierVar, "slurm.ntasks=%2B016,slurm.job.id=007,nv.dl.run.uuid=R,slurm.restart_count=x"))
	want := map[string]any{
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
		t.Errorf("Detect =\n%v\nwant\n%v", got, want)
	}
	if keys := warningKeys(warns); !slices.Equal(keys, []string{"slurm.restart_count"}) {
		t.Errorf("warnings %v", warns)
	}
	if got, _ := Detect(EnvMap{}); got == nil || len(got) != 0 {
		t.Errorf("inactive Detect = %#v, want empty", got)
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
		slurmtest.EnvList(taskEnv(tb)),
		slurmtest.EnvList(taskEnvWithCarrier(tb)),
	}
	return variants
}

// TestVarsHoldWhatDetectorsRead guards Vars, which reports every
// variable it does not hold as unset: if the Slurm detector or a UUID
// derivation starts to read another variable, this test fails until
// Vars holds it too. It also keeps Vars from holding more.
//
// The Slurm detector itself reads a Vars by variable index, so it can
// only read what a Vars holds; from any other Env it copies them by
// name first (varsOf). What it needs is the carrier, the variables of
// its rules, and those that InStep and the job UUID read by name.
// Package uuidderive looks variables up by name, and a Vars is meant to
// serve it too.
func TestVarsHoldWhatDetectorsRead(t *testing.T) {
	read := map[string]bool{carrierVar: true}
	for _, r := range rules {
		for _, name := range r.vars {
			read[name] = true
		}
	}
	for _, env := range slurmEnvVariants(t) {
		r := recorder{env: env, read: read}
		InStep(r)
		for _, runID := range []string{"", "run-1"} {
			uuidderive.JobName(r)
			uuidderive.JobUUID(r)
			uuidderive.RunName(r, runID)
			uuidderive.RunUUID(r, runID)
		}
		// Through an Env, the detector reads only what a Vars holds.
		all := recorder{env: env, read: map[string]bool{}}
		Strings(all)
		Detect(all)
		for name := range all.read {
			if !slices.Contains(varNames[:], name) {
				t.Errorf("the detector reads %s, which Vars does not hold", name)
			}
		}
	}
	for name := range read {
		env := VarsList([]string{name + "=v"})
		if v, ok := env.Lookup(name); v != "v" || !ok {
			t.Errorf("a detector reads %s, which Vars does not hold", name)
		}
	}
	for _, name := range varNames {
		if !read[name] {
			t.Errorf("Vars holds %s, which no detector reads", name)
		}
	}
}

// checkSlurmEnv checks that the Slurm detector and the UUID derivations
// give the same results over VarsList(kv) as over slurmtest.EnvList(kv).
func checkSlurmEnv(t *testing.T, kv []string) {
	t.Helper()
	full := slurmtest.EnvList(kv)
	slim := VarsList(kv)
	wantS, wantW := Strings(full)
	if got, warns := Strings(&slim); !maps.Equal(got, wantS) || !slices.Equal(warns, wantW) {
		t.Fatalf("env %q: Strings over Vars =\n%v %v\nover EnvList\n%v %v", kv, sorted(got), warns, sorted(wantS), wantW)
	}
	wantA, wantAW := Detect(full)
	if got, warns := Detect(&slim); !reflect.DeepEqual(got, wantA) || !slices.Equal(warns, wantAW) {
		t.Fatalf("env %q: Slurm over Vars = %v %v, over EnvList %v %v", kv, got, warns, wantA, wantAW)
	}
	if got := varsOf(full); got != slim {
		t.Fatalf("env %q: varsOf(EnvList) = %+v, VarsList = %+v", kv, got, slim)
	}
	text, _ := slim.Lookup(libcarrier.EnvVar)
	inherited, _ := libcarrier.AppendParse(nil, text)
	task := Task{Vars: slim}
	kvs, warns := task.AppendStrings(nil, inherited)
	for i := 1; i < len(kvs); i++ {
		if kvs[i-1].Key >= kvs[i].Key {
			t.Fatalf("env %q: AppendStrings not sorted: %q", kv, kvs)
		}
	}
	if got := kvMap(kvs); !maps.Equal(got, wantS) || !slices.Equal(warns, wantW) {
		t.Fatalf("env %q: AppendStrings = %q %v, want %v %v", kv, kvs, warns, sorted(wantS), wantW)
	}
	// A derived job UUID is uuidderive's.
	if !slices.ContainsFunc(inherited, func(kv libcarrier.KeyValue) bool { return kv.Key == "nv.dl.job.uuid" && kv.Value != "" }) {
		if got, ok := wantS["nv.dl.job.uuid"]; ok && got != uuidderive.JobUUID(full).String() {
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

// list returns env as "NAME=value" entries, in name order.
func list(env EnvMap) []string {
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
var fuzzNames = append(slices.Clone(varNames[:]), "SLURM_JOBID", "HOME", "SLURM_JOB_I", "SLURM_JOB_IDX")

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

// BenchmarkStringsMap is BenchmarkStrings over an Env held in a map, as a
// Go program that is not the plugin has one.
func BenchmarkStringsMap(b *testing.B) {
	for _, bc := range []struct {
		name string
		kv   []string
	}{
		{"task", taskEnv(b)},
		{"task+carrier25", taskEnvWithCarrier(b)},
	} {
		env := slurmtest.EnvList(bc.kv)
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, _ = Strings(env)
			}
		})
		// What a task pays in all: building the map from envp, then detecting.
		b.Run(bc.name+"/EnvList", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, _ = Strings(slurmtest.EnvList(bc.kv))
			}
		})
	}
}
