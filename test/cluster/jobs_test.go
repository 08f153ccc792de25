//go:build cluster

package cluster

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spank-otel/spank-otel/libcarrier"
)

// submit exports the user's carrier in alice's shell, then runs body there.
func submit(body string) string {
	return "set -e; cd /shared; export OTEL_RESOURCE_ATTRIBUTES='" + userCarrier + "'\n" + body
}

// runJob runs body in alice's shell with the user's carrier exported
// (submit), then reads back what its tasks recorded under /shared/out/<tag>
// (collectN) and fails the test unless there are want of them.
func runJob(t testing.TB, tag string, want int, body string) []task {
	t.Helper()
	alice(t, submit(body))
	return collectN(t, tag, want)
}

// byStep splits tasks into the batch step and the others, by the name
// the job gave each file (Slurm 26.05 sets SLURM_STEP_ID in the batch
// script too, so the environment does not tell).
func byStep(tasks []task) (batch []task, steps []task) {
	for _, tk := range tasks {
		if strings.Contains(tk.name, ".batch.") {
			batch = append(batch, tk)
		} else {
			steps = append(steps, tk)
		}
	}
	return batch, steps
}

func TestBatchJobTwoNodesWithSteps(t *testing.T) {
	tag := outDir(t)
	tasks := runJob(t, tag, 6, fmt.Sprintf(`sbatch --wait -N2 -n4 -o /shared/out/%[1]s/slurm-%%j.out <<'EOF'
#!/bin/bash
env -0 > /shared/out/%[1]s/$SLURM_JOB_ID.batch.env
srun -N2 -n4 -o /shared/out/%[1]s/%%j.%%s.%%t.env env -0
srun -N1 -n1 -o /shared/out/%[1]s/%%j.%%s.%%t.env env -0
EOF`, tag))
	batch, steps := byStep(tasks)
	if len(batch) != 1 {
		t.Fatalf("got %d batch and %d step tasks, want 1 and 5: %v", len(batch), len(steps), names(tasks))
	}

	b := batch[0]
	battrs := b.attrs(t)
	checkIdentity(t, b, battrs)
	expect(t, b.name, battrs, map[string]string{
		"slurm.head_node.name":   b.env["SLURMD_NODENAME"],
		"slurm.nnodes":           "2",
		"slurm.ntasks":           "4",
		"slurm.array.count":      "1",
		"slurm.array.task_id":    "0",
		"slurm.array.job_id":     b.env["SLURM_JOB_ID"],
		"slurm.restart_count":    "0",
		"slurm.partition":        "debug",
		"deployment.environment": "prod",
	})
	for k := range battrs {
		if strings.HasPrefix(k, "slurm.topology.") {
			t.Errorf("batch step carries %s: topology must only be written in steps", k)
		}
	}
	if got := taskEnvOf(t, b, userCarrier, true); got != b.env["OTEL_RESOURCE_ATTRIBUTES"] {
		t.Errorf("batch: plugin wrote %q, spank-otel task-env computes %q", b.env["OTEL_RESOURCE_ATTRIBUTES"], got)
	}

	nodes := map[string]bool{}
	for _, s := range steps {
		attrs := s.attrs(t)
		checkIdentity(t, s, attrs)
		nodes[s.env["SLURMD_NODENAME"]] = true
		// Inherited values win: the counts and the head node come from
		// the batch step.
		expect(t, s.name, attrs, map[string]string{
			"slurm.head_node.name":        b.env["SLURMD_NODENAME"],
			"slurm.nnodes":                "2",
			"slurm.ntasks":                "4",
			"slurm.topology.addr":         s.env["SLURM_TOPOLOGY_ADDR"],
			"slurm.topology.addr_pattern": s.env["SLURM_TOPOLOGY_ADDR_PATTERN"],
			"nv.dl.job.uuid":              battrs["nv.dl.job.uuid"],
		})
		if s.env["SLURM_TOPOLOGY_ADDR"] == "" {
			t.Errorf("%s: Slurm gave the task no SLURM_TOPOLOGY_ADDR to check against", s.name)
		}
		// The file names say which step and task each is, as Slurm counts.
		if step, taskID := nameStepTask(t, s); attrs["slurm.step.id"] != step || attrs["slurm.task.id"] != taskID {
			t.Errorf("%s: step %q task %q, want %s and %s", s.name, attrs["slurm.step.id"], attrs["slurm.task.id"], step, taskID)
		}
		if got := taskEnvOf(t, s, b.env["OTEL_RESOURCE_ATTRIBUTES"], true); got != s.env["OTEL_RESOURCE_ATTRIBUTES"] {
			t.Errorf("%s: plugin wrote %q, spank-otel task-env computes %q", s.name, s.env["OTEL_RESOURCE_ATTRIBUTES"], got)
		}
	}
	if !nodes["c1"] || !nodes["c2"] {
		t.Errorf("steps ran on %v, want both c1 and c2", nodes)
	}
}

