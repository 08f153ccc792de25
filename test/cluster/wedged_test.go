//go:build cluster

package cluster

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// wedgedBound is what a step may take beyond the plugin's timeout (2000
// ms, the default) when a file the plugin reads never answers: the srun
// itself on these two-core nodes, with room for a loaded machine.
const wedgedBound = 8 * time.Second

// readerName is the step parent's reading process (spank/nodefiles.h).
const readerName = "spank-otel-rd"

// buildFusehang compiles test/fusehang for the host: it serves the hung
// file from here, mounted in a node's mount namespace.
func buildFusehang(t *testing.T) string {
	t.Helper()
	flags, err := exec.Command("pkg-config", "--cflags", "--libs", "fuse3").Output()
	if err != nil {
		t.Fatalf("pkg-config fuse3 (make cluster-test installs libfuse3-dev): %v", err)
	}
	out := filepath.Join(t.TempDir(), "fusehang")
	args := append([]string{"-O2", "-o", out, filepath.Join(repoRoot(t), "test", "fusehang", "fusehang.c")},
		strings.Fields(string(flags))...)
	if b, err := exec.Command("cc", args...).CombinedOutput(); err != nil {
		t.Fatalf("building fusehang: %v\n%s", err, b)
	}
	return out
}

// hangOnNode mounts a file whose reads never return over name on node.
// The returned stop ends it, which frees every reader.
func hangOnNode(t *testing.T, fusehang, node, name string) (stop func()) {
	t.Helper()
	pid, err := exec.Command(filepath.Join(repoRoot(t), "test", "slurm-docker", "cluster"),
		"pid", "--slurm", *slurmVersion, "--node", node).Output()
	if err != nil {
		t.Fatalf("cluster pid --node %s: %v", node, err)
	}
	cmd := exec.Command(fusehang, "--mntns", strings.TrimSpace(string(pid)), name)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if line, _ := bufio.NewReader(stdout).ReadString('\n'); line != "ready\n" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("fusehang over %s on %s: %q", name, node, line)
	}
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	}
	t.Cleanup(stop)
	return stop
}

// readersOn lists node's processes named readerName: "pid state".
func readersOn(t *testing.T, node string) []string {
	t.Helper()
	out, errOut, err := clusterCmd(t, node, true, nil, "bash", "-c",
		`for p in $(pgrep -x `+readerName+`); do echo "$p $(awk '{print $3}' /proc/$p/stat 2>/dev/null)"; done`)
	if err != nil {
		t.Fatalf("%s: listing readers: %v %s", node, err, errOut)
	}
	return strings.Fields(strings.ReplaceAll(strings.TrimSpace(out), " ", ":"))
}

