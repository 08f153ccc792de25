package sdkinterop_test

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/spank-otel/spank-otel/detect/slurm/slurmtest"
	"github.com/spank-otel/spank-otel/libcarrier"
	"github.com/spank-otel/spank-otel/libcarrier/carriertest"
	"github.com/spank-otel/spank-otel/taskenv"
)

// pythonEnv names the command that runs a Python with the OpenTelemetry
// Python SDK importable. The SDK needs what Debian bookworm's Python lacks
// (typing-extensions >= 4.5), so python.sh points it at a cluster node
// image (trixie, sid), where the SDK comes from its upstream archive.
const pythonEnv = "SPANK_OTEL_PYTHON"

type carrierCase struct{ name, carrier string }

// writtenCarriers are the carriers this package's Go SDK tests decode:
// what libcarrier formats (the hostile attributes, together and one by
// one, typed values, a realistic task's), the canonical form of every
// agreement input and FuzzSDKAgreement seed, and what the plugin writes
// for every FuzzTaskEnvSDK seed and the stored fuzz corpora (cgo's
// FuzzTaskEnv included, whose inputs are the same).
func writtenCarriers(t *testing.T) []carrierCase {
	t.Helper()
	var cases []carrierCase
	add := func(name, carrier string) { cases = append(cases, carrierCase{name, carrier}) }

	hostile := carriertest.HostileAttributes()
	whole, _ := libcarrier.FormatStrings(hostile)
	add("hostile attributes", whole)
	for _, k := range sortedKeys(hostile) {
		one, _ := libcarrier.FormatStrings(map[string]string{k: hostile[k]})
		add("hostile attribute "+strconv.Quote(k), one)
	}
	typed, _ := libcarrier.Format(map[string]any{"int": -42, "uint": uint64(18446744073709551615), "bool": true,
		"float": 2.5e-7, "float.big": 1e21, "string": "a b"})
	add("typed values", typed)
	bench, _ := libcarrier.FormatStrings(carriertest.BenchAttributes)
	add("bench task", bench)

	inputs := agreementInputs()
	for _, seed := range fuzzCorpus(t, "testdata/fuzz/FuzzSDKAgreement", 1) {
		inputs = append(inputs, seed[0])
	}
	for i, in := range inputs {
		parsed, _ := libcarrier.Parse(in)
		canon, _ := libcarrier.FormatStrings(parsed)
		add(fmt.Sprintf("canonical of agreement input %d %q", i, shorten(in)), canon)
	}

	seeds := [][]string{}
	for _, s := range slurmtest.TaskSeeds {
		seeds = append(seeds, s[:])
	}
	seeds = append(seeds, fuzzCorpus(t, "testdata/fuzz/FuzzTaskEnvSDK", 4)...)
	// The library sees C strings: each ends at its first NUL.
	for _, s := range fuzzCorpus(t, "../../cgo/testdata/fuzz/FuzzTaskEnv", 4) {
		for i := range s {
			s[i], _, _ = strings.Cut(s[i], "\x00")
		}
		seeds = append(seeds, s)
	}
	for i, s := range seeds {
		res := taskenv.Compute(slurmtest.TaskFuzzEnv(s[0], s[1], s[2], s[3]), taskenv.Options{})
		if res.Changed && !res.Unset {
			add(fmt.Sprintf("task-env seed %d %q", i, shorten(s[0])), res.Value)
		}
	}
	return cases
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func shorten(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// fuzzCorpus reads the stored inputs of a fuzz target (go test's corpus
// files under dir, each of n strings); a missing dir has none.
func fuzzCorpus(t *testing.T, dir string, n int) [][]string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	var out [][]string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		if len(lines) != n+1 || lines[0] != "go test fuzz v1" {
			t.Fatalf("%s: not a corpus file of %d strings", f, n)
		}
		var vals []string
		for _, l := range lines[1:] {
			inner, ok := strings.CutPrefix(l, "string(")
			inner, ok2 := strings.CutSuffix(inner, ")")
			v, err := strconv.Unquote(inner)
			if !ok || !ok2 || err != nil {
				t.Fatalf("%s: cannot read %q", f, l)
			}
			vals = append(vals, v)
		}
		out = append(out, vals)
	}
	return out
}

// TestPythonSDKAgrees decodes every written carrier with the Python SDK's
// OTELResourceDetector and wants the Go SDK's attributes, byte for byte.
func TestPythonSDKAgrees(t *testing.T) {
	command := strings.Fields(os.Getenv(pythonEnv))
	if len(command) == 0 {
		t.Skipf("%s is not set: make test runs this in the cluster's node images (test/sdkinterop/python.sh)", pythonEnv)
	}
	script, err := os.ReadFile("pydecode.py")
	if err != nil {
		t.Fatal(err)
	}
	cases := writtenCarriers(t)
	var in bytes.Buffer
	for i, c := range cases {
		fmt.Fprintf(&in, "{\"id\":%d,\"carrier\":%q}\n", i, hex.EncodeToString([]byte(c.carrier)))
	}
	cmd := exec.Command(command[0], append(command[1:], "-c", string(script))...)
	cmd.Stdin = &in
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(command, " "), err, stderr.String())
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<24)
	if !sc.Scan() {
		t.Fatalf("no output from the Python side; stderr:\n%s", stderr.String())
	}
	t.Logf("Python side: %s", sc.Text())
	got := 0
	for sc.Scan() {
		var r struct {
			ID    int
			Attrs [][2]string
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil || r.ID < 0 || r.ID >= len(cases) {
			t.Fatalf("bad line from the Python side: %q (%v)", sc.Text(), err)
		}
		py := map[string]string{}
		for _, kv := range r.Attrs {
			k, err1 := hex.DecodeString(kv[0])
			v, err2 := hex.DecodeString(kv[1])
			if err1 != nil || err2 != nil {
				t.Fatalf("bad pair from the Python side: %q", kv)
			}
			py[string(k)] = string(v)
		}
		c := cases[r.ID]
		if goSDK := sdkAttributes(t, c.carrier); !maps.Equal(py, goSDK) {
			t.Errorf("%s: carrier %q\n  Python SDK: %q\n  Go SDK:     %q", c.name, c.carrier, py, goSDK)
		}
		got++
	}
	if got != len(cases) {
		t.Fatalf("the Python side answered %d of %d carriers; stderr:\n%s", got, len(cases), stderr.String())
	}
	if stderr.Len() > 0 {
		t.Errorf("the Python SDK warned:\n%s", stderr.String())
	}
	t.Logf("%d carriers read alike by the Python and Go SDKs", got)
}
