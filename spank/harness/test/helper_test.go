//go:build harness

package test

import (
	"os"
	"regexp"
	"strconv"
	"syscall"
	"testing"
)

// noCaps is the fake library's report of a helper with no capability left.
const noCaps = `CapInh=0+,CapPrm=0+,CapEff=0+,CapBnd=0+,CapAmb=0+,NoNewPrivs=1,dumpable=0,keepcaps=0,securebits=0`

// TestHelperIdentity: what the helper is, from inside (the fake library's
// report): the job's user with no capability left, and exactly its five
// descriptors.
func TestHelperIdentity(t *testing.T) {
	l := newLab(t)
	report := []string{"FAKE_REPORT=1", "SLURM_JOB_ID=1"}
	// Exactly stdin /dev/null, stdout and stderr the pipe, the library
	// (installed by onFake) and the socket.
	fds := `fds=0:/dev/null;1:pipe;2:pipe;3:` + regexp.QuoteMeta(l.path("fake/lib.so")) + `:cloexec;4:socket:cloexec,`
	// asUser runs the whole harness as uid 65534 (a slurmstepd that is not
	// root), with setpriv's group options.
	asUser := func(groups string, args ...string) func(t testing.TB) result {
		return func(t testing.TB) result {
			args := append([]string{"--reuid=65534", "--regid=65534", groups, l.harness,
				"--lib", l.lib(t, "fake"), "--env-file", l.taskEnv(t, "fenv", report...)}, args...)
			return run(nil, "setpriv", args...)
		}
	}
	runChecks(t, []runCheck{
		{name: "helper: uid, gid and groups of the job; no capability; no_new_privs; not dumpable",
			run: l.onFake(report, "--as-user", "65534:65533"),
			want: []string{`^status=called$`, `^value=uid=65534/65534/65534,gid=65533/65533/65533,groups=65533,`,
				noCaps, `,glibc_tid=ok,oom_score_adj=1000$`, `^state=same$`},
			then: []followUp{{"helper: exactly stdin /dev/null, stdout and stderr the pipe, the library and the socket",
				expectAlso(0, fds)}}},
		// The library's descriptor away from 3 and 4, as in a real task: those
		// numbers are free when the helper arranges its descriptors.
		{name: "helper: the same five descriptors when 3 and 4 were free (stdin never the library)",
			run:  l.onFake(report, "--as-user", "65534", "--lib-fd", "100"),
			want: []string{fds}},
		{name: "helper: PR_SET_KEEPCAPS set before the fork: still no capability",
			run:  l.onFake(report, "--as-user", "65534", "--keepcaps"),
			want: []string{`^status=called$`, `uid=65534/65534/65534,`, noCaps}},
		{name: "helper: SECBIT_NO_SETUID_FIXUP set before the fork: still no capability",
			run:  l.onFake(report, "--as-user", "65534", "--securebits", "0x4"),
			want: []string{`^status=called$`, `uid=65534/65534/65534,`, noCaps}},
		{name: "helper: a job of uid 0: uid 0 with every capability set empty and no_new_privs",
			run:  l.onFake(report, "--as-user", "0"),
			want: []string{`^status=called$`, `^value=uid=0/0/0,gid=0/0/0,groups=0,`, noCaps}},
		// slurmstepd as a user (SlurmdUser not root): the helper cannot change
		// users, and need not for that user's own job.
		{name: "helper: a non-root parent, the job its own user: runs, no capability",
			run: asUser("--groups=65534", "--as-user", "65534", "--trusted-uid", "0"),
			want: []string{`^status=called$`, `^value=uid=65534/65534/65534,`, `CapPrm=0+,CapEff=0+,`, `NoNewPrivs=1`,
				`^state=same$`, `helper keeps its capability bounding set \(no CAP_SETPCAP\)`}},
		{name: "helper: a non-root parent asked for another user: refused with the reason",
			run:  asUser("--clear-groups", "--as-user", "1000", "--task-user", "65534", "--trusted-uid", "0"),
			code: 3, want: []string{`^status=helper-failed$`,
				`msg error spank-otel: not loading the library: the helper process cannot become uid 1000 gid 1000: Operation not permitted`,
				`^state=same$`}},
	})
}

