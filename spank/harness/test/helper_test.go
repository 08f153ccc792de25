//go:build harness

package test

import (
	"regexp"
	"testing"
)

// noCaps is the fake library's report of a helper with no capability left:
// every set empty, the bounding set included (its root starter empties it
// before the credential change), no_new_privs, not dumpable, and root not
// special (SECBIT_NOROOT and its lock: the exec granted none).
const noCaps = `CapInh=0+,CapPrm=0+,CapEff=0+,CapBnd=0+,CapAmb=0+,NoNewPrivs=1,dumpable=0,keepcaps=0,securebits=3,`

// TestHelperIdentity: what the step's helper is, from inside (the fake
// library's report) and from outside (stepdrive's): the job's user and
// groups with no capability left, the first process the OOM killer takes,
// and exactly its descriptors, close_range or not.
func TestHelperIdentity(t *testing.T) {
	l := newLab(t)
	report := []string{"FAKE_REPORT=1", "SLURM_JOB_ID=1"}
	// Exactly stdin /dev/null, stdout and stderr the pipe, the library
	// (installed by onFake) and the sockets of the tasks (the third is
	// stepdrive's own, which it keeps to look at the helper). Task 1's,
	// 5, is gone when task 1 was answered first: the helper closes a
	// task's socket once it has answered.
	lib := regexp.QuoteMeta(l.path("fake/lib.so"))
	inside := `fds=0:/dev/null;1:pipe;2:pipe;3:` + lib + `:cloexec;4:socket:cloexec;(5:socket:cloexec;)?6:socket:cloexec,`
	outside := `^helper_fds=0:/dev/null;1:pipe;2:pipe;3:` + lib + `;6:socket$`
	// asUser runs stepdrive as uid 65534 (a slurmstepd that is not root),
	// with setpriv's group options.
	asUser := func(groups string, args ...string) func(t testing.TB) result {
		return func(t testing.TB) result {
			return run(nil, "setpriv", append([]string{"--reuid=65534", "--regid=65534", groups, need(t, "stepdrive"),
				"--helper", l.helper(t), "--tasks", "1", "--lib", l.lib(t, "fake"),
				"--env-file", l.taskEnv(t, "fenv", report...), "--trusted-uid", "0"}, args...)...)
		}
	}
	runChecks(t, []runCheck{
		{name: "helper: uid, gid and groups of the job; no capability, the bounding set empty; no_new_privs; not dumpable",
			run: l.onFake(report, "--as-user", "65534:65533", "--tasks", "2"),
			want: append(everyTask(2, `status=called rc=1 value=uid=65534/65534/65534,gid=65533/65533/65533,groups=65533,`),
				`^task=0 status=called rc=1 value=uid=.*`+noCaps, `,oom_score_adj=1000$`,
				`^helper_uid=65534/65534/65534/65534$`, `^helper_gid=65533/65533/65533/65533$`, `^helper_groups=65533 ?$`,
				`^helper_capbnd=0000000000000000$`, `^helper_capeff=0000000000000000$`, `^helper_nnp=1$`),
			then: []followUp{
				{"helper: oom_score_adj 1000 from its start (written by its starter, before the credential change)",
					expectAlso(0, `^helper_oom_score_adj=1000$`)},
				{"helper: exactly stdin /dev/null, stdout and stderr the pipe, the library and the tasks' sockets",
					expectAlso(0, `^task=0 status=called rc=1 value=.*`+inside)},
				{"helper: from outside, once the tasks are done: the same, their sockets closed", expectAlso(0, outside)},
				{"helper: the tasks are left as they were", expectAlso(0, everyTask(2, `state=same$`)...)}}},
		// A kernel before 5.9 has no close_range: the starter and the
		// helper close what they were not given through /proc/self/fd.
		{name: "helper: without close_range (seccomp: ENOSYS) slurmstepd's descriptors are closed all the same",
			run: func(t testing.TB) result {
				return l.onFake(report, "--as-user", "65534", "--tasks", "2", "--no-close-range")(t)
			},
			want: []string{`^close_range=ENOSYS$`, `^task=0 status=called rc=1 value=.*` + inside, outside, `^helper_end=exited:0$`}},
		{name: "helper: a job of uid 0: uid 0 with every capability set empty and no_new_privs",
			run:  l.onFake(report, "--as-user", "0"),
			want: []string{`^task=0 status=called rc=1 value=uid=0/0/0,gid=0/0/0,groups=0,` + noCaps, `^helper_capbnd=0000000000000000$`}},
		// slurmstepd as a user (SlurmdUser not root): the helper cannot change
		// users, and need not for that user's own job.
		{name: "helper: a non-root step parent, the job its own user: runs, no capability",
			run: asUser("--groups=65534"),
			want: []string{`^task=0 status=called rc=1 value=uid=65534/65534/65534,`, `CapPrm=0+,CapEff=0+,`, `NoNewPrivs=1`,
				`^task=0 state=same$`}},
		{name: "helper: a non-root step parent asked for another user: not started, the reason logged",
			run:  asUser("--clear-groups", "--as-user", "1000"),
			want: []string{`^task=0 status=helper-died rc=-1 value=-$`, `^error: the step's helper (said|exited with status 127): cannot take the job's credentials`}},
	})
}
