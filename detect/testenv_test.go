package detect

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The files in testdata are shared with other packages' tests and
// benchmarks, so they hold data only, no comments:
//
//   - task-env.txt: the environment of one task of an srun step (step 0,
//     task 1) on node c1 of job 4242, a 2-node, 4-task job on cluster
//     "cluster-a"; one NAME=value per line, no OTEL_RESOURCE_ATTRIBUTES.
//   - carrierVar-25.txt: one line, the canonical OTEL_RESOURCE_ATTRIBUTES value
//     that the batch step of the same job would pass on: 10 allowlisted keys
//     written by spank-otel in the batch step and 15 user keys, several of
//     them percent-encoded.

// readTestdata returns the lines of testdata/name, without empty lines.
func readTestdata(tb testing.TB, name string) []string {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		tb.Fatal(err)
	}
	var lines []string
	for line := range strings.Lines(string(b)) {
		if line = strings.TrimRight(line, "\r\n"); line != "" {
			lines = append(lines, line)
		}
	}
	return lines
}

// taskEnv returns the task environment of testdata/task-env.txt.
func taskEnv(tb testing.TB) []string {
	return readTestdata(tb, "task-env.txt")
}

// carrier25 returns the inherited carrierVar of testdata/carrier-25.txt.
func carrier25(tb testing.TB) string {
	tb.Helper()
	lines := readTestdata(tb, "carrier-25.txt")
	if len(lines) != 1 {
		tb.Fatalf("carrier-25.txt has %d lines, want 1", len(lines))
	}
	return lines[0]
}

// taskEnvWithCarrier returns the task environment with the inherited
// carrierVar as its OTEL_RESOURCE_ATTRIBUTES.
func taskEnvWithCarrier(tb testing.TB) []string {
	return append(taskEnv(tb), "OTEL_RESOURCE_ATTRIBUTES="+carrier25(tb))
}
