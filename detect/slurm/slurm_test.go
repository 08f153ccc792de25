package slurm

import (
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/spank-otel/spank-otel/detect/slurm/slurmtest"
	"github.com/spank-otel/spank-otel/environ"
	"github.com/spank-otel/spank-otel/libcarrier"
)

// The shared fixtures under the short names the tables use.

const (
	deleted    = slurmtest.Deleted
	carrierVar = slurmtest.CarrierVar
)

var (
	jobUUID            = slurmtest.JobUUID
	taskEnv            = slurmtest.TaskEnv
	carrier25          = slurmtest.Carrier25
	taskEnvWithCarrier = slurmtest.TaskEnvWithCarrier
	baseEnv            = slurmtest.BaseEnv
	baseWant           = slurmtest.BaseWant
	fullEnv            = slurmtest.FullEnv
	fullWant           = slurmtest.FullWant
)

var warningKeys = slurmtest.WarningKeys

func sorted(m map[string]string) string { return slurmtest.Sorted(m) }

func with[M ~map[string]string](m M, pairs ...string) M { return slurmtest.With(m, pairs...) }

// readList returns the Vars of kv.
func readList(kv []string) *Vars {
	var e Vars
	e.ReadList(kv)
	return &e
}

// stepWant is what the detector yields for fullEnv in a task of a step:
// the task's keys, and no head node.
var stepWant = with(fullWant, "slurm.head_node.name", deleted, "slurm.node.name", "c1", "slurm.step.id", "0",
	"slurm.topology.addr", "sw0.c1", "slurm.topology.addr_pattern", "switch.node")

