package taskenv

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/spank-otel/spank-otel/detect/gpu"
	"github.com/spank-otel/spank-otel/detect/slurm"
	"github.com/spank-otel/spank-otel/detect/slurm/slurmtest"
	"github.com/spank-otel/spank-otel/environ"
	"github.com/spank-otel/spank-otel/libcarrier"
)

// reference is Compute written with maps, the way the plugin first did it:
// a map of the whole environment, the parsed carrier as a map, the Slurm
// detector's map merged into it, and FormatStrings. Compute must agree with
// it on every input.
func reference(env []string, opts Options) Result {
	// A stage is forced by editing the step variables, which the detector
	// then reads as the plugin's step decision: the first occurrence of a
	// name wins.
	edited := env
	switch {
	case opts.Step != nil && *opts.Step <= slurm.MaxRegularStepID:
		edited = append([]string{"SLURM_STEP_ID=" + strconv.FormatUint(uint64(*opts.Step), 10)}, env...)
	case opts.Step != nil:
		edited = append([]string{"SLURM_STEP_ID=batch"}, env...)
	case opts.Stage == StageBatch:
		edited = slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
			return strings.HasPrefix(kv, "SLURM_STEP_ID=") || strings.HasPrefix(kv, "SLURM_STEPID=")
		})
	case opts.Stage == StageTask && !regularStepVar(env):
		// A step named by text: in a step, with no id.
		edited = append([]string{"SLURM_STEP_ID=x"}, env...)
	}
	vars := environ.List(edited)

	inheritedText, inheritedSet := vars.Lookup(libcarrier.EnvVar)
	inherited, dropped := libcarrier.Parse(inheritedText)
	dropped = append(dropped, unwritable(inherited)...)
	repair := len(dropped) > 0
	// The detector reads the repaired carrier, as Compute's does.
	repaired, _ := libcarrier.FormatStrings(inherited)
	identity, warnings := slurm.Strings(slurmtest.With(vars, libcarrier.EnvVar, repaired))
	// The GPU keys are found by package gpu (its tests, and TestGPUKeys
	// here); an inherited one is never kept.
	isKey := func(key string) bool { return slurm.IsKey(key) || gpu.IsKey(key) }
	if len(identity) == 0 && !slices.ContainsFunc(slices.Collect(maps.Keys(inherited)), isKey) {
		return Result{Warnings: warnings}
	}
	dropped = append(dropped, unwritable(identity)...)
	excluded := func(key string) bool { return slices.Contains(opts.Exclude, key) }
	written := func(key string) bool { return !excluded(key) }
	changed := false
	for key := range inherited {
		if !isKey(key) || excluded(key) {
			continue
		}
		if _, ok := identity[key]; !ok || !written(key) {
			delete(inherited, key)
			changed = true
		}
	}
	for key, value := range identity {
		if !written(key) {
			continue
		}
		if old, ok := inherited[key]; !ok || old != value {
			inherited[key] = value
			changed = true
		}
	}
	if !changed && !repair {
		return Result{Warnings: warnings, Dropped: dropped}
	}
	value, formatWarnings := libcarrier.FormatStrings(inherited)
	return fitResult(env, inheritedText, inheritedSet, value, opts.budget(), append(warnings, formatWarnings...), dropped, nil)
}

// regularStepVar reports whether the step variables of env, as the
// detector reads them, give a regular step's number.
func regularStepVar(env []string) bool {
	vars := environ.List(env)
	id, _ := vars.Lookup("SLURM_STEP_ID")
	if id == "" {
		id, _ = vars.Lookup("SLURM_STEPID")
	}
	n, err := strconv.ParseUint(id, 10, 32)
	return err == nil && n <= slurm.MaxRegularStepID
}

// unwritable deletes from m, in key order, the entries that FormatStrings
// drops, and returns its warnings about them.
func unwritable(m map[string]string) []libcarrier.Warning {
	var dropped []libcarrier.Warning
	for _, key := range slices.Sorted(maps.Keys(m)) {
		_, warns := libcarrier.FormatStrings(map[string]string{key: m[key]})
		for _, w := range warns {
			if strings.HasSuffix(w.Message, ": dropped") {
				dropped = append(dropped, w)
				delete(m, key)
			}
		}
	}
	return dropped
}

