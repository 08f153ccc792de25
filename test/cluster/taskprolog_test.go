//go:build cluster

package cluster

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"
)

// taskProlog is a piece of the cluster's TaskProlog (test/slurm-docker/
// task-prolog.sh runs every executable in task-prolog.d), so the test adds
// the recipe beside the OTLP endpoint piece instead of replacing it.
const taskProlog = "/etc/slurm/task-prolog.d/50-spank-otel"

// withTaskProlog adds script to the nodes' TaskProlog for the rest of the
// test, the way a site without the plugin would, and waits until both
// compute nodes run it.
func withTaskProlog(t *testing.T, script string) {
	t.Helper()
	asRoot(t, fmt.Sprintf("cat > %[1]s <<'EOF'\n%[2]sEOF\nchmod 0755 %[1]s", taskProlog, script), "c1", "c2", "c3")
	t.Cleanup(func() {
		asRoot(t, "rm -f "+taskProlog, "c1", "c2", "c3")
		waitTaskProlog(t, false)
	})
	waitTaskProlog(t, true)
}

// waitTaskProlog waits until the TaskProlog runs (or no longer runs) on c1
// and c2.
func waitTaskProlog(t *testing.T, running bool) {
	t.Helper()
	want := ""
	if running {
		want = "1\n1\n"
	}
	var got string
	if !waitFor(30*time.Second, time.Second, func() bool {
		got, _, _ = clusterCmd(t, "", false, nil, "bash", "-c",
			`srun --otel-attrs=off -N2 -n2 -w c1,c2 bash -c 'echo "$TASKPROLOG_RAN"' | grep -x 1 || true`)
		return got == want
	}) {
		t.Fatalf("TaskProlog running=%v not in effect after 30 s: %q", running, got)
	}
}

// TestTaskPrologRecipe: with the plugin off and a TaskProlog that runs
// `spank-otel export`, every task of a batch job and of its steps gets the
// attributes the plugin gives. README, "Without the plugin", documents this
// recipe.
func TestTaskPrologRecipe(t *testing.T) {
	job := func(tag, prefix, opt string) {
		alice(t, submit(fmt.Sprintf(`sbatch --wait %[3]s -N2 -n4 -w c1,c2 -o /dev/null <<'EOF'
#!/bin/bash
env -0 > /shared/out/%[1]s/%[2]s.batch.env
srun -N2 -n4 -o /shared/out/%[1]s/%[2]s.%%s.%%t.env env -0
srun -N1 -n1 -w c2 -o /shared/out/%[1]s/%[2]s.%%s.%%t.env env -0
EOF`, tag, prefix, opt)))
	}
	tag := outDir(t)
	job(tag, "plugin", "")
	withTaskProlog(t, "#!/bin/sh\necho export TASKPROLOG_RAN=1\nexec /usr/bin/spank-otel export\n")
	job(tag, "prolog", "--otel-attrs=off")

	tasks := collect(t, tag)
	byName := map[string]task{}
	for _, tk := range tasks {
		byName[tk.name] = tk
	}
	if len(tasks) != 12 {
		t.Fatalf("got %d tasks, want 2 jobs of 6: %v", len(tasks), names(tasks))
	}
	for _, tk := range tasks {
		if !strings.HasPrefix(tk.name, "prolog.") {
			continue
		}
		if tk.env["TASKPROLOG_RAN"] != "1" {
			t.Errorf("%s: the TaskProlog did not run", tk.name)
		}
		// The plugin's twin: the same role in the job that ran with it.
		twin, ok := byName["plugin."+strings.TrimPrefix(tk.name, "prolog.")]
		if !ok {
			t.Errorf("%s: no task of the same role in the plugin's job", tk.name)
			continue
		}
		got, want := tk.attrs(t), twin.attrs(t)
		checkIdentity(t, tk, got)
		checkIdentity(t, twin, want)
		if _, ok := got["slurm.head_node.name"]; !ok {
			t.Errorf("%s: no slurm.head_node.name", tk.name)
		}
		if strings.HasSuffix(tk.name, ".batch.env") {
			for k := range got {
				if strings.HasPrefix(k, "slurm.topology.") {
					t.Errorf("%s: the batch script's TaskProlog wrote %s, which every step would inherit", tk.name, k)
				}
			}
		}
		// The values that name the job differ between the two jobs;
		// checkIdentity has checked them against each job's variables.
		for _, k := range []string{"slurm.job.id", "slurm.job.id.raw", "slurm.array.job_id", "nv.dl.job.uuid", "slurm.sluid"} {
			delete(got, k)
			delete(want, k)
		}
		if !maps.Equal(got, want) {
			t.Errorf("%s: the TaskProlog gives\n  %v\nthe plugin gives\n  %v", tk.name, sorted(got), sorted(want))
		}
	}
}

func sorted(m map[string]string) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, k+"="+m[k])
	}
	return out
}
