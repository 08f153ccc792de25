//go:build harness

package test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// stepRun is a step of tasks tasks around the step's helper
// (spank-otel-stepdrive), on the lab's copy of the library kind, each task
// with the environment env.
func (l *lab) stepRun(kind string, tasks int, env []string, args ...string) func(t testing.TB) result {
	return func(t testing.TB) result {
		t.Helper()
		return l.drive(t, append([]string{"--lib", l.lib(t, kind), "--tasks", strconv.Itoa(tasks),
			"--env-file", l.taskEnv(t, "senv", env...)}, args...)...)
	}
}

// everyTask is one pattern per task of the step: the line of each task
// that matches the pattern after "task=N ".
func everyTask(tasks int, pattern string) []string {
	var want []string
	for i := 0; i < tasks; i++ {
		want = append(want, `^task=`+strconv.Itoa(i)+` `+pattern)
	}
	return want
}

// reapedLine is the stop's line for a helper reaped before the stop that
// ended as how says (a pattern) and said said (a pattern; "" for nothing):
// how it ended where the kernel keeps that for a pidfd (Linux 6.15 on),
// else its last words alone, or no line when it said nothing.
func reapedLine(t testing.TB, how, said string) string {
	switch {
	case kernelAtLeast(t, 6, 15) && said == "":
		return `^error: the step's helper ` + how + `$`
	case kernelAtLeast(t, 6, 15):
		return `^error: the step's helper ` + how + `: ` + said + `$`
	case said == "":
		return `!^error: the step's helper`
	}
	return `^error: the step's helper said: ` + said + `$`
}

// kernelAtLeast reports whether the running kernel is major.minor or later.
func kernelAtLeast(t testing.TB, major, minor int) bool {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		t.Fatal(err)
	}
	var x, y int
	if _, err := fmt.Sscanf(unix.ByteSliceToString(u.Release[:]), "%d.%d", &x, &y); err != nil {
		t.Fatalf("kernel release %q: %v", u.Release, err)
	}
	return x > major || x == major && y >= minor
}