func TestSrunAlone(t *testing.T) {
	tag := outDir(t)
	tasks := runJob(t, tag, 3, fmt.Sprintf(`srun -N2 -n3 -o /shared/out/%s/%%j.%%s.%%t.env env -0`, tag))
	for _, tk := range tasks {
		attrs := tk.attrs(t)
		checkIdentity(t, tk, attrs)
		expect(t, tk.name, attrs, map[string]string{
			"slurm.nnodes":        "2",
			"slurm.ntasks":        "3",
			"slurm.topology.addr": tk.env["SLURM_TOPOLOGY_ADDR"],
		})
		if v, ok := attrs["slurm.head_node.name"]; ok {
			t.Errorf("%s: head node %q written outside the batch step", tk.name, v)
		}
		if got := taskEnvOf(t, tk, userCarrier, true); got != tk.env["OTEL_RESOURCE_ATTRIBUTES"] {
			t.Errorf("%s: plugin wrote %q, spank-otel task-env computes %q", tk.name, tk.env["OTEL_RESOURCE_ATTRIBUTES"], got)
		}
	}
}

func TestSallocWithSrun(t *testing.T) {
	tag := outDir(t)
	tasks := runJob(t, tag, 2, fmt.Sprintf(`salloc -N2 -n2 srun -o /shared/out/%s/%%j.%%s.%%t.env env -0`, tag))
	for _, tk := range tasks {
		attrs := tk.attrs(t)
		checkIdentity(t, tk, attrs)
		expect(t, tk.name, attrs, map[string]string{"slurm.nnodes": "2", "slurm.ntasks": "2"})
		if got := taskEnvOf(t, tk, userCarrier, true); got != tk.env["OTEL_RESOURCE_ATTRIBUTES"] {
			t.Errorf("%s: plugin wrote %q, spank-otel task-env computes %q", tk.name, tk.env["OTEL_RESOURCE_ATTRIBUTES"], got)
		}
	}
}

func TestArrayJob(t *testing.T) {
	tag := outDir(t)
	tasks := runJob(t, tag, 8, fmt.Sprintf(`sbatch --wait --array=0-3 -N1 -n1 -o /dev/null <<'EOF'
#!/bin/bash
env -0 > /shared/out/%[1]s/$SLURM_JOB_ID.batch.env
srun -o /shared/out/%[1]s/%%j.%%s.%%t.env env -0
EOF`, tag))
	uuids := map[string]bool{}
	ids := map[string]bool{}
	for _, tk := range tasks {
		attrs := tk.attrs(t)
		checkIdentity(t, tk, attrs)
		expect(t, tk.name, attrs, map[string]string{
			"slurm.array.job_id":  tk.env["SLURM_ARRAY_JOB_ID"],
			"slurm.array.task_id": tk.env["SLURM_ARRAY_TASK_ID"],
			"slurm.array.count":   "4",
		})
		uuids[attrs["nv.dl.job.uuid"]] = true
		ids[attrs["slurm.job.id"]] = true
	}
	if len(uuids) != 1 {
		t.Errorf("array elements carry %d different nv.dl.job.uuid values, want one: %v", len(uuids), uuids)
	}
	if len(ids) != 4 {
		t.Errorf("want 4 distinct slurm.job.id values, got %v", ids)
	}
}

func TestUserOptOut(t *testing.T) {
	tag := outDir(t)
	tasks := runJob(t, tag, 5, fmt.Sprintf(`
srun --otel-attrs=off -N1 -o /shared/out/%[1]s/off-set.%%t.env env -0
(unset OTEL_RESOURCE_ATTRIBUTES; srun --otel-attrs=off -N1 -o /shared/out/%[1]s/off-unset.%%t.env env -0)
sbatch --wait --otel-attrs=off -N1 -o /dev/null <<'EOF'
#!/bin/bash
env -0 > /shared/out/%[1]s/sbatch-off.batch.env
srun -o /shared/out/%[1]s/sbatch-off.step.%%t.env env -0
srun --otel-attrs=on -o /shared/out/%[1]s/sbatch-off-step-on.%%t.env env -0
EOF`, tag))
	for _, tk := range tasks {
		value, set := tk.env["OTEL_RESOURCE_ATTRIBUTES"]
		switch {
		case strings.HasPrefix(tk.name, "off-unset"):
			if set {
				t.Errorf("%s: opted out, yet OTEL_RESOURCE_ATTRIBUTES=%q", tk.name, value)
			}
		case strings.HasPrefix(tk.name, "sbatch-off-step-on"):
			if attrs := tk.attrs(t); attrs["slurm.job.id"] != tk.env["SLURM_JOB_ID"] {
				t.Errorf("%s: --otel-attrs=on in a step of an opted-out job should write attributes, got %q", tk.name, value)
			}
		default:
			if !set || value != userCarrier {
				t.Errorf("%s: opted out, want the user's value %q untouched, got %q (set %v)", tk.name, userCarrier, value, set)
			}
		}
	}
}

