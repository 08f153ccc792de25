//go:build harness

package test

import (
	"testing"
)

// TestHelperNoCoreBeforeSignals: the helper is born with every signal
// blocked, and its user may signal it from birth; a SIGQUIT that arrived
// then must not dump a core of a process that is still root and holds
// slurmstepd's memory. Traced with strace: before the helper first
// unblocks signals it has made itself not dumpable, set RLIMIT_CORE to 0
// and discarded a pending SIGQUIT (SIG_IGN, then SIG_DFL).
func TestHelperNoCoreBeforeSignals(t *testing.T) {
	l := newLab(t)
	check(t, "helper: no core dump, and pending signals dropped, before it unblocks any", func(t *testing.T) {
		helper := helperCalls(t, "prctl,prlimit64,setrlimit,rt_sigprocmask,rt_sigaction",
			l.harness, "--lib", l.lib(t, "fake"), "--env-file", l.jobEnv(t))
		inOrder(t, helper, []callStep{
			{"not dumpable", `prctl\(PR_SET_DUMPABLE, SUID_DUMP_DISABLE\) = 0`},
			{"no core", `(prlimit64\(0, RLIMIT_CORE, \{rlim_cur=0, rlim_max=0\}|setrlimit\(RLIMIT_CORE, \{rlim_cur=0, rlim_max=0\})`},
			{"a pending SIGQUIT dropped", `rt_sigaction\(SIGQUIT, \{sa_handler=SIG_IGN`},
			{"SIGQUIT back to its default", `rt_sigaction\(SIGQUIT, \{sa_handler=SIG_DFL`},
			{"signals unblocked", `rt_sigprocmask\(SIG_SETMASK, \[\], `},
		})
	})
}