func TestStrings(t *testing.T) {
	tests := []struct {
		name  string
		env   environ.Map
		want  map[string]string
		warns []string // keys of the warnings, in order
	}{
		// Activation.
		{"empty environment", environ.Map{}, map[string]string{}, nil},
		{"no job id", environ.Map{"SLURM_CLUSTER_NAME": "c", "SLURMD_NODENAME": "c1"}, map[string]string{}, nil},
		{"empty job id", environ.Map{"SLURM_JOB_ID": "", "SLURM_CLUSTER_NAME": "c", "SLURM_ARRAY_JOB_ID": "5"}, map[string]string{}, nil},
		{"plain job", baseEnv, baseWant, nil},
		{"every variable", fullEnv, fullWant, nil},
		{"empty carrier", with(baseEnv, carrierVar, ""), baseWant, nil},

		// Locally derived values.
		{"empty values are skipped",
			with(fullEnv, "SLURM_JOB_NAME", "", "SLURM_JOB_USER", "", "SLURM_TOPOLOGY_ADDR", "", "SLURM_SEGMENT", ""),
			with(fullWant, "slurm.job.name", deleted, "slurm.job.user", deleted, "slurm.topology.addr", deleted, "slurm.segment", deleted), nil},
		{"array element",
			with(baseEnv, "SLURM_JOB_ID", "101", "SLURM_ARRAY_JOB_ID", "100", "SLURM_ARRAY_TASK_ID", "1", "SLURM_ARRAY_TASK_COUNT", "4"),
			with(baseWant, "slurm.job.id", "100_1", "slurm.job.id.raw", "101", "slurm.array.task_id", "1", "slurm.array.count", "4"), nil},
		{"array element without array job id",
			with(baseEnv, "SLURM_JOB_ID", "101", "SLURM_ARRAY_TASK_ID", "3"),
			with(baseWant, "slurm.job.id", "101", "slurm.job.id.raw", "101", "slurm.array.job_id", "101", "slurm.array.task_id", "3",
				"nv.dl.job.uuid", jobUUID("c", "nojob")), nil},
		{"array element with empty array job id",
			with(baseEnv, "SLURM_JOB_ID", "101", "SLURM_ARRAY_JOB_ID", "", "SLURM_ARRAY_TASK_ID", "3"),
			with(baseWant, "slurm.job.id", "101", "slurm.job.id.raw", "101", "slurm.array.job_id", "101", "slurm.array.task_id", "3",
				"nv.dl.job.uuid", jobUUID("c", "nojob")), nil},
		{"array job id without task id is not an array element",
			with(baseEnv, "SLURM_JOB_ID", "101", "SLURM_ARRAY_JOB_ID", "100"),
			with(baseWant, "slurm.job.id", "101", "slurm.job.id.raw", "101", "slurm.array.job_id", "100",
				"nv.dl.job.uuid", jobUUID("c", "101")), nil},
		{"array count empty is 1", with(baseEnv, "SLURM_ARRAY_TASK_COUNT", ""), baseWant, nil},
		{"array count is canonical", with(baseEnv, "SLURM_ARRAY_TASK_COUNT", " +004 "), with(baseWant, "slurm.array.count", "4"), nil},
		{"array count invalid is omitted, not defaulted", with(baseEnv, "SLURM_ARRAY_TASK_COUNT", "4x"),
			with(baseWant, "slurm.array.count", deleted), []string{"slurm.array.count"}},
		{"restart count", with(baseEnv, "SLURM_RESTART_COUNT", "2"), with(baseWant, "slurm.restart_count", "2"), nil},
		{"restart count empty is 0", with(baseEnv, "SLURM_RESTART_COUNT", ""), baseWant, nil},
		{"restart count negative", with(baseEnv, "SLURM_RESTART_COUNT", "-1"), with(baseWant, "slurm.restart_count", "-1"), nil},
		{"restart count invalid is omitted, not defaulted", with(baseEnv, "SLURM_RESTART_COUNT", "1.0"),
			with(baseWant, "slurm.restart_count", deleted), []string{"slurm.restart_count"}},
		{"nnodes from SLURM_NNODES", with(fullEnv, "SLURM_JOB_NUM_NODES", deleted), with(fullWant, "slurm.nnodes", "3"), nil},
		{"nnodes from SLURM_NNODES when SLURM_JOB_NUM_NODES is empty", with(fullEnv, "SLURM_JOB_NUM_NODES", ""),
			with(fullWant, "slurm.nnodes", "3"), nil},
		{"nnodes invalid is omitted", with(fullEnv, "SLURM_JOB_NUM_NODES", "two"),
			with(fullWant, "slurm.nnodes", deleted), []string{"slurm.nnodes"}},
		{"ntasks has no default", with(fullEnv, "SLURM_NTASKS", deleted), with(fullWant, "slurm.ntasks", deleted), nil},
		{"ntasks invalid is omitted", with(fullEnv, "SLURM_NTASKS", "1e3"), with(fullWant, "slurm.ntasks", deleted), []string{"slurm.ntasks"}},
		{"integers are checked in order of key",
			with(fullEnv, "SLURM_NTASKS", "x", "SLURM_RESTART_COUNT", "y", "SLURM_ARRAY_TASK_COUNT", "z", "SLURM_NNODES", deleted, "SLURM_JOB_NUM_NODES", "w"),
			with(fullWant, "slurm.ntasks", deleted, "slurm.restart_count", deleted, "slurm.array.count", deleted, "slurm.nnodes", deleted),
			[]string{"slurm.array.count", "slurm.nnodes", "slurm.ntasks", "slurm.restart_count"}},
		{"partition from SLURM_PARTITION", with(fullEnv, "SLURM_JOB_PARTITION", deleted), with(fullWant, "slurm.partition", "other"), nil},
		{"partition from SLURM_PARTITION when SLURM_JOB_PARTITION is empty", with(fullEnv, "SLURM_JOB_PARTITION", ""),
			with(fullWant, "slurm.partition", "other"), nil},
		{"sluids from NV_LAUNCH_*", with(fullEnv, "LENS_SLURM_SLUID", deleted, "LENS_SLURM_ARRAY_SLUID", ""),
			with(fullWant, "slurm.sluid", "sluid-nv", "slurm.array.sluid", "asluid-nv"), nil},
		{"sluid from Slurm's own SLURM_JOB_SLUID (tasks of 26.05 on)",
			with(fullEnv, "LENS_SLURM_SLUID", deleted, "NV_LAUNCH_SLUID", "", "SLURM_JOB_SLUID", "sAWNM8RBK7JF00"),
			with(fullWant, "slurm.sluid", "sAWNM8RBK7JF00"), nil},
		{"a launcher's sluid wins over SLURM_JOB_SLUID", with(fullEnv, "SLURM_JOB_SLUID", "sAWNM8RBK7JF00"), fullWant, nil},
		{"no sluids", with(fullEnv, "LENS_SLURM_SLUID", deleted, "NV_LAUNCH_SLUID", "", "LENS_SLURM_ARRAY_SLUID", deleted, "NV_LAUNCH_ARRAY_SLUID", deleted),
			with(fullWant, "slurm.sluid", deleted, "slurm.array.sluid", deleted), nil},
		{"in a step (SLURM_STEP_ID): the topology, no head node", with(fullEnv, "SLURM_STEP_ID", "0"), stepWant, nil},
		{"in a step (SLURM_STEPID): the topology, no head node", with(fullEnv, "SLURM_STEPID", "0"), stepWant, nil},
		{"empty step ids are not a step", with(fullEnv, "SLURM_STEP_ID", "", "SLURM_STEPID", ""), fullWant, nil},
		{"torchelastic and run ids derive no run uuid",
			with(baseEnv, "TORCHELASTIC_RUN_ID", "r", "TORCHELASTIC_RESTART_COUNT", "1", "SLURM_ARRAY_JOB_ID", "100"),
			baseWant, nil},
		{"values are not trimmed", with(baseEnv, "SLURM_JOB_NAME", " a b "), with(baseWant, "slurm.job.name", " a b "), nil},

		// Inherited values.
		{"inherited value wins", with(fullEnv, carrierVar, "slurm.job.name=inh,slurm.head_node.name=c9"),
			with(fullWant, "slurm.job.name", "inh", "slurm.head_node.name", "c9"), nil},
		{"inherited head node is kept in a step", with(fullEnv, "SLURM_STEP_ID", "0", carrierVar, "slurm.head_node.name=c9"),
			with(stepWant, "slurm.head_node.name", "c9"), nil},
		{"an inherited topology is the task's own in a step, gone outside",
			with(fullEnv, "SLURM_STEP_ID", "0", carrierVar, "slurm.topology.addr=sw9.c9"), stepWant, nil},
		{"an inherited topology is dropped outside a step",
			with(fullEnv, carrierVar, "slurm.topology.addr=sw9.c9"), fullWant, nil},
		{"inherited value is decoded", with(baseEnv, carrierVar, "slurm.job.name=a%2Cb%20c"), with(baseWant, "slurm.job.name", "a,b c"), nil},
		{"empty inherited value is ignored", with(fullEnv, carrierVar, "slurm.job.name=,slurm.nnodes="), fullWant, nil},
		{"invalid inherited integer is discarded for the local value", with(fullEnv, carrierVar, "slurm.nnodes=two,slurm.restart_count=1.5"),
			fullWant, []string{"slurm.nnodes", "slurm.restart_count"}},
		{"invalid inherited integer without a local value", with(baseEnv, carrierVar, "slurm.ntasks=x"),
			baseWant, []string{"slurm.ntasks"}},
		{"inherited integer is canonical", with(baseEnv, carrierVar, "slurm.ntasks=+08,slurm.array.count=%2B3"),
			with(baseWant, "slurm.ntasks", "8", "slurm.array.count", "3"), nil},
		{"inherited valid integer hides an invalid local one", with(baseEnv, "SLURM_NTASKS", "x", carrierVar, "slurm.ntasks=4"),
			with(baseWant, "slurm.ntasks", "4"), nil},
		{"other inherited values are not typed", with(baseEnv, carrierVar, "slurm.job.id=007,slurm.array.task_id=+1"),
			with(baseWant, "slurm.job.id", "007", "slurm.array.task_id", "+1"), nil},
		{"inherited job uuid wins", with(baseEnv, carrierVar, "nv.dl.job.uuid=U"), with(baseWant, "nv.dl.job.uuid", "U"), nil},
		{"inherited run uuid", with(baseEnv, carrierVar, "nv.dl.run.uuid=R"), with(baseWant, "nv.dl.run.uuid", "R"), nil},
		{"inherited values do not change the derivation",
			with(baseEnv, carrierVar, "slurm.cluster.name=other,slurm.array.job_id=999,slurm.job.id.raw=100"),
			with(baseWant, "slurm.cluster.name", "other", "slurm.array.job_id", "999"), nil},

		// A carrier of another job: submitted from inside job 999.
		{"another job's carrier is replaced, the user's keys are not read here",
			with(fullEnv, carrierVar, "slurm.job.id.raw=999,slurm.job.id=999,slurm.job.name=outer,slurm.head_node.name=c9,"+
				"nv.dl.job.uuid=U,nv.dl.run.uuid=R,service.name=s"),
			fullWant, []string{"slurm.job.id.raw"}},
		{"another array's element: its own",
			with(baseEnv, "SLURM_JOB_ID", "101", "SLURM_ARRAY_JOB_ID", "100", "SLURM_ARRAY_TASK_ID", "1", carrierVar, "slurm.job.id.raw=7,slurm.array.task_id=0"),
			with(baseWant, "slurm.job.id", "100_1", "slurm.job.id.raw", "101", "slurm.array.task_id", "1"), []string{"slurm.job.id.raw"}},
		{"the same job's carrier: inherited values win",
			with(fullEnv, carrierVar, "slurm.job.id.raw=100,slurm.job.name=outer,nv.dl.run.uuid=R"),
			with(fullWant, "slurm.job.name", "outer", "nv.dl.run.uuid", "R"), nil},
		{"a carrier without a raw job id is not another job's",
			with(fullEnv, carrierVar, "slurm.job.id=999,slurm.job.name=outer"),
			with(fullWant, "slurm.job.id", "999", "slurm.job.name", "outer"), nil},
		{"keys outside the allowlist are not read",
			with(baseEnv, carrierVar, "service.name=x,slurm.nodelist=c[1-2],slurm.cluster=old,slurm.torchelastic.restart_count=2,slurm.job=x,nv.dl.rank=0"),
			baseWant, nil},
		{"malformed carrierVar entries are skipped silently", with(baseEnv, carrierVar, "garbage,=x,slurm.job.name=n,,"),
			with(baseWant, "slurm.job.name", "n"), nil},

		// Activation by inheritance alone.
		{"inherited key activates without a job", environ.Map{"SLURM_CLUSTER_NAME": "c", "SLURMD_NODENAME": "c1", carrierVar: "slurm.job.id=9,nv.dl.run.uuid=R,service.name=s"},
			map[string]string{"slurm.job.id": "9", "nv.dl.run.uuid": "R"}, nil},
		{"inherited key with an empty job id", environ.Map{"SLURM_JOB_ID": "", carrierVar: "slurm.nnodes=2"},
			map[string]string{"slurm.nnodes": "2"}, nil},
		{"other inherited keys do not activate", environ.Map{carrierVar: "service.name=x,slurm.nodelist=c1,slurm.cluster=c"},
			map[string]string{}, nil},
		{"empty inherited values do not activate", environ.Map{carrierVar: "slurm.job.id=,nv.dl.job.uuid="}, map[string]string{}, nil},
		{"invalid inherited integers do not activate", environ.Map{carrierVar: "slurm.nnodes=x"}, map[string]string{}, []string{"slurm.nnodes"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, warns := Strings(tt.env)
			if got == nil {
				t.Fatal("Strings returned a nil map")
			}
			if !maps.Equal(got, tt.want) {
				t.Errorf("Strings =\n%v\nwant\n%v", sorted(got), sorted(tt.want))
			}
			if keys := warningKeys(warns); !slices.Equal(keys, tt.warns) {
				t.Errorf("warning keys %q, want %q (%v)", keys, tt.warns, warns)
			}
			for k := range got {
				if !IsKey(k) {
					t.Errorf("result holds %q, which is not allowlisted", k)
				}
			}
		})
	}
}

