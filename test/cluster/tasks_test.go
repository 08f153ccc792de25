//go:build cluster

package cluster

import (
	"fmt"
	"strings"
	"testing"
)

// TestNestedStep: a srun inside a step's task is a step of its own, whose
// tasks write their own step, rank and node over the outer task's keys
// they inherit. When the inner step's plugin leaves the carrier alone
// (here --otel-attrs=off), its tasks keep the outer task's keys: the leak
// docs/spec.md §3 documents, checked here as documented.
func TestNestedStep(t *testing.T) {
	tag := outDir(t)
	out := "/shared/out/" + tag
	tasks := runJob(t, tag, 5, fmt.Sprintf(`sbatch --wait -N1 -n2 -o %[1]s/job.out <<'EOF'
#!/bin/bash
set -e
# The outer step leaves memory for the inner ones (the site profile
# counts it).
srun -n1 --mem=64M -o %[1]s/outer.%%s.%%t.env bash -c '
env -0
srun --overlap --mem=32M -n2 -o %[1]s/inner.%%s.%%t.env env -0
srun --overlap --mem=32M -n2 --otel-attrs=off -o %[1]s/off.%%s.%%t.env env -0'
EOF`, out))
	var outer task
	for _, tk := range tasks {
		if strings.HasPrefix(tk.name, "outer.") {
			outer = tk
		}
	}
	oattrs := outer.attrs(t)
	checkIdentity(t, outer, oattrs)
	for _, tk := range tasks {
		attrs := tk.attrs(t)
		step, taskID := nameStepTask(t, tk)
		switch {
		case strings.HasPrefix(tk.name, "inner."):
			checkIdentity(t, tk, attrs)
			if attrs["slurm.step.id"] != step || attrs["slurm.task.id"] != taskID || step == oattrs["slurm.step.id"] {
				t.Errorf("%s: step %q task %q, want its own step %s and task %s (outer step %q)",
					tk.name, attrs["slurm.step.id"], attrs["slurm.task.id"], step, taskID, oattrs["slurm.step.id"])
			}
		case strings.HasPrefix(tk.name, "off."):
			if attrs["slurm.job.id.raw"] != tk.env["SLURM_JOB_ID"] {
				t.Errorf("%s: job keys %v, want the job's", tk.name, attrs)
			}
			for key := range taskKeys {
				if attrs[key] != oattrs[key] {
					t.Errorf("%s: %s = %q; as documented, an inner step whose plugin leaves the carrier keeps the outer task's %q",
						tk.name, key, attrs[key], oattrs[key])
				}
			}
			if tk.env["SLURM_STEP_ID"] == oattrs["slurm.step.id"] {
				t.Errorf("%s: ran in the outer step: the test did not start another", tk.name)
			}
		}
	}
}

// nameStepTask returns the step and task ids srun put in tk's file name
// (PREFIX.%s.%t.env): Slurm's own, a second oracle beside the variables.
func nameStepTask(t testing.TB, tk task) (step, taskID string) {
	t.Helper()
	f := strings.Split(strings.TrimSuffix(tk.name, ".env"), ".")
	if len(f) < 3 {
		t.Fatalf("%s: not PREFIX.STEP.TASK.env", tk.name)
	}
	return f[len(f)-2], f[len(f)-1]
}

// TestRankOption: the rank keys are written only when asked for, by the
// job (--otel-rank of srun or sbatch) or by the site (rank=on), and then
// from each step task's own variables; otherwise the user's own
// nv.dl.rank is kept. The batch script writes none either way.
func TestRankOption(t *testing.T) {
	ranks := map[string]string{"nv.dl.rank": "SLURM_PROCID", "nv.dl.world_size": "SLURM_STEP_NUM_TASKS", "nv.dl.local_rank": "SLURM_LOCALID"}
	check := func(t *testing.T, tasks []task, asked bool) {
		t.Helper()
		for _, tk := range tasks {
			attrs := tk.attrs(t)
			checkJobIdentity(t, tk, attrs)
			for key, name := range ranks {
				want := tk.env[name]
				switch {
				case asked && !inStep(tk):
					want = "" // a job context writes none, and removes the user's
				case !asked && key == "nv.dl.rank":
					want = "7"
				case !asked:
					want = ""
				}
				if attrs[key] != want {
					t.Errorf("%s: %s = %q, want %q (ranks asked for: %v)", tk.name, key, attrs[key], want, asked)
				}
			}
		}
	}
	job := func(t *testing.T, want int, body string) []task {
		t.Helper()
		tag := outDir(t)
		alice(t, "set -e; cd /shared; export OTEL_RESOURCE_ATTRIBUTES=nv.dl.rank=7\n"+fmt.Sprintf(body, "/shared/out/"+tag))
		return collectN(t, tag, want)
	}
	t.Run("default off", func(t *testing.T) {
		check(t, job(t, 3, `srun -N2 -n3 -o %s/%%j.%%s.%%t.env env -0`), false)
	})
	t.Run("srun --otel-rank", func(t *testing.T) {
		check(t, job(t, 3, `srun -N2 -n3 --otel-rank -o %s/%%j.%%s.%%t.env env -0`), true)
	})
	t.Run("sbatch --otel-rank holds for the job's steps", func(t *testing.T) {
		check(t, job(t, 4, `sbatch --wait --otel-rank -N2 -n3 -o /dev/null --wrap 'env -0 > %[1]s/batch.env; srun -o %[1]s/%%j.%%s.%%t.env env -0'`), true)
	})
	t.Run("rank=on", func(t *testing.T) {
		setPlugstack(t, "lib="+installedLib+" rank=on")
		defer restorePlugstack(t)
		check(t, job(t, 2, `srun -N2 -n2 -o %s/%%j.%%s.%%t.env env -0`), true)
		t.Run("--otel-rank=off wins", func(t *testing.T) {
			check(t, job(t, 2, `srun -N2 -n2 --otel-rank=off -o %s/%%j.%%s.%%t.env env -0`), false)
		})
	})
}
