// Package slurmtest holds the environments that the tests of the Slurm
// detector (package detect/slurm) share with the tests of the packages
// built on it, and the task of detect/slurm/testdata that the per-task
// path's tests and benchmarks run on. Only tests import it.
package slurmtest

import (
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/spank-otel/spank-otel/environ"
	"github.com/spank-otel/spank-otel/libcarrier"
)

// CarrierVar is OTEL_RESOURCE_ATTRIBUTES, to keep tables short.
const CarrierVar = "OTEL_RESOURCE_ATTRIBUTES"

// Recorder is an environ.Env that records in Read the name of every
// variable looked up in it: the tests that keep a slurm.Vars holding what
// each detector reads use it.
type Recorder struct {
	Env  environ.Env
	Read map[string]bool
}

// Lookup records name and returns its value in r.Env.
func (r Recorder) Lookup(name string) (string, bool) {
	r.Read[name] = true
	return r.Env.Lookup(name)
}

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
	BaseEnv  = environ.Map{"SLURM_JOB_ID": "100", "SLURM_CLUSTER_NAME": "c"}
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
// FullWant is what the detector yields for it: the job's keys; the task's
// (the topology) are written only in a step.
var (
	FullEnv = environ.Map{
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
		"slurm.head_node.name", "c1",
		"slurm.sluid", "sluid-lens",
		"slurm.array.sluid", "asluid-lens",
	)
)

// The files in detect/slurm/testdata are shared with other packages' tests
// and benchmarks (and make bench), so they hold data only, no comments:
//
//   - task-env.txt: the environment of one task of an srun step (step 0,
//     task 1) on node c1 of job 4242, a 2-node, 4-task job on cluster
//     "cluster-a"; one NAME=value per line, no OTEL_RESOURCE_ATTRIBUTES.
//   - carrier-25.txt: one line, the canonical OTEL_RESOURCE_ATTRIBUTES
//     value that the batch step of the same job would pass on: 10
//     allowlisted keys written by spank-otel in the batch step and 15 user
//     keys, several of them percent-encoded.

// readTestdata returns the lines of detect/slurm/testdata/name, without
// empty lines. The directory is found from this file's own path, so that
// the tests of any package, in any module of the repository, can call it.
func readTestdata(tb testing.TB, name string) []string {
	tb.Helper()
	_, self, _, ok := runtime.Caller(0)
	if !ok {
		tb.Fatal("slurmtest: the path of slurmtest.go is unknown")
	}
	path := filepath.Join(filepath.Dir(self), "..", "testdata", name)
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

// TaskEnv returns the task environment of detect/slurm/testdata/task-env.txt.
func TaskEnv(tb testing.TB) []string {
	return readTestdata(tb, "task-env.txt")
}

// Carrier25 returns the inherited carrier of detect/slurm/testdata/carrier-25.txt.
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

// LinesEnv turns a fuzz input into a task environment: each line that
// starts with a byte from 'A' on picks a name of names by that byte,
// followed by the rest of the line as the value; any other line is an
// entry as it is. The fuzz targets that share it stay short and can reach
// every variable they name, each with its own list.
func LinesEnv(names []string, text string) []string {
	var kv []string
	for line := range strings.SplitSeq(text, "\n") {
		if line != "" && line[0] >= 'A' && int(line[0]-'A') < len(names) {
			kv = append(kv, names[line[0]-'A']+"="+line[1:])
			continue
		}
		kv = append(kv, line)
	}
	return kv
}

// TaskSeeds are the seeds of the fuzz targets that feed the per-task
// computation hostile task environments (cgo's FuzzTaskEnv through the
// library's export, test/sdkinterop's FuzzTaskEnvSDK through the Go SDK's
// parser, and its Python SDK check, which reads them without a fuzz
// target): each is the inherited carrier, the job id, the node and the step
// id that [TaskFuzzEnv] builds a task from.
var TaskSeeds = [...][4]string{
	{"user.team=ml%2Cinfra", "77", "c1", "0"},
	{"a=1,,b = 2 ,c=%", "", "", ""},
	{"slurm.ntasks=x,slurm.job.id=9", "77_3", "c\xff", ""},
	{"k=\xff", "1", "n", "1"},
	{"=,=,,", "-1", "", "batch"},
	{"a=%zz%2", "007", "node with spaces", "0"},
	{"x=a+b%20c,y=%E6%97%A5", "1", "c\t1", "2"},
	{strings.Repeat("k=v,", 1000), "1", "c1", "0"},
}

// AddTaskSeeds adds [TaskSeeds] to f.
func AddTaskSeeds(f *testing.F) {
	for _, seed := range TaskSeeds {
		f.Add(seed[0], seed[1], seed[2], seed[3])
	}
}

// TaskFuzzEnv returns the environment of a task that inherits the carrier
// inherited, of job jobID on node node in step stepID. The job id is its
// task count too and the node its cluster and topology, so that one input
// reaches integer keys, the job UUID and the stage-dependent keys.
func TaskFuzzEnv(inherited, jobID, node, stepID string) []string {
	return []string{
		CarrierVar + "=" + inherited, "SLURM_JOB_ID=" + jobID, "SLURMD_NODENAME=" + node,
		"SLURM_STEP_ID=" + stepID, "SLURM_TOPOLOGY_ADDR=" + node, "SLURM_NTASKS=" + jobID,
		"SLURM_CLUSTER_NAME=" + node,
	}
}