// TestTaskState: the task's signal state is exactly what it was, pending
// signals included (the helper sends no SIGCHLD when it ends, and one sent
// when its user stops or continues it is taken back); a task that is
// already multithreaded gets no helper; a task that ends before task_init
// leaves no helper; a placement that stalls ends by the helper's own
// deadline; a helper the task cannot kill costs it timeout= and no more.
func TestTaskState(t *testing.T) {
	l := newLab(t)
	job := []string{"SLURM_JOB_ID=1"}
	runChecks(t, []runCheck{
		{name: "signals: SIGCHLD blocked: none left pending", run: l.onFake(job, "--block", "CHLD"),
			want: []string{`^status=called$`, `^state=same$`, `^after=.* pending=- `}},
		{name: "signals: SIGCHLD and SIGUSR1 pending before: still pending after",
			run:  l.onFake(job, "--block", "CHLD", "--raise", "CHLD", "--block", "USR1", "--raise", "USR1"),
			want: []string{`^status=called$`, `^state=same$`, `^after=.* pending=USR1:CHLD `}},
		{name: "signals: SIGCHLD ignored: the helper is reaped all the same", run: l.onFake(job, "--ignore", "CHLD"),
			want: []string{`^status=called$`, `^state=same$`, `^after=threads=1 children=0 `, `exited with status 0`}},
		{name: "signals: SIGCHLD handled: the task's handler never runs for the helper", run: l.onFake(job, "--handle", "CHLD"),
			want: []string{`^status=called$`, `^state=same$`, `^handled_CHLD=0$`}},
		{name: "signals: a crashing helper does not reach the task's SIGCHLD handler either",
			run:  l.onFake([]string{"FAKE_CRASH=1"}, "--handle", "CHLD", "--block", "USR2"),
			code: 8, want: []string{`^status=helper-died$`, `^state=same$`, `^handled_CHLD=0$`, `killed by signal 6`}},
		// A task child another plugin made multithreaded: a process forked
		// from it could hang on a lock another thread holds, so no helper.
		{name: "a multithreaded task: no helper, one error line, the task as it was", run: l.onFake(job, "--thread"),
			code: 3, want: []string{`^status=helper-failed$`,
				`msg error spank-otel: not starting the helper process: the task process runs 2 threads`,
				`^state=same$`, `^after=threads=2 children=0 `}},
		// What the helper's user can do to it (kill -STOP, kill -CONT): the
		// kernel sends the parent SIGCHLD for each whatever the exit signal.
		{name: "signals: the helper stopped and continued by its user, SIGCHLD blocked: none left pending",
			run:  l.onFake(job, "--as-user", "65534", "--block", "CHLD", "--stop-helper"),
			want: []string{`^stop_helper=stopped\+continued$`, `^status=called$`, `^state=same$`, `^after=.* pending=- `}},
		{name: "signals: the helper stopped and continued, a SIGCHLD of the task's own pending before: still pending",
			run:  l.onFake(job, "--as-user", "65534", "--block", "CHLD", "--raise", "CHLD", "--stop-helper"),
			want: []string{`^stop_helper=stopped\+continued$`, `^status=called$`, `^state=same$`, `^after=.* pending=CHLD `}},
		// The helper is born with the job's uid as its real uid: a task that
		// has become that user and ends before task_init takes the helper
		// with it (parent-death signal, the helper's watch on its pidfd).
		{name: "task ends before task_init: the helper is gone within the timeout",
			run:  l.onFake(job, "--as-user", "65534", "--task-exits", "--watch-helper", "2000"),
			want: []string{`^helper_comm=spank-otel$`, `^helper_gone=within [0-9]+ ms$`, `!helper_left`},
			then: []followUp{{"task ends before task_init: while it lived the helper was the task's child, " +
				"of the job's real uid (effective root, to place itself), in the cgroups it started in", helperWhileLiving}}},
		{name: "task killed before task_init: the helper is gone within the timeout",
			run:  l.onFake(job, "--as-user", "65534", "--task-killed", "--watch-helper", "2000"),
			code: 137, want: []string{`^helper_comm=spank-otel$`, `^helper_gone=within [0-9]+ ms$`, `!helper_left`},
			then: []followUp{{"task killed before task_init: the helper was the task's child, of the job's real uid",
				helperWhileLiving}}},
		// A placement that never ends (reading the task's cgroups from a
		// FIFO no one writes): the helper's own deadline ends it, when the
		// task does not (the task here sends the request and then waits for
		// the helper to end by itself).
		{name: "placement that stalls: ended by the helper's own deadline (SIGALRM at timeout=)",
			run: func(t testing.TB) result {
				return l.onFake(job, "--as-user", "65534", "--task-cgroup-file", l.fifo(t, "stall"),
					"--request-only", "--timeout", "300")(t)
			},
			code: 7, want: []string{`^helper_end=signal ALRM after [0-9]+ ms$`},
			then: []followUp{{"placement that stalls: the deadline is timeout= from the request, not later", func(t testing.TB, r result) {
				v, _ := r.value(`^helper_end=signal ALRM after ([0-9]+) ms$`)
				if ms, err := strconv.Atoi(v); err != nil || ms < 300 || ms > 800 {
					t.Errorf("the helper ended after %q ms, want 300 to 800", v)
					r.show(t)
				}
			}}}},
		{name: "placement that stalls: the task kills the helper at timeout= and runs as it was",
			run: func(t testing.TB) result {
				return l.onFake(job, "--as-user", "65534", "--task-cgroup-file", l.fifo(t, "stall"), "--timeout", "300")(t)
			},
			code: 7, want: []string{`^status=timeout$`, `^state=same$`,
				`msg error spank-otel: the helper process did not answer within 300 ms \(timeout=\); killed it`},
			then: []followUp{{"placement that stalls: the task waited no longer than timeout=", tookAtMost(300)}}},
		// The left-behind path: a helper the task cannot kill (here the
		// harness starts it without a job user, so it keeps root's real
		// uid, which the plugin never does) and that does not end: the task
		// leaves it behind within timeout=, with one line, and the helper's
		// own deadline ends it.
		{name: "left behind: a helper that cannot be killed costs timeout= and one line",
			run:  l.onFake([]string{"FAKE_HANG=1"}, "--task-user", "65534", "--timeout", "300", "--watch-helper", "2000"),
			code: 7, want: []string{`^status=timeout$`,
				`msg error spank-otel: the helper process could not be killed \(Operation not permitted\) and did not end within 300 ms \(timeout=\); left behind`,
				`^state=changed children 0 -> 1; $`},
			then: []followUp{
				{"left behind: the task waited no longer than timeout=", tookAtMost(300)},
				{"left behind: the helper ends by its own deadline all the same", expectAlso(7,
					`^helper_uid=0 0 0 0$`, `^helper_gone=within [0-9]+ ms$`, `!helper_left`)}}},
	})
}

// helperWhileLiving is a follow-up check of a --watch-helper run: while it
// lived, the helper was the task's child, with the job's uid (65534) as its
// real uid and root's effective and saved uid (it had not placed itself
// yet), in the cgroups of the harness it started from.
func helperWhileLiving(t testing.TB, r result) {
	task, _ := r.value(`^task_pid=([0-9]+)$`)
	ppid, _ := r.value(`^helper_ppid=([0-9]+)$`)
	uid, _ := r.value(`^helper_uid=(.*)$`)
	cg, _ := r.value(`^helper_cgroup=(.*)$`)
	harness, _ := r.value(`^harness_cgroup=(.*)$`)
	if task == "" || ppid != task || uid != "65534 0 0 0" || cg == "" || cg != harness {
		t.Errorf("helper ppid %q (task %q), uid %q, cgroup %q (harness %q)", ppid, task, uid, cg, harness)
		r.show(t)
	}
}

// fifo makes the lab's FIFO name, which no one ever writes: a helper that
// reads its task's cgroups from it waits forever.
func (l *lab) fifo(t testing.TB, name string) string {
	t.Helper()
	p := l.path(name)
	os.Remove(p)
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