// checkReference runs Compute and reference on env with each stage and a
// few option sets, and fails on any difference.
func checkReference(t *testing.T, env []string, exclude []string) {
	t.Helper()
	step, batch := uint32(5), uint32(0xfffffffb)
	for _, stage := range []Options{{Stage: StageAuto}, {Stage: StageBatch}, {Stage: StageTask}, {Step: &step}, {Step: &batch}} {
		for _, maxEnv := range []int{0, 700, 1 << 20} {
			opts := stage
			opts.Exclude, opts.MaxEnvBytes = exclude, maxEnv
			got, want := Compute(env, opts), reference(env, opts)
			if got.Value != want.Value || got.Changed != want.Changed || got.Unset != want.Unset || got.Reason != want.Reason ||
				!slices.Equal(got.Warnings, want.Warnings) || !slices.Equal(got.Dropped, want.Dropped) {
				t.Fatalf("Compute(%q, %+v) =\n%+v\nreference\n%+v", env, opts, got, want)
			}
		}
	}
}

// referenceEnvs are task environments for the comparison with reference.
var referenceEnvs = [][]string{
	nil,
	{"HOME=/root"},
	{"OTEL_RESOURCE_ATTRIBUTES=a=1 , b=2"},
	{"SLURM_JOB_ID=77", "SLURM_CLUSTER_NAME=spank", "SLURM_STEP_ID=3", "SLURM_NNODES=2", "SLURM_NTASKS=4",
		"SLURMD_NODENAME=c2", "SLURM_TOPOLOGY_ADDR=c2", "SLURM_TOPOLOGY_ADDR_PATTERN=node", "SLURM_JOB_USER=alice"},
	{"SLURM_JOB_ID=77", "SLURMD_NODENAME=c2", "SLURM_TOPOLOGY_ADDR=c2",
		"OTEL_RESOURCE_ATTRIBUTES=slurm.topology.addr=old,slurm.head_node.name=c1,u=1"},
	{"SLURM_JOB_ID=77", "SLURM_STEPID=0", "OTEL_RESOURCE_ATTRIBUTES=slurm.ntasks=lots,slurm.nnodes=+02,slurm.nodelist=c[1-2]"},
	{"SLURM_JOB_ID=101", "SLURM_ARRAY_JOB_ID=100", "SLURM_ARRAY_TASK_ID=1", "SLURM_ARRAY_TASK_COUNT=4",
		"TORCHELASTIC_RESTART_COUNT=1", "LENS_SLURM_SLUID=s", "NV_LAUNCH_ARRAY_SLUID=a"},
	{"OTEL_RESOURCE_ATTRIBUTES=slurm.job.id=9,nv.dl.run.uuid=R,service.name=s", "SLURM_CLUSTER_NAME=c"},
	{"OTEL_RESOURCE_ATTRIBUTES=service.name=s,slurm.nodelist=x"},
	{"SLURM_JOB_ID=7", "OTEL_RESOURCE_ATTRIBUTES=a=1,garbage"},
	{"SLURM_JOB_ID=7", "OTEL_RESOURCE_ATTRIBUTES=a=\xff,b=2"},
	{"SLURM_JOB_ID=7", `OTEL_RESOURCE_ATTRIBUTES=we"ird=1`},
	{"SLURM_JOB_ID=7", "OTEL_RESOURCE_ATTRIBUTES=b=2,a=1,b=3, a =4,c=%zz"},
	{"SLURM_JOB_ID=7", "OTEL_RESOURCE_ATTRIBUTES=big=" + strings.Repeat("x", MaxArgStrlen-100)},
	{"SLURM_JOB_ID=7", "OTEL_RESOURCE_ATTRIBUTES=long=" + strings.Repeat("%C3%A9", 50)},
	{"OTEL_RESOURCE_ATTRIBUTES=first=1", "SLURM_JOB_ID=7", "OTEL_RESOURCE_ATTRIBUTES=second=2", "SLURM_JOB_ID=8"},
	// Slurm 26.05 names the batch step -5; special steps are not steps.
	{"SLURM_JOB_ID=7", "SLURM_STEP_ID=-5", "SLURMD_NODENAME=c1", "SLURM_TOPOLOGY_ADDR=c1"},
	{"SLURM_JOB_ID=7", "SLURM_STEP_ID=extern", "SLURM_STEPID=3", "SLURMD_NODENAME=c1", "SLURM_TOPOLOGY_ADDR=c1"},
	{"SLURM_JOB_ID=7", "SLURM_STEP_ID=4294967291", "SLURMD_NODENAME=c1"},
	{"SLURM_JOB_ID=7", "SLURM_STEP_ID=4294967280", "SLURMD_NODENAME=c1", "SLURM_TOPOLOGY_ADDR=c1"},
	// Malformed carriers are repaired.
	{"SLURM_JOB_ID=7", "OTEL_RESOURCE_ATTRIBUTES=,,noequals,=novalue, ,k=v,,"},
	{"SLURM_JOB_ID=7", "OTEL_RESOURCE_ATTRIBUTES=key%2Cpart=v,good=1,semi;key=x,slurm.job.name=%FF"},
	{"SLURM_JOB_ID=7", "SLURM_JOB_NAME=run-\xff", "OTEL_RESOURCE_ATTRIBUTES=u=1"},
	// Every inherited key is one that is removed: the variable is unset.
	{"SLURM_STEP_ID=batch", "OTEL_RESOURCE_ATTRIBUTES=slurm.topology.addr=c1"},
}

