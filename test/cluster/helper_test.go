//go:build cluster

package cluster

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The test-only pieces in the node images (test/spankprobe, test/faultlib,
// spank/harness/testdata/evil.c; see the Makefile's testlibs).
const (
	testLibDir = "/usr/lib/spank-otel-test"
	probeSo    = testLibDir + "/spankprobe.so"
	faultLib   = testLibDir + "/libfault.so"
	evilLib    = testLibDir + "/libevil.so"
	imageEnv   = testLibDir + "/image.env"
	// Where libevil.so's constructor leaves its mark if it ever runs.
	evilMarker = "/shared/evil-ran"
	stackDir   = "/etc/slurm/plugstack.conf.d"
)

// withStack adds plugstack.conf.d files (name → line) on the compute nodes
// for the rest of the test. The include sorts file names, so a name before
// "spank-otel.conf" runs before spank-otel, one after it runs after.
func withStack(t *testing.T, files map[string]string) {
	t.Helper()
	var add, remove strings.Builder
	for name, line := range files {
		fmt.Fprintf(&add, "printf '%%s\\n' %q > %s/%s\n", line, stackDir, name)
		fmt.Fprintf(&remove, "rm -f %s/%s\n", stackDir, name)
	}
	nodes := strings.Fields(computeNodes)
	asRoot(t, add.String(), nodes...)
	t.Cleanup(func() { asRoot(t, remove.String(), nodes...) })
}

// probeState is one SPANK_PROBE_<NAME> summary: field → value.
type probeState map[string]string

func probeOf(t testing.TB, tk task, name string) probeState {
	t.Helper()
	v, ok := tk.env["SPANK_PROBE_"+name]
	if !ok {
		t.Fatalf("%s: no SPANK_PROBE_%s: the probe plugin did not run", tk.name, name)
	}
	p := probeState{}
	for _, f := range strings.Fields(v) {
		if k, val, ok := strings.Cut(f, "="); ok {
			p[k] = val
		}
	}
	return p
}

// fdCount is the number of descriptors in a probe's "fds=HASH/COUNT".
func fdCount(p probeState) int {
	_, n, _ := strings.Cut(p["fds"], "/")
	v, _ := strconv.Atoi(n)
	return v
}

// TestTaskProcessUntouched: the task process leaves spank-otel's
// callbacks as it came (taskUntouched).
func TestTaskProcessUntouched(t *testing.T) {
	withProbes(t)
	taskUntouched(t)
}

// withProbes places a probe plugin before spank-otel and one after it, as
// a container plugin after spank-otel would be placed.
func withProbes(t *testing.T) {
	t.Helper()
	withStack(t, map[string]string{
		"aa-probe.conf": "required " + probeSo + " role=probe name=BEFORE",
		"zz-probe.conf": "required " + probeSo + " role=probe name=AFTER",
	})
}

// taskUntouched runs a job between withProbes' two probes and checks that
// each task left spank-otel's callbacks as it came, but for its socket to
// the step's helper, closed.
func taskUntouched(t *testing.T) {
	t.Helper()
	tag := outDir(t)
	tasks := runJob(t, tag, 9, fmt.Sprintf(`sbatch --wait -N2 -n4 -o /shared/out/%[1]s/slurm.out <<'EOF'
#!/bin/bash
env -0 > /shared/out/%[1]s/$SLURM_JOB_ID.batch.env
srun -N2 -n4 -o /shared/out/%[1]s/on.%%s.%%t.env env -0
srun --otel-attrs=off -N2 -n4 -o /shared/out/%[1]s/off.%%s.%%t.env env -0
EOF`, tag))
	offFDs := map[string]int{} // node → descriptors of a task with the plugin off
	for _, tk := range tasks {
		if strings.HasPrefix(tk.name, "off.") {
			offFDs[tk.env["SLURMD_NODENAME"]] = fdCount(probeOf(t, tk, "AFTER"))
		}
	}
	for _, tk := range tasks {
		before, after := probeOf(t, tk, "BEFORE"), probeOf(t, tk, "AFTER")
		if after["threads"] != "1" {
			t.Errorf("%s: a plugin after spank-otel sees %s threads, want 1", tk.name, after["threads"])
		}
		if after["children"] != "0" {
			t.Errorf("%s: the task has %s child processes after spank-otel, want 0", tk.name, after["children"])
		}
		for _, k := range []string{"sigaction", "sigpipe", "sigmask", "pending", "altstack", "limits", "maps", "uid",
			"umask", "cwd", "oom_score_adj", "env"} {
			if before[k] != after[k] {
				t.Errorf("%s: %s changed across spank-otel's task_init: %s -> %s", tk.name, k, before[k], after[k])
			}
		}
		if strings.HasPrefix(tk.name, "off.") {
			continue
		}
		// Between the two probes only plugin code runs in the task child,
		// so the descriptors after spank-otel's task_init are exactly
		// those before it minus its socket to the step's helper. A
		// comparison with a plugin-off step would not do: how many of
		// slurmstepd's connections a task inherits depends on when it
		// was forked, and differed by 2-3 between steps here.
		beforeFDs, afterFDs := strings.Split(before["fd_list"], ","), strings.Split(after["fd_list"], ",")
		if n := len(beforeFDs) - len(afterFDs); n != 1 {
			t.Errorf("%s: spank-otel's task_init closed %d descriptors, want 1, the task's socket to the step's helper (before %s, after %s)", tk.name, n, before["fd_list"], after["fd_list"])
		}
		for _, fd := range afterFDs {
			if !slices.Contains(beforeFDs, fd) {
				t.Errorf("%s: descriptor %s is new after spank-otel's task_init (before %s, after %s)", tk.name, fd, before["fd_list"], after["fd_list"])
			}
		}
		if strings.HasPrefix(tk.name, "on.") {
			t.Logf("%s: %d descriptors after spank-otel, %d in a task of the plugin-off step", tk.name, len(afterFDs), offFDs[tk.env["SLURMD_NODENAME"]])
		}
		checkIdentity(t, tk, tk.attrs(t))
	}
}

// goRuntimeLine matches the library's own report from inside Go.
var goRuntimeLine = regexp.MustCompile(`go runtime: GOMAXPROCS=(\d+) threads<=(\d+) gc=(\w+) stack=(\w+)`)

func TestGoRuntimeInHelper(t *testing.T) {
	withStack(t, map[string]string{"zz-probe.conf": "required " + probeSo + " role=probe name=AFTER"})
	tag := outDir(t)
	mark := logMark(t)
	tasks := runJob(t, tag, 1, fmt.Sprintf(`srun -N1 -n1 -c2 -o /shared/out/%s/task.env env -0`, tag))
	cpus, _ := strconv.Atoi(probeOf(t, tasks[0], "AFTER")["cpus"])
	if cpus < 2 {
		t.Fatalf("the task's CPU mask has %d CPUs; the test needs at least 2", cpus)
	}
	var found []string
	for _, l := range newLogLines(t, mark) {
		if m := goRuntimeLine.FindStringSubmatch(l); m != nil {
			found = append(found, l)
			if m[1] != "1" || m[3] != "off" {
				t.Errorf("the helper's Go runtime: GOMAXPROCS=%s gc=%s, want 1 and off (task mask: %d CPUs): %s", m[1], m[3], cpus, l)
			}
			if n, _ := strconv.Atoi(m[2]); n > 8 {
				t.Errorf("the helper's Go runtime runs up to %d threads: %s", n, l)
			}
			// The call fitted the 4 KB stack of a call from C on a real
			// node (cgo's TestTaskPathStack measures it off the node).
			if m[4] != "kept" {
				t.Errorf("the helper's call outgrew its 4 KB stack: %s", l)
			}
		}
	}
	if len(found) != 1 {
		t.Errorf("want one go runtime line for the one task, got %d: %v", len(found), found)
	}
	t.Logf("task mask: %d CPUs; %v", cpus, found)
}

// TestContainerPlugin keeps, of the container-like test plugin
// (test/spankprobe, role=container), only what real pyxis cannot show: a
// container whose /proc the user forged. The plugin runs before spank-otel
// as pyxis does in the recommended order: it moves the task into a new
// user and mount namespace, imports the image's environment and mounts
// over /proc a tree whose fd links lead to libevil.so. spank-otel's
// task_init then runs in that namespace; the library behind the forged
// /proc must never run, and the identity is written. The plugstack orders,
// the import and --container-env are proven with the real pyxis and enroot
// (pyxis_test.go).
func TestContainerPlugin(t *testing.T) {
	image := map[string]string{"container.image.name": "pytorch:25.01", "deployment.environment": "image"}
	withStack(t, map[string]string{"00-container.conf": "required " + probeSo + " role=container image_env=" + imageEnv + " forge_proc=" + evilLib})
	asRoot(t, "rm -f "+evilMarker, strings.Fields(computeNodes)...)
	tag := outDir(t)
	tasks := runJob(t, tag, 3, fmt.Sprintf(`sbatch --wait -N2 -n2 -o /shared/out/%[1]s/slurm.out <<'EOF'
#!/bin/bash
env -0 > /shared/out/%[1]s/$SLURM_JOB_ID.batch.env
srun -N2 -n2 -o /shared/out/%[1]s/%%j.%%s.%%t.env env -0
EOF`, tag))
	for _, tk := range tasks {
		if got := tk.env["SPANK_CONTAINER"]; got != "ok" {
			t.Errorf("%s: the container-like plugin failed: %q", tk.name, got)
		}
		if tk.env["IMAGE_ONLY"] != "from-the-image" {
			t.Errorf("%s: the image's environment was not imported", tk.name)
		}
		attrs := tk.attrs(t)
		checkJobIdentity(t, tk, attrs)
		for k, v := range image {
			if attrs[k] != v {
				t.Errorf("%s: %s = %q, want the image's %q (carrier %q)", tk.name, k, attrs[k], v, tk.env["OTEL_RESOURCE_ATTRIBUTES"])
			}
		}
	}
	for _, node := range strings.Fields(computeNodes) {
		if out, _, _ := clusterCmd(t, node, true, nil, "bash", "-c", "ls "+evilMarker+" 2>/dev/null; true"); strings.TrimSpace(out) != "" {
			t.Errorf("%s: the library behind the forged /proc ran: %s exists", node, evilMarker)
		}
	}
}

// helperFaults adds to the fault matrix the failures of the Go side itself,
// from test/faultlib: each must cost the task its attributes and nothing
// else, with one error line, and leave no process behind.
func helperFaults(t *testing.T, m *matrix) {
	cases := []struct{ fault, log string }{
		// The step's line: how its helper ended, and its first words
		// (a panic in a call from C aborts the runtime).
		{"panic", "): panic: faultlib"},
		{"threads", "runtime: program exceeds"},
		// Go says "runtime: out of memory" or "fatal error: out of
		// memory allocating heap arena metadata", as the helper's
		// RLIMIT_DATA meets the reservation or its metadata first.
		{"oom", "out of memory"},
		// 64 MiB: the helper dies at its own memory bound, never the
		// job's limit (spank/membound.h).
		{"alloc", "(over the helper's own memory bound, RLIMIT_DATA: 8 MiB"},
		{"abort", "the step's helper was killed by signal 6"},
		{"segv", "SIGSEGV"},
		{"exit", "the step's helper exited with status 3"},
		{"hang", "did not answer within 500 ms (timeout=)"},
	}
	for _, c := range cases {
		name := "Go library: " + c.fault
		t.Run(name, func(t *testing.T) {
			// Go's out-of-memory path can take seconds on a busy node;
			// the faults are about the outcome, and only the hang is
			// about the timeout.
			timeout := "20000"
			if c.fault == "hang" {
				timeout = "500"
			}
			setPlugstack(t, "lib="+faultLib+" timeout="+timeout)
			defer restorePlugstack(t)
			mark := logMark(t)
			if !runFault(t, m, faultCase{name: name, group: "Go library", setup: "export SPANK_OTEL_TEST_FAULT=" + c.fault, wantLog: c.log}) {
				return
			}
			// One error line from the task, one from its step's
			// parent saying how the step's helper ended.
			var taskErrors, stepErrors []string
			named := false // the crash report names the C function
			for _, l := range newLogLines(t, mark) {
				switch {
				case !strings.Contains(l, "error: spank-otel:"):
				case strings.Contains(l, "error: spank-otel: the step's helper was killed"),
					strings.Contains(l, "error: spank-otel: the step's helper exited"),
					strings.Contains(l, "error: spank-otel: the step's helper said"):
					stepErrors = append(stepErrors, l)
				default:
					taskErrors = append(taskErrors, l)
				}
				named = named || strings.Contains(l, "helper stderr: spank_otel_fault_segv+0x")
			}
			if len(taskErrors) != 1 || len(stepErrors) != 1 {
				t.Errorf("want exactly one error line of the task and one of its step, got %v and %v", taskErrors, stepErrors)
			}
			if c.fault == "segv" && !named {
				t.Errorf("no log line names the C function that faulted (spank_otel_fault_segv+0x...)")
			}
			for _, node := range strings.Fields(computeNodes) {
				if out, _, _ := clusterCmd(t, node, true, nil, "bash", "-c", "pgrep -x spank-otel || true"); strings.TrimSpace(out) != "" {
					t.Errorf("%s: helper processes left behind: %s", node, out)
				}
			}
		})
	}
}

func TestExternStepDoesNotOpenLibrary(t *testing.T) {
	mark := logMark(t)
	job := strings.TrimSpace(alice(t, `sbatch --parsable -N1 -w c1 -o /dev/null --wrap 'sleep 4'`))
	// While the job runs, its extern step's slurmstepd must hold neither a
	// descriptor nor a mapping of the library.
	var seen string
	waitFor(15*time.Second, 100*time.Millisecond, func() bool {
		out, _, _ := clusterCmd(t, "c1", true, nil, "bash", "-c", fmt.Sprintf(
			`p=$(pgrep -f 'slurmstepd: \[%s\.extern\]' | head -n1); [ -n "$p" ] || exit 0
echo "pid=$p"; ls -l /proc/$p/fd | grep -c libspankotel; grep -c libspankotel /proc/$p/maps`, job))
		seen = strings.TrimSpace(out)
		return seen != ""
	})
	jobEnd(t, job, time.Minute)
	lines := strings.Split(seen, "\n")
	if len(lines) != 3 || lines[1] != "0" || lines[2] != "0" {
		t.Errorf("job %s's extern slurmstepd: want pid, 0 descriptors and 0 mappings of the library, got %q", job, seen)
	}
	var sawExtern bool
	for _, l := range newLogLines(t, mark) {
		if strings.Contains(l, "["+job+".extern]") && strings.Contains(l, "extern step: no tasks, library not opened") {
			sawExtern = true
		}
	}
	if !sawExtern {
		t.Errorf("no log line of job %s's extern step skipping the library", job)
	}
}
