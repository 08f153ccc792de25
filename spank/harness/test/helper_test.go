//go:build harness

package test

import (
	"regexp"
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
// signals included (the helper sends no SIGCHLD when it ends); a task that
// is already multithreaded gets no helper; a helper the task cannot kill
// costs it timeout= and no more.
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
		// The left-behind path: a helper the task cannot kill (here it stays
		// root while the task becomes a user) and that does not end is left
		// behind within timeout=, with one line; it dies with the task
		// (PR_SET_PDEATHSIG).
		{name: "left behind: a helper that cannot be killed costs timeout= and one line",
			run:  l.onFake([]string{"FAKE_HANG=1"}, "--task-user", "65534", "--timeout", "300"),
			code: 7, want: []string{`^status=timeout$`,
				`msg error spank-otel: the helper process could not be killed \(Operation not permitted\) and did not end within 300 ms \(timeout=\); left behind`,
				`^state=changed children 0 -> 1; $`},
			then: []followUp{{"left behind: the task waited no longer than timeout=", tookAtMost(300)}}},
	})
}