func TestComputeMatchesReference(t *testing.T) {
	envs := append(slices.Clone(referenceEnvs), slurmtest.TaskEnvWithCarrier(t))
	for _, env := range envs {
		for _, exclude := range [][]string{nil, {"slurm.job.user", "slurm.topology.addr", "u"}, {"slurm.head_node.name"}} {
			checkReference(t, env, exclude)
		}
	}
	// A carrier that is already what Compute writes.
	env := slurmtest.TaskEnvWithCarrier(t)
	first := Compute(env, Options{})
	checkReference(t, append([]string{libcarrier.EnvVar + "=" + first.Value}, env...), nil)
}

// computeNames are the names that FuzzComputeMatchesReference's
// environments are made of (slurmtest.LinesEnv).
var computeNames = []string{
	libcarrier.EnvVar, "SLURM_JOB_ID", "SLURM_ARRAY_JOB_ID", "SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT",
	"SLURM_CLUSTER_NAME", "SLURM_JOB_NAME", "SLURM_JOB_PARTITION", "SLURM_PARTITION", "SLURM_JOB_NUM_NODES",
	"SLURM_NNODES", "SLURM_NTASKS", "SLURM_RESTART_COUNT", "SLURM_JOB_USER", "SLURM_JOB_ACCOUNT", "SLURM_JOB_QOS",
	"SLURM_JOB_RESERVATION", "SLURM_SEGMENT", "SLURM_TOPOLOGY_ADDR", "SLURM_TOPOLOGY_ADDR_PATTERN",
	"SLURMD_NODENAME", "SLURM_STEP_ID", "SLURM_STEPID", "LENS_SLURM_SLUID", "NV_LAUNCH_SLUID",
	"LENS_SLURM_ARRAY_SLUID", "NV_LAUNCH_ARRAY_SLUID", "TORCHELASTIC_RESTART_COUNT", "TORCHELASTIC_RUN_ID",
	"HOME", "SLURM_JOBID",
}

func FuzzComputeMatchesReference(f *testing.F) {
	for _, env := range referenceEnvs {
		f.Add(strings.Join(env, "\n"), "slurm.job.user")
	}
	f.Add(strings.Join(slurmtest.TaskEnvWithCarrier(f), "\n"), "")
	f.Add("B77\nFspank\nV3\nL4\nK2\nUc2\nSc2\nTnode\nNalice", "")
	f.Add("B77\nAslurm.topology.addr=old,u=1\nUc2\nSc2", "u,slurm.topology.addr")
	f.Add("B101\nC100\nD3\nE4\nFc\nXsl\nYnv\nZa\n[b\n\\2\n]r", "")
	f.Add("B7\nAslurm.ntasks=lots,slurm.nnodes=+02,a=%2C\nLx\nK1e3", "slurm.ntasks")
	f.Add("Aslurm.job.id=9,nv.dl.run.uuid=R,service.name=s\nFc", "")
	f.Fuzz(func(t *testing.T, text, exclude string) {
		var ex []string
		if exclude != "" {
			ex = strings.Split(exclude, ",")
		}
		checkReference(t, slurmtest.LinesEnv(computeNames, text), ex)
	})
}