// TestStepHelper: the step's helper (issue 43, section 3) is a fresh image
// of its own executable, the job's user with no capability, answers every
// task of the step, and ends when
// the last task is done; a library that cannot be used, hangs or crashes
// costs the tasks their attributes and nothing else.
func TestStepHelper(t *testing.T) {
	l := newLab(t)
	job := []string{"SLURM_JOB_ID=12345", "SLURM_CLUSTER_NAME=cluster-a", "SLURM_JOB_NAME=t", "PATH=/usr/bin"}
	real := l.stepRun("real", 4, job, "--as-user", "65534")
	runChecks(t, []runCheck{
		{name: "step helper: every task of the step gets its value (real library)", run: real,
			want: everyTask(4, `status=called rc=1 value=.*slurm\.job\.id=12345`),
			then: []followUp{
				{"step helper: a fresh image: its /proc/PID/exe is spank-otel-helper", expectAlso(0,
					`^helper_exe=`+regexp.QuoteMeta(l.path("helper/spank-otel-helper"))+`$`)},
				{"step helper: a canary in the step parent's heap is not in the helper's memory (the same scan finds it in the parent)",
					expectAlso(0, `^canary_control=present$`, `^canary=absent$`)},
				{"step helper: the job's user, no_new_privs, no effective capability", expectAlso(0,
					`^helper_uid=65534/65534/65534/65534$`, `^helper_nnp=1$`, `^helper_capeff=0000000000000000$`)},
				{"step helper: the library is loaded once for the step, and each task's call is timed", expectAlso(0,
					`^task=3 log=debug step helper: library loaded and started in [0-9]+ us \(once for the step\), call [0-9]+ us$`)},
				{"step helper: on one CPU, so GOMAXPROCS 1 whatever the node's size", expectAlso(0,
					`^task=0 log=debug go runtime: GOMAXPROCS=1 threads<=[0-9]+ gc=off stack=kept$`)},
				{"step helper: ends by itself once every task's socket is closed", expectAlso(0, `^helper_end=exited:0$`)},
				{"step helper: the tasks of one step, with one environment, get one value", func(t testing.TB, r result) {
					want, _ := r.value(`^task=0 status=called rc=1 value=(.*)$`)
					for i := 1; i < 4; i++ {
						got, _ := r.value(`^task=` + strconv.Itoa(i) + ` status=called rc=1 value=(.*)$`)
						if want == "" || got != want {
							t.Errorf("task %d: %q, task 0: %q", i, got, want)
						}
					}
				}},
			}},
		{name: "step helper: a job of uid 0: uid 0 with no capability (exec grants root none: SECBIT_NOROOT)",
			run:  l.stepRun("real", 1, job, "--as-user", "0"),
			want: []string{`^task=0 status=called rc=1 `, `^helper_uid=0/0/0/0$`, `^helper_capeff=0000000000000000$`, `^helper_nnp=1$`}},
		{name: "step helper: the keys never written (exclude=) travel with each request",
			run:  l.stepRun("real", 2, job, "--as-user", "65534", "--exclude", "slurm.job.name"),
			want: append(everyTask(2, `status=called rc=1 value=.*slurm\.job\.id=12345`), `^helper_end=exited:0$`),
			then: []followUp{{"step helper: slurm.job.name excluded in every task", func(t testing.TB, r result) {
				if n := r.count(`slurm\.job\.name=`); n != 0 {
					t.Errorf("%d tasks still carry slurm.job.name", n)
					r.show(t)
				}
			}}}},
		{name: "step helper: a library of another ABI: every task told why, none gets a value",
			run: func(t testing.TB) result {
				l.mkdir(t, "abi2", 0o755)
				l.libs["abi2"] = l.copy(t, need(t, "testdata")+"/libfake-abi2.so", "abi2/lib.so")
				return l.stepRun("abi2", 3, job)(t)
			},
			want: append(everyTask(3, `status=abi-mismatch rc=-1 value=-$`),
				`^task=2 log=error cannot use .*: library ABI [0-9]+, this plugin needs ABI [0-9]+`, `^helper_end=exited:0$`)},
		{name: "step helper: a call that hangs: that task times out, the helper ends at its deadline, the others get no value",
			run: l.stepRun("fault", 2, append(job, "SPANK_OTEL_TEST_FAULT=hang"), "--timeout", "500"),
			want: []string{`^task=[01] status=timeout `, `^task=[01] log=error the step's helper did not answer within 500 ms`,
				`^task=[01] status=(timeout|helper-died) `, `^helper_end=killed:14$`,
				`^error: the step's helper was killed by signal 14 \(Alarm clock\): a call ran past its task's deadline \(timeout=\); the step's helper ended itself$`}},
		// slurmstepd's step parent waits for any child, and so may reap
		// the step's helper before the stop: the kernel still says how it
		// ended (PIDFD_INFO_EXIT, Linux 6.15 on), and its last words are
		// its stderr's, which the step parent reads whoever reaped it.
		{name: "step helper reaped by a wait for any child: the stop still says how it ended (crash)",
			run:  l.stepRun("fault", 2, append(job, "SPANK_OTEL_TEST_FAULT=segv"), "--reap-any"),
			want: []string{`^helper_end=(exited:2|killed:[0-9]+)$`, reapedLine(t, `(exited with status 2|was killed by signal [0-9]+ \(.*\))`, `SIGSEGV: segmentation violation`)}},
		{name: "step helper reaped by a wait for any child: the stop still says how it ended (the library's exit)",
			run:  l.stepRun("fault", 1, append(job, "SPANK_OTEL_TEST_FAULT=exit"), "--reap-any"),
			want: []string{`^helper_end=exited:3$`, reapedLine(t, `exited with status 3`, ``)}},
		{name: "step helper reaped by a wait for any child: the stop still says how it ended (its deadline)",
			run:  l.stepRun("fault", 1, append(job, "SPANK_OTEL_TEST_FAULT=hang"), "--timeout", "500", "--reap-any"),
			want: []string{`^helper_end=killed:14$`, reapedLine(t, `was killed by signal 14 \(Alarm clock\)`, `a call ran past its task's deadline \(timeout=\); the step's helper ended itself`)}},
		{name: "step helper: a call that crashes: the tasks get no value, the helper is gone",
			run: l.stepRun("fault", 2, append(job, "SPANK_OTEL_TEST_FAULT=segv")),
			want: append(everyTask(2, `status=helper-died rc=-1 value=-$`),
				`^task=[01] log=error the step's helper ended before it answered`,
				`^error: the step's helper (exited with status 2|was killed by signal [0-9]+ \(.*\)): SIGSEGV: segmentation violation$`,
				`^debug: helper stderr: spank_otel_fault_segv\+0x`, `^helper_end=(exited:2|killed:[0-9]+)$`)},
		{name: "step helper: a call over the memory bound ends the helper at its own bound (RLIMIT_DATA), the task gets no value",
			run: l.stepRun("fault", 1, append(job, "SPANK_OTEL_TEST_FAULT=oom")),
			want: []string{`^task=0 status=helper-died rc=-1 value=-$`,
				`^error: the step's helper (exited with status 2|was killed by signal 6 \(Aborted\)): (runtime|fatal error): out of memory.* \(over the helper's own memory bound, RLIMIT_DATA: 8 MiB for the library's call; not the job's memory limit\)$`, `^helper_end=(exited:2|killed:6)$`}},
	})
	// Loaded at the first request, once Slurm has set the job's limits,
	// and only with room for it in its own cgroups (the step parent's).
	memRoot := "/sys/fs/cgroup/memory"
	if _, err := os.Stat(memRoot + "/memory.limit_in_bytes"); err != nil {
		t.Fatalf("this test needs cgroup v1's memory controller at %s: %v", memRoot, err)
	}
	mem := newCgroup(t, fmt.Sprintf("%s/spank-otel-steptest-%d", memRoot, os.Getpid()))
	var kills int
	runChecks(t, []runCheck{
		{name: "step helper: no room for it in its memory cgroup: not loaded, every task told why, no OOM kill",
			run: func(t testing.TB) result {
				writeFile(t, mem+"/memory.limit_in_bytes", 12*mib)
				kills = oomKills(t, mem)
				exe := l.helper(t)
				return inCgroup(mem, need(t, "stepdrive"), "--helper", exe, "--lib", l.lib(t, "real"), "--tasks", "2",
					"--env-file", l.taskEnv(t, "menv", job...), "--as-user", "65534")
			},
			want: append(everyTask(2, `status=helper-failed rc=-1 value=-$`),
				`^task=[01] log=error not loading the library: memory cgroup .* has [0-9]+ KiB left of its 12288 KiB`),
			then: []followUp{{"step helper: no OOM kill in that cgroup", func(t testing.TB, r result) {
				if n := oomKills(t, mem); n != kills {
					t.Errorf("oom_kill of %s went from %d to %d", mem, kills, n)
				}
			}}}},
	})
	check(t, "step helper: none of this test's helpers is left running", func(t *testing.T) {
		noneRunning(t, l.path("helper/spank-otel-helper"))
	})
}

// noneRunning fails for every process whose image is exe: the step's
// helper runs with an empty environment, which the run's marker
// (leftovers) cannot reach.
func noneRunning(t testing.TB, exe string) {
	t.Helper()
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		if target, err := os.Readlink(filepath.Join("/proc", d.Name(), "exe")); err == nil &&
			strings.TrimSuffix(target, " (deleted)") == exe {
			t.Errorf("pid %s still runs %s", d.Name(), exe)
		}
	}
}
