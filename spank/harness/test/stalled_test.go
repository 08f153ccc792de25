//go:build harness

package test

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spank-otel/spank-otel/cgo/nodefiles"
)

// stallBound is what the recording may take past its timeout: the kill
// reserve (at most 100 ms) and the start of stepdrive, on a loaded
// machine.
const stallBound = 700 * time.Millisecond

// hangFile mounts test/fusehang over root/name: reads of it never return,
// as a wedged GPU driver's. The returned stop ends the server, which
// frees every reader, and checks that no process whose command line names
// root is left.
func hangFile(t *testing.T, root, name string) (stop func()) {
	t.Helper()
	cmd := exec.Command(need(t, "fusehang"), filepath.Join(root, name))
	out, err := cmd.StdoutPipe()
	assertNil(t, err)
	cmd.Stderr = os.Stderr
	assertNil(t, cmd.Start())
	line, _ := bufio.NewReader(out).ReadString('\n')
	if line != "ready\n" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("fusehang over %s: %q", name, line)
	}
	return func() {
		t.Helper()
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
		deadline := time.Now().Add(5 * time.Second)
		for {
			left := processesNaming(root)
			if len(left) == 0 {
				return
			}
			if time.Now().After(deadline) {
				t.Errorf("left running after the file system ended: %v", left)
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// processesNaming lists "pid state" of the live processes whose command
// line contains s (a zombie has none).
func processesNaming(s string) []string {
	var found []string
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		cmdline, err := os.ReadFile(d + "/cmdline")
		if err != nil || !strings.Contains(string(cmdline), s) {
			continue
		}
		stat, _ := os.ReadFile(d + "/stat")
		state := "?"
		if i := strings.LastIndexByte(string(stat), ')'); i > 0 && i+2 < len(stat) {
			state = string(stat[i+2])
		}
		found = append(found, filepath.Base(d)+" "+state)
	}
	return found
}

// TestNodeFilesStalled: a driver file or gres.conf whose read never
// returns stalls the step parent's recording only until its timeout. The
// records are then one stalled record naming the file, the reader stays
// blocked in the kernel (the case is real: SIGKILL does not free it), a
// GPU task gets its attributes without GPU keys and a warning naming the
// file, within its own timeout, and nothing is left once the file system
// answers again.
func TestNodeFilesStalled(t *testing.T) {
	l := newLab(t)
	drive := need(t, "stepdrive")
	pci := []string{"0000:1b:00.0", "0000:2b:00.0"}
	for _, hung := range []string{
		"/proc/driver/nvidia/gpus/" + pci[1] + "/information",
		"/etc/slurm/gres.conf",
	} {
		check(t, "node files: a read that never returns: "+hung, func(t *testing.T) {
			root := fakeNode(t, nodeCase{pci: pci, order: []int{0, 1}, cgroup: "ConstrainDevices=yes\n"})
			env := filepath.Join(t.TempDir(), "env")
			assertNil(t, os.WriteFile(env, []byte(strings.Join(append(taskVars(map[string]string{
				"CUDA_VISIBLE_DEVICES": "0", "SLURM_STEP_GPUS": "1", "SLURM_GPUS_ON_NODE": "1"}),
				"SLURM_JOB_ID=7", "SLURM_STEP_ID=0", "SLURM_CLUSTER_NAME=c", "SLURM_JOB_USER=alice", "SLURM_SUBMIT_DIR=/"), "\n")+"\n"), 0o644))
			stop := hangFile(t, root, hung)
			defer stop()

			const timeout = 1000
			start := time.Now()
			cmd := exec.Command(drive, "--dump-node-files", root, "--env-file", env, "--timeout", "1000")
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			took := time.Since(start)
			if err != nil {
				t.Fatalf("--dump-node-files: %v, %s", err, stderr.String())
			}
			if took < timeout*time.Millisecond*9/10 || took > timeout*time.Millisecond+stallBound {
				t.Errorf("the recording took %v, want its timeout of %d ms (+ at most %v)", took, timeout, stallBound)
			}
			want := string(nodefiles.AppendRecord(nil, nodefiles.KindStalled, hung, nil))
			if string(out) != want {
				t.Errorf("records %q, want %q", out, want)
			}
			if !strings.Contains(stderr.String(), "stalled reading "+hung) || !strings.Contains(stderr.String(), "left behind") {
				t.Errorf("stderr %q names no stalled file left behind", stderr.String())
			}
			blocked := false
			for _, p := range processesNaming(root) {
				blocked = blocked || strings.HasSuffix(p, " D")
			}
			if !blocked {
				t.Errorf("no reader blocked in the kernel (%v): the case tests nothing", processesNaming(root))
			}

			// A task of such a step: the library is handed the stalled
			// record and reads nothing of the node.
			start = time.Now()
			// The lab's copy: the checkout may sit below a directory others can
			// write (mktemp -d in /tmp), which the library's path rule refuses.
			r := l.drive(t, "--lib", l.lib(t, "real"), "--node-files", root, "--env-file", env, "--timeout", "1000")
			took = time.Since(start)
			r.expect(t, 0, `^task=0 status=called rc=1 value=.*slurm\.job\.id=7`, `!^task=0 status=.* value=.*nv\.gpu\.`,
				`no GPU UUIDs: .*reading `+regexp.QuoteMeta(hung)+` did not finish within the plugin's timeout`,
				`gpu search: node files from the step, whose reading stalled: none read`)
			if took > 2*timeout*time.Millisecond+stallBound {
				t.Errorf("the task took %v: its recording's timeout and its own, at most", took)
			}
		})
	}
}