func TestDetect(t *testing.T) {
	got, warns := Detect(with(fullEnv, carrierVar, "slurm.ntasks=%2B016,slurm.job.id=007,nv.dl.run.uuid=R,slurm.restart_count=x"))
	want := map[string]any{
		"slurm.job.id":          "007",
		"slurm.job.id.raw":      "100",
		"slurm.array.job_id":    "100",
		"slurm.array.task_id":   "0",
		"slurm.array.count":     int64(1),
		"slurm.restart_count":   int64(1),
		"slurm.cluster.name":    "c",
		"nv.dl.job.uuid":        jobUUID("c", "100"),
		"nv.dl.run.uuid":        "R",
		"slurm.job.name":        "train",
		"slurm.partition":       "gpu",
		"slurm.nnodes":          int64(2),
		"slurm.ntasks":          int64(16),
		"slurm.job.user":        "alice",
		"slurm.job.account":     "research",
		"slurm.job.qos":         "high",
		"slurm.job.reservation": "maint",
		"slurm.segment":         "seg1",
		"slurm.head_node.name":  "c1",
		"slurm.sluid":           "sluid-lens",
		"slurm.array.sluid":     "asluid-lens",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Detect =\n%v\nwant\n%v", got, want)
	}
	if keys := warningKeys(warns); !slices.Equal(keys, []string{"slurm.restart_count"}) {
		t.Errorf("warnings %v", warns)
	}
	if got, _ := Detect(environ.Map{}); got == nil || len(got) != 0 {
		t.Errorf("inactive Detect = %#v, want empty", got)
	}
}