// TestWedgedGPU (issue 43, section 1): on a GPU node whose driver file or
// gres.conf never answers a read, as a wedged driver's or a hung NFS
// server's, a GPU step and a CPU step both run. The GPU step waits for
// the plugin's timeout at most, its task gets its Slurm keys and no GPU
// keys, and the log names the file; the CPU step reads none of the node's
// files. The reader the kernel holds ends once the file answers, and the
// node stays in service.
func TestWedgedGPU(t *testing.T) {
	needGPUs(t)
	fusehang := buildFusehang(t)
	gpus := nodeGPUs(t, "c1") // before any file hangs
	for _, hung := range []string{
		"/proc/driver/nvidia/gpus/" + gpus[1].pci + "/information",
		"/etc/slurm/gres.conf",
	} {
		t.Run(hung, func(t *testing.T) {
			if left := readersOn(t, "c1"); len(left) > 0 {
				t.Fatalf("readers running before the test: %v", left)
			}
			stop := hangOnNode(t, fusehang, "c1", hung)
			mark := logMark(t)
			tag := outDir(t)
			// Each srun timed in the job, in milliseconds.
			tasks := runJob(t, tag, 2, fmt.Sprintf(`sbatch --wait -N1 -w c1 --gres=gpu:2 -o /shared/out/%[1]s/slurm-%%j.out <<'EOF'
#!/bin/bash
t0=$(date +%%s%%N)
srun -n1 --gres=gpu:2 -o /shared/out/%[1]s/gpu.%%j.%%s.%%t.env env -0
t1=$(date +%%s%%N)
srun -n1 --gres=none -o /shared/out/%[1]s/cpu.%%j.%%s.%%t.env env -0
t2=$(date +%%s%%N)
echo "gpu_ms=$(( (t1 - t0) / 1000000 )) cpu_ms=$(( (t2 - t1) / 1000000 ))" > /shared/out/%[1]s/times
EOF`, tag))
			times := alice(t, "cat /shared/out/"+tag+"/times")
			var gpuMs, cpuMs int
			if _, err := fmt.Sscanf(times, "gpu_ms=%d cpu_ms=%d", &gpuMs, &cpuMs); err != nil {
				t.Fatalf("times %q: %v", times, err)
			}
			t.Logf("the GPU step took %d ms, the CPU step %d ms (timeout= 2000 ms)", gpuMs, cpuMs)
			if limit := 2*time.Second + wedgedBound; time.Duration(gpuMs)*time.Millisecond > limit {
				t.Errorf("the GPU step took %d ms, over timeout= plus %v", gpuMs, wedgedBound)
			}
			if time.Duration(cpuMs)*time.Millisecond > wedgedBound {
				t.Errorf("the CPU step took %d ms, over %v", cpuMs, wedgedBound)
			}
			for _, tk := range tasks {
				attrs := tk.attrs(t)
				if attrs["slurm.job.id"] != tk.env["SLURM_JOB_ID"] {
					t.Errorf("%s: no Slurm identity: %v", tk.name, attrs)
				}
				for k := range attrs {
					if strings.HasPrefix(k, "nv.gpu.") {
						t.Errorf("%s: GPU key %s from a stalled step", tk.name, k)
					}
				}
				if strings.HasPrefix(tk.name, "gpu.") && tk.env["SLURM_STEP_GPUS"] == "" {
					t.Errorf("%s: the GPU step's task names no GPUs: %v", tk.name, tk.list)
				}
			}
			lines := newLogLines(t, mark)
			has := func(sub string) int {
				n := 0
				for _, l := range lines {
					if strings.Contains(l, sub) {
						n++
					}
				}
				return n
			}
			stalled := "node files: reading " + hung + " did not finish within 2000 ms"
			if has(stalled) != 1 || has("stays blocked in the kernel") != 1 {
				t.Errorf("want one error line %q naming the reader left behind, in:\n%s", stalled, strings.Join(lines, "\n"))
			}
			if has("did not finish within the plugin's timeout") != 1 {
				t.Errorf("want the GPU task's note naming the file, in:\n%s", strings.Join(lines, "\n"))
			}
			for _, tk := range tasks {
				if !strings.HasPrefix(tk.name, "cpu.") {
					continue
				}
				step := "[" + tk.env["SLURM_JOB_ID"] + "." + tk.env["SLURM_STEP_ID"] + "]"
				said := false
				for _, l := range lines {
					said = said || strings.Contains(l, step) && strings.Contains(l, "node files: not recorded, the step has no GPUs on this node")
				}
				if !said {
					t.Errorf("the CPU step %s did not say it recorded none of the node's files:\n%s", step, strings.Join(lines, "\n"))
				}
				for _, l := range lines {
					if strings.Contains(l, step) && strings.Contains(l, "node files:") && !strings.Contains(l, "not recorded") {
						t.Errorf("the CPU step read the node's files: %s", l)
					}
				}
			}
			held := readersOn(t, "c1")
			if len(held) != 1 || !strings.HasSuffix(held[0], ":D") {
				t.Errorf("readers on c1 while the file hangs: %v, want one blocked in the kernel (D)", held)
			}

			stop()
			if !waitFor(10*time.Second, 200*time.Millisecond, func() bool { return len(readersOn(t, "c1")) == 0 }) {
				t.Errorf("readers left on c1 once the file answers: %v", readersOn(t, "c1"))
			}
			state := strings.TrimSpace(alice(t, "sinfo -h -n c1 -o %T"))
			if state != "idle" && state != "mixed" && state != "allocated" {
				t.Errorf("c1 is %q after the step, want it in service", state)
			}
		})
	}
}
