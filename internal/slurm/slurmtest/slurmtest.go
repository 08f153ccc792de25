// Package slurmtest holds the environments that the tests of the Slurm
// detector share: package internal/slurm tests the detector, package detect
// its public wrappers and the comparisons with detect's own Env types. Only
// tests import it.
package slurmtest

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/spank-otel/spank-otel/libcarrier"
)

// Env is an environment held in a map, as detect.EnvMap: a key that is
// absent is unset.
type Env map[string]string

// Lookup returns e[key] and whether key is present.
func (e Env) Lookup(key string) (string, bool) {
	v, ok := e[key]
	return v, ok
}

// CarrierVar is OTEL_RESOURCE_ATTRIBUTES, to keep tables short.
const CarrierVar = "OTEL_RESOURCE_ATTRIBUTES"

// Deleted, as a value given to With, removes the key.
const Deleted = "\x00deleted"

// With returns a copy of m with the pairs (key, value, key, value ...) set;
// a value of Deleted removes its key.
func With[M ~map[string]string](m M, pairs ...string) M {
	out := maps.Clone(m)
	if out == nil {
		out = M{}
	}
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i+1] == Deleted {
			delete(out, pairs[i])
		} else {
			out[pairs[i]] = pairs[i+1]
		}
	}
	return out
}

// JobUUID computes nv.dl.job.uuid independently of the code under test.
func JobUUID(cluster, key string) string {
	return uuid.NewSHA1(uuid.NameSpaceURL, []byte("nemo.lens.job/"+cluster+"/"+key)).String()
}

// BaseEnv is the smallest environment of a plain job, and BaseWant what the
// detector yields for it.
var (
	BaseEnv  = Env{"SLURM_JOB_ID": "100", "SLURM_CLUSTER_NAME": "c"}
	BaseWant = map[string]string{
		"slurm.job.id":        "100",
		"slurm.job.id.raw":    "100",
		"slurm.array.job_id":  "100",
		"slurm.array.task_id": "0",
		"slurm.array.count":   "1",
		"slurm.restart_count": "0",
		"slurm.cluster.name":  "c",
		"nv.dl.job.uuid":      JobUUID("c", "100"),
	}
)

// FullEnv sets every variable the detector reads, outside a step, and
// FullWant is what the detector yields for it.
var (
	FullEnv = Env{
		"SLURM_JOB_ID":                "100",
		"SLURM_CLUSTER_NAME":          "c",
		"SLURM_JOB_NAME":              "train",
		"SLURM_JOB_PARTITION":         "gpu",
		"SLURM_PARTITION":             "other",
		"SLURM_JOB_NUM_NODES":         "2",
		"SLURM_NNODES":                "3",
		"SLURM_NTASKS":                "8",
		"SLURM_RESTART_COUNT":         "1",
		"SLURM_JOB_USER":              "alice",
		"SLURM_JOB_ACCOUNT":           "research",
		"SLURM_JOB_QOS":               "high",
		"SLURM_JOB_RESERVATION":       "maint",
		"SLURM_SEGMENT":               "seg1",
		"SLURM_TOPOLOGY_ADDR":         "sw0.c1",
		"SLURM_TOPOLOGY_ADDR_PATTERN": "switch.node",
		"SLURMD_NODENAME":             "c1",
		"LENS_SLURM_SLUID":            "sluid-lens",
		"NV_LAUNCH_SLUID":             "sluid-nv",
		"LENS_SLURM_ARRAY_SLUID":      "asluid-lens",
		"NV_LAUNCH_ARRAY_SLUID":       "asluid-nv",
	}
	FullWant = With(BaseWant,
		"slurm.job.name", "train",
		"slurm.partition", "gpu",
		"slurm.nnodes", "2",
		"slurm.ntasks", "8",
		"slurm.restart_count", "1",
		"slurm.job.user", "alice",
		"slurm.job.account", "research",
		"slurm.job.qos", "high",
		"slurm.job.reservation", "maint",
		"slurm.segment", "seg1",
		"slurm.topology.addr", "sw0.c1",
		"slurm.topology.addr_pattern", "switch.node",
		"slurm.head_node.name", "c1",
		"slurm.sluid", "sluid-lens",
		"slurm.array.sluid", "asluid-lens",
	)
)