func TestStringsWarningText(t *testing.T) {
	_, warns := Strings(with(baseEnv, "SLURM_NNODES", "two", carrierVar, "slurm.ntasks=x"+strings.Repeat("y", 100)))
	want := []string{
		`key "slurm.nnodes": SLURM_NNODES="two" is not an integer: omitted`,
		`key "slurm.ntasks": inherited value "x` + strings.Repeat("y", 63) + `"... is not an integer: discarded`,
	}
	var got []string
	for _, w := range warns {
		got = append(got, w.String())
	}
	if !slices.Equal(got, want) {
		t.Errorf("warnings\n%q\nwant\n%q", got, want)
	}
}

// The srun task of the shared test data, with and without the carrierVar its
// batch step passed on.
func TestStringsTaskEnv(t *testing.T) {
	want := map[string]string{
		"slurm.job.id":                "4242",
		"slurm.job.id.raw":            "4242",
		"slurm.array.job_id":          "4242",
		"slurm.array.task_id":         "0",
		"slurm.array.count":           "1",
		"slurm.restart_count":         "0",
		"slurm.cluster.name":          "cluster-a",
		"slurm.job.name":              "train.sbatch",
		"slurm.job.user":              "alice",
		"slurm.job.account":           "research",
		"slurm.job.qos":               "normal",
		"slurm.partition":             "gpu",
		"slurm.nnodes":                "2",
		"slurm.ntasks":                "4",
		"slurm.node.name":             "c1",
		"slurm.step.id":               "0",
		"slurm.step.ntasks":           "4",
		"slurm.task.id":               "1",
		"slurm.task.local_id":         "1",
		"slurm.topology.addr":         "c1",
		"slurm.topology.addr_pattern": "node",
		"nv.dl.job.uuid":              jobUUID("cluster-a", "4242"),
	}
	got, warns := Strings(readList(taskEnv(t)))
	if !maps.Equal(got, want) || warns != nil {
		t.Errorf("Strings =\n%v %v\nwant\n%v", sorted(got), warns, sorted(want))
	}
	// The batch step's head node comes in through the carrier.
	got, warns = Strings(readList(taskEnvWithCarrier(t)))
	if want := with(want, "slurm.head_node.name", "c1"); !maps.Equal(got, want) || warns != nil {
		t.Errorf("with the carrier: Strings =\n%v %v\nwant\n%v", sorted(got), warns, sorted(want))
	}
	parsed, _ := libcarrier.Parse(carrier25(t))
	if len(parsed) != 25 {
		t.Errorf("carrier-25.txt has %d keys", len(parsed))
	}
}

