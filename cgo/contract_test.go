package main

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/spank-otel/spank-otel/cgo/nodefiles"
	"github.com/spank-otel/spank-otel/detect/slurm"
	"github.com/spank-otel/spank-otel/libcarrier"
	"github.com/spank-otel/spank-otel/taskenv"
)

// contractFile holds the worked examples of contract.h. The shim's C test
// (spank/harness/contract.c) reads the same file.
const contractFile = "testdata/contract.tsv"

// TestContractCopies fails when taskenv's generated copies of
// the limits differ from contract.h (go generate ./taskenv was not
// run after a change of the header), or the Go copies of the node files'
// record kinds do.
func TestContractCopies(t *testing.T) {
	tests := []struct {
		name        string
		goV, header int
	}{
		{"taskenv.MaxArgStrlen vs SO_MAX_ENTRY", taskenv.MaxArgStrlen, headerMaxEntry},
		{"taskenv.ExecSlack vs SO_EXEC_SLACK", taskenv.ExecSlack, headerExecSlack},
		{"taskenv.ExecArgFloor vs SO_ARG_FLOOR", taskenv.ExecArgFloor, headerArgFloor},
		{"taskenv.ExecArgCeiling vs SO_ARG_CEILING", taskenv.ExecArgCeiling, headerArgCeiling},
		{"slurm.MaxRegularStepID vs SO_MAX_REGULAR_STEP", slurm.MaxRegularStepID, headerRegular},
		{"nodefiles.KindFile vs SO_NODE_FILE", nodefiles.KindFile, headerNodeFile},
		{"nodefiles.KindDir vs SO_NODE_DIR", nodefiles.KindDir, headerNodeDir},
		{"nodefiles.KindCharDev vs SO_NODE_CHARDEV", nodefiles.KindCharDev, headerNodeDev},
		{"nodefiles.KindOther vs SO_NODE_OTHER", nodefiles.KindOther, headerNodeOther},
		{"nodefiles.KindAbsent vs SO_NODE_ABSENT", nodefiles.KindAbsent, headerNodeAbsent},
		{"nodefiles.KindStalled vs SO_NODE_STALLED", nodefiles.KindStalled, headerNodeStalled},
	}
	for _, tc := range tests {
		if tc.goV != tc.header {
			t.Errorf("%s: Go has %d, contract.h %d", tc.name, tc.goV, tc.header)
		}
	}
}

// TestContractVectors checks every line of the contract file against this
// library: the per-variable limit as the export applies it.
func TestContractVectors(t *testing.T) {
	data, err := os.ReadFile(contractFile)
	if err != nil {
		t.Fatal(err)
	}
	checks := map[string]func(t *testing.T, f []string){
		"entry": checkEntry,
	}
	seen := map[string]int{}
	for i, line := range strings.Split(string(data), "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		f := strings.Split(line, "\t")
		check, ok := checks[f[0]]
		if !ok {
			t.Errorf("%s:%d: unknown kind %q", contractFile, i+1, f[0])
			continue
		}
		seen[f[0]]++
		t.Run(strconv.Itoa(i+1)+"_"+strings.Join(f, "_"), func(t *testing.T) { check(t, f[1:]) })
	}
	for kind := range checks {
		if seen[kind] == 0 {
			t.Errorf("%s has no %q line", contractFile, kind)
		}
	}
}

// ints parses the want numbers of f, or fails the test.
func ints(t *testing.T, f []string, want int) []int {
	t.Helper()
	if len(f) != want {
		t.Fatalf("want %d fields, got %q", want, f)
	}
	out := make([]int, want)
	for i, s := range f {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("field %d: %v", i+2, err)
		}
		out[i] = n
	}
	return out
}

// checkEntry has the export compute a carrier whose entry is exactly the
// size given, and checks that it is written or refused.
func checkEntry(t *testing.T, f []string) {
	if len(f) != 2 || (f[1] != "fits" && f[1] != "refused") {
		t.Fatalf("want BYTES fits|refused, got %q", f)
	}
	size := ints(t, f[:1], 1)[0]
	carrier := libcarrier.EnvVar + "=big="
	rc, base, log := callTaskEnv(append([]string{carrier}, stepEnv...), "", 0)
	if rc != resultSet {
		t.Fatalf("no value to pad: rc %d, log %q", rc, log)
	}
	// The entry grows by one byte for each unreserved byte of padding.
	pad := size - (len(libcarrier.EnvVar) + 1 + len(base) + 1)
	if pad < 0 {
		t.Fatalf("%d bytes is less than the smallest entry here", size)
	}
	rc, value, log := callTaskEnv(append([]string{carrier + strings.Repeat("x", pad)}, stepEnv...), "", 0)
	switch {
	case f[1] == "fits" && (rc != resultSet || len(value) != len(base)+pad):
		t.Errorf("%d bytes: rc %d with a %d-byte value, want %d with %d bytes; log %q", size, rc, len(value), resultSet, len(base)+pad, log)
	case f[1] == "refused" && (rc != resultUnchanged || !strings.Contains(log, "would be "+strconv.Itoa(size)+" bytes")):
		t.Errorf("%d bytes: rc %d, log %q; want %d and the size in the log", size, rc, log, resultUnchanged)
	}
}