// VarNames are the variables a slurm.Vars holds: exactly those that the
// Slurm detector and package uuidderive read (detect's tests check both
// directions).
var VarNames = []string{
	CarrierVar,
	"SLURM_JOB_ID", "SLURM_ARRAY_JOB_ID", "SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT",
	"SLURM_CLUSTER_NAME", "SLURM_JOB_NAME", "SLURM_JOB_PARTITION", "SLURM_PARTITION",
	"SLURM_JOB_NUM_NODES", "SLURM_NNODES", "SLURM_NTASKS", "SLURM_RESTART_COUNT",
	"SLURM_JOB_USER", "SLURM_JOB_ACCOUNT", "SLURM_JOB_QOS", "SLURM_JOB_RESERVATION",
	"SLURM_SEGMENT", "SLURM_TOPOLOGY_ADDR", "SLURM_TOPOLOGY_ADDR_PATTERN",
	"SLURMD_NODENAME", "SLURM_STEP_ID", "SLURM_STEPID",
	"LENS_SLURM_SLUID", "NV_LAUNCH_SLUID", "SLURM_JOB_SLUID", "LENS_SLURM_ARRAY_SLUID", "NV_LAUNCH_ARRAY_SLUID",
	"TORCHELASTIC_RESTART_COUNT", "TORCHELASTIC_RUN_ID",
}

// The files in detect/testdata are shared with other packages' tests and
// benchmarks, so they hold data only, no comments:
//
//   - task-env.txt: the environment of one task of an srun step (step 0,
//     task 1) on node c1 of job 4242, a 2-node, 4-task job on cluster
//     "cluster-a"; one NAME=value per line, no OTEL_RESOURCE_ATTRIBUTES.
//   - carrier-25.txt: one line, the canonical OTEL_RESOURCE_ATTRIBUTES
//     value that the batch step of the same job would pass on: 10
//     allowlisted keys written by spank-otel in the batch step and 15 user
//     keys, several of them percent-encoded.

// readTestdata returns the lines of detect/testdata/name, without empty
// lines. The directory is found from the module root above the working
// directory, where go test runs a package's tests, so that the tests of
// any package can call it.
func readTestdata(tb testing.TB, name string) []string {
	tb.Helper()
	dir, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			tb.Fatal("slurmtest: no go.mod above the working directory")
		}
		dir = parent
	}
	path := filepath.Join(dir, "detect", "testdata", name)
	b, err := os.ReadFile(path)
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

// TaskEnv returns the task environment of detect/testdata/task-env.txt.
func TaskEnv(tb testing.TB) []string {
	return readTestdata(tb, "task-env.txt")
}

// Carrier25 returns the inherited carrier of detect/testdata/carrier-25.txt.
func Carrier25(tb testing.TB) string {
	tb.Helper()
	lines := readTestdata(tb, "carrier-25.txt")
	if len(lines) != 1 {
		tb.Fatalf("carrier-25.txt has %d lines, want 1", len(lines))
	}
	return lines[0]
}

// TaskEnvWithCarrier returns the task environment with the inherited
// carrier as its OTEL_RESOURCE_ATTRIBUTES.
func TaskEnvWithCarrier(tb testing.TB) []string {
	return append(TaskEnv(tb), CarrierVar+"="+Carrier25(tb))
}

// WarningKeys lists the keys of ws, in order.
func WarningKeys(ws []libcarrier.Warning) []string {
	var keys []string
	for _, w := range ws {
		keys = append(keys, w.Key)
	}
	return keys
}

// Sorted renders m one key per line, for readable failures.
func Sorted[M ~map[string]string](m M) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(m)) {
		b.WriteString("\t" + k + "=" + m[k] + "\n")
	}
	return b.String()
}
