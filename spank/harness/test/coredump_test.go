//go:build harness

package test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
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
		strace, err := exec.LookPath("strace")
		if err != nil {
			t.Fatal("strace is not installed (make ctest installs it)")
		}
		trace := filepath.Join(t.TempDir(), "trace")
		r := run(nil, strace, "-f", "-o", trace, "-e", "trace=clone,prctl,prlimit64,setrlimit,rt_sigprocmask,rt_sigaction",
			l.harness, "--lib", l.lib(t, "fake"), "--env-file", l.jobEnv(t))
		r.expect(t, 0, `^status=called$`)
		data, err := os.ReadFile(trace)
		assertNil(t, err)
		m := regexp.MustCompile(`(?m)^\d+\s+clone\(.*CLONE_PIDFD.*\) = (\d+)$`).FindStringSubmatch(string(data))
		if m == nil {
			t.Fatalf("no clone of the helper in the trace:\n%s", data)
		}
		var helper []string
		for _, line := range strings.Split(string(data), "\n") {
			if strings.HasPrefix(line, m[1]+" ") {
				helper = append(helper, line)
			}
		}
		steps := []struct{ name, pattern string }{
			{"not dumpable", `prctl\(PR_SET_DUMPABLE, SUID_DUMP_DISABLE\) = 0`},
			{"no core", `(prlimit64\(0, RLIMIT_CORE, \{rlim_cur=0, rlim_max=0\}|setrlimit\(RLIMIT_CORE, \{rlim_cur=0, rlim_max=0\})`},
			{"a pending SIGQUIT dropped", `rt_sigaction\(SIGQUIT, \{sa_handler=SIG_IGN`},
			{"SIGQUIT back to its default", `rt_sigaction\(SIGQUIT, \{sa_handler=SIG_DFL`},
			{"signals unblocked", `rt_sigprocmask\(SIG_SETMASK, \[\], `},
		}
		at := 0
		for _, s := range steps {
			re := regexp.MustCompile(s.pattern)
			for at < len(helper) && !re.MatchString(helper[at]) {
				at++
			}
			if at == len(helper) {
				t.Fatalf("the helper's calls lack %q (%s) in this order:\n%s", s.name, s.pattern, strings.Join(helper, "\n"))
			}
		}
	})
}
