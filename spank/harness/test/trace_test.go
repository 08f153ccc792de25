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

// helperCalls runs the harness under strace, tracing the system calls
// calls (strace's -e trace= list; clone is added), and returns the
// helper's lines: those of the process the harness cloned with a pidfd.
func helperCalls(t *testing.T, calls string, args ...string) []string {
	t.Helper()
	strace, err := exec.LookPath("strace")
	if err != nil {
		t.Fatal("strace is not installed (make ctest installs it)")
	}
	trace := filepath.Join(t.TempDir(), "trace")
	r := run(nil, strace, append([]string{"-f", "-o", trace, "-e", "trace=clone," + calls}, args...)...)
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
	return helper
}

// callStep is one call a trace must show: what it means and its pattern.
type callStep struct{ name, pattern string }

// inOrder fails t unless the helper's calls match steps in their order,
// other calls between them.
func inOrder(t *testing.T, helper []string, steps []callStep) {
	t.Helper()
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
}