func TestIsKey(t *testing.T) {
	for _, c := range keyCases {
		if IsKey(c.key) == c.ranks || IsRankKey(c.key) != c.ranks {
			t.Errorf("IsKey(%q) = %v, IsRankKey %v; a rank key: %v", c.key, IsKey(c.key), IsRankKey(c.key), c.ranks)
		}
		task := Task{Ranks: true}
		if !task.Manages(c.key) || (&Task{}).Manages(c.key) == c.ranks {
			t.Errorf("Manages(%q) with ranks %v, without %v", c.key, task.Manages(c.key), (&Task{}).Manages(c.key))
		}
	}
	for _, k := range []string{
		"slurm.nodelist", "slurm.cluster", "slurm.torchelastic.restart_count", // retired
		"", "slurm.", "slurm.job", "SLURM_JOB_ID", "Slurm.job.id", " slurm.job.id", "slurm.job.id ",
		"nv.dl.rank", "nv.dl.job_uuid", "service.name", "slurm.topology",
	} {
		if IsKey(k) {
			t.Errorf("IsKey(%q) = true", k)
		}
	}
}

func BenchmarkStrings(b *testing.B) {
	for _, bc := range []struct {
		name string
		kv   []string
	}{
		{"task", taskEnv(b)},
		{"task+carrier25", taskEnvWithCarrier(b)},
	} {
		// What a task pays in all with the Env of the hot path: the Vars
		// from envp, then the detection.
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var env Vars
				env.ReadList(bc.kv)
				_, _ = Strings(&env)
			}
		})
	}
}