func TestBadOptionValueFailsClearly(t *testing.T) {
	out, errOut, err := clusterCmd(t, "", false, nil, "srun", "--otel-attrs=maybe", "true")
	if err == nil {
		t.Fatalf("srun --otel-attrs=maybe succeeded; want a clear error (stdout %q)", out)
	}
	if !strings.Contains(errOut, "--otel-attrs") || !strings.Contains(errOut, "off") {
		t.Errorf("srun's error does not name the option and its values:\n%s", errOut)
	}
}

func TestOptionInHelp(t *testing.T) {
	out := alice(t, "srun --help")
	if !strings.Contains(out, "--otel-attrs") {
		t.Errorf("srun --help does not list --otel-attrs:\n%s", out)
	}
}

func TestRealSDKInTask(t *testing.T) {
	// Build the probe, a Go program on the OpenTelemetry Go SDK, and put it
	// on the shared volume.
	probe := filepath.Join(t.TempDir(), "sdkprobe")
	// A module of its own, so that the plugin's module does not need the SDK.
	build := exec.Command("go", "build", "-o", probe, ".")
	build.Dir = "sdkprobe"
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the SDK probe: %v\n%s", err, out)
	}
	bin, err := os.Open(probe)
	if err != nil {
		t.Fatal(err)
	}
	defer bin.Close()
	if _, errOut, err := clusterCmd(t, "", false, bin, "bash", "-c", "cat > /shared/sdkprobe && chmod 755 /shared/sdkprobe"); err != nil {
		t.Fatalf("copying the probe: %v %s", err, errOut)
	}

	out := alice(t, submit(`srun -N1 bash -c 'printf "%s\n" "$OTEL_RESOURCE_ATTRIBUTES"; /shared/sdkprobe'`))
	lines := strings.SplitN(strings.TrimSpace(out), "\n", 2)
	if len(lines) != 2 {
		t.Fatalf("want the carrier and the SDK's JSON, got %q", out)
	}
	ours, warnings := libcarrier.Parse(lines[0])
	if len(warnings) > 0 {
		t.Fatalf("carrier %q: %v", lines[0], warnings)
	}
	var sdk map[string]string
	if err := json.Unmarshal([]byte(lines[1]), &sdk); err != nil {
		t.Fatalf("SDK output %q: %v", lines[1], err)
	}
	for k, v := range ours {
		if sdk[k] != v {
			t.Errorf("SDK reads %s = %q, the plugin wrote %q", k, sdk[k], v)
		}
	}
	if ours["user.team"] != "ml,infra" || ours["slurm.job.user"] != "alice" {
		t.Errorf("unexpected attributes %v", ours)
	}
}

func TestConcurrentSteps(t *testing.T) {
	tag := outDir(t)
	tasks := runJob(t, tag, 30, fmt.Sprintf(`sbatch --wait -N2 -n2 -o /shared/out/%[1]s/slurm.out <<'EOF'
#!/bin/bash
for i in $(seq 30); do
  srun --overlap -N1 -n1 -o /shared/out/%[1]s/%%j.%%s.%%t.env env -0 &
done
fail=0; for j in $(jobs -p); do wait $j || fail=1; done
exit $fail
EOF`, tag))
	for _, tk := range tasks {
		attrs := tk.attrs(t)
		checkIdentity(t, tk, attrs)
		expect(t, tk.name, attrs, map[string]string{"slurm.topology.addr": tk.env["SLURM_TOPOLOGY_ADDR"]})
	}
}

func expect(t testing.TB, name string, attrs, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if got, ok := attrs[k]; !ok || got != v {
			t.Errorf("%s: %s = %q (present %v), want %q", name, k, got, ok, v)
		}
	}
}

func names(tasks []task) []string {
	var out []string
	for _, tk := range tasks {
		out = append(out, tk.name)
	}
	return out
}