func BenchmarkReadList(b *testing.B) {
	kv := taskEnvWithCarrier(b)
	var env Vars
	b.ReportAllocs()
	for b.Loop() {
		env.ReadList(kv)
	}
}

// BenchmarkStringsMap is BenchmarkStrings over an Env held in a map, as a
// Go program that is not the plugin has one.
func BenchmarkStringsMap(b *testing.B) {
	for _, bc := range []struct {
		name string
		kv   []string
	}{
		{"task", taskEnv(b)},
		{"task+carrier25", taskEnvWithCarrier(b)},
	} {
		env := environ.List(bc.kv)
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, _ = Strings(env)
			}
		})
		// What a task pays in all: building the map from envp, then detecting.
		b.Run(bc.name+"/List", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, _ = Strings(environ.List(bc.kv))
			}
		})
	}
}
func TestCanonical(t *testing.T) {
	for _, tt := range []struct {
		in, out string
		ok      bool
	}{
		{"0", "0", true}, {"7", "7", true}, {"-1", "-1", true}, {" +007 ", "7", true},
		{"-0", "0", true}, {"+0", "0", true}, {"00", "0", true}, {"-012", "-12", true},
		{"9223372036854775807", "9223372036854775807", true},
		{"3.5", "", false}, {"1e3", "", false}, {"1_000", "", false}, {"--1", "", false},
		{"true", "", false}, {"seven", "", false}, {"", "", false}, {"-", "", false},
	} {
		out, ok := canonicalInteger(tt.in)
		if out != tt.out || ok != tt.ok {
			t.Errorf("canonicalInteger(%q) = %q, %v; want %q, %v", tt.in, out, ok, tt.out, tt.ok)
		}
	}
}
