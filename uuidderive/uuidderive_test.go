package uuidderive

import (
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/spank-otel/spank-otel/environ"
)

// The expected UUIDs are github.com/google/uuid's, computed independently
// of the code under test.

func TestJobName(t *testing.T) {
	tests := []struct {
		name string
		env  environ.Map
		want string
	}{
		{"plain job", environ.Map{"SLURM_CLUSTER_NAME": "cluster-a", "SLURM_JOB_ID": "12345"}, "nemo.lens.job/cluster-a/12345"},
		{"array element uses the array job id",
			environ.Map{"SLURM_CLUSTER_NAME": "c", "SLURM_JOB_ID": "101", "SLURM_ARRAY_JOB_ID": "100", "SLURM_ARRAY_TASK_ID": "1"},
			"nemo.lens.job/c/100"},
		{"array task id set but empty still means array",
			environ.Map{"SLURM_CLUSTER_NAME": "c", "SLURM_JOB_ID": "101", "SLURM_ARRAY_JOB_ID": "100", "SLURM_ARRAY_TASK_ID": ""},
			"nemo.lens.job/c/100"},
		{"array job id without task id is ignored",
			environ.Map{"SLURM_CLUSTER_NAME": "c", "SLURM_JOB_ID": "101", "SLURM_ARRAY_JOB_ID": "100"},
			"nemo.lens.job/c/101"},
		{"array element without array job id has no job",
			environ.Map{"SLURM_CLUSTER_NAME": "c", "SLURM_JOB_ID": "101", "SLURM_ARRAY_TASK_ID": "3"},
			"nemo.lens.job/c/nojob"},
		{"array element with empty array job id has no job",
			environ.Map{"SLURM_CLUSTER_NAME": "c", "SLURM_JOB_ID": "101", "SLURM_ARRAY_JOB_ID": "", "SLURM_ARRAY_TASK_ID": "3"},
			"nemo.lens.job/c/nojob"},
		{"empty job id", environ.Map{"SLURM_CLUSTER_NAME": "c", "SLURM_JOB_ID": ""}, "nemo.lens.job/c/nojob"},
		{"no job id", environ.Map{"SLURM_CLUSTER_NAME": "c"}, "nemo.lens.job/c/nojob"},
		{"cluster unset", environ.Map{"SLURM_JOB_ID": "7"}, "nemo.lens.job/nocluster/7"},
		{"cluster empty", environ.Map{"SLURM_JOB_ID": "7", "SLURM_CLUSTER_NAME": ""}, "nemo.lens.job/nocluster/7"},
		{"empty environment", environ.Map{}, "nemo.lens.job/nocluster/nojob"},
		{"values are used verbatim", environ.Map{"SLURM_JOB_ID": " 7 ", "SLURM_CLUSTER_NAME": "A b"}, "nemo.lens.job/A b/ 7 "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := JobName(tt.env); got != tt.want {
				t.Errorf("JobName = %q, want %q", got, tt.want)
			}
			want := uuid.NewSHA1(uuid.NameSpaceURL, []byte(tt.want))
			if got := uuid.UUID(JobUUID(tt.env)); got != want {
				t.Errorf("JobUUID = %v, want uuid5(URL, %q) = %v", got, tt.want, want)
			}
		})
	}
}

func TestJobUUIDSpecExample(t *testing.T) {
	got := JobUUID(environ.Map{"SLURM_CLUSTER_NAME": "cluster-a", "SLURM_JOB_ID": "12345"})
	if want := "be34ba0f-41ed-5d53-84c1-e3f3dd25bfd7"; got.String() != want {
		t.Fatalf("JobUUID = %v, want %v", got, want)
	}
	if u := uuid.UUID(got); u.Version() != 5 || u.Variant() != uuid.RFC4122 {
		t.Errorf("version %d variant %v, want 5 and RFC4122", u.Version(), u.Variant())
	}
}

// The job UUID must be the same for every step, restart and element of a job,
// and must not depend on anything but the job key and the cluster.
func TestJobUUIDStable(t *testing.T) {
	base := JobUUID(environ.Map{"SLURM_CLUSTER_NAME": "c", "SLURM_JOB_ID": "100"})
	same := []environ.Map{
		{"SLURM_CLUSTER_NAME": "c", "SLURM_JOB_ID": "100", "SLURM_RESTART_COUNT": "3"},
		{"SLURM_CLUSTER_NAME": "c", "SLURM_JOB_ID": "100", "SLURM_STEP_ID": "2", "TORCHELASTIC_RESTART_COUNT": "1"},
		{"SLURM_CLUSTER_NAME": "c", "SLURM_JOB_ID": "100", "OTEL_RESOURCE_ATTRIBUTES": "nv.dl.job.uuid=x,slurm.job.id=9"},
		{"SLURM_CLUSTER_NAME": "c", "SLURM_JOB_ID": "101", "SLURM_ARRAY_JOB_ID": "100", "SLURM_ARRAY_TASK_ID": "1"},
		{"SLURM_CLUSTER_NAME": "c", "SLURM_JOB_ID": "102", "SLURM_ARRAY_JOB_ID": "100", "SLURM_ARRAY_TASK_ID": "2"},
	}
	for i, e := range same {
		if got := JobUUID(e); got != base {
			t.Errorf("case %d: JobUUID = %v, want %v", i, got, base)
		}
	}
	if other := JobUUID(environ.Map{"SLURM_CLUSTER_NAME": "d", "SLURM_JOB_ID": "100"}); other == base {
		t.Errorf("another cluster gave the same UUID %v", other)
	}
}

func TestRunName(t *testing.T) {
	tests := []struct {
		name  string
		env   environ.Map
		runID string
		want  string
		ok    bool
	}{
		{"restart count", environ.Map{"SLURM_CLUSTER_NAME": "cluster-a", "SLURM_JOB_ID": "12345", "SLURM_RESTART_COUNT": "1"}, "",
			"nemo.lens.run/cluster-a/12345/sr1", true},
		{"restart count unset is 0", environ.Map{"SLURM_CLUSTER_NAME": "c", "SLURM_JOB_ID": "5"}, "",
			"nemo.lens.run/c/5/sr0", true},
		{"restart count empty is 0", environ.Map{"SLURM_CLUSTER_NAME": "c", "SLURM_JOB_ID": "5", "SLURM_RESTART_COUNT": ""}, "",
			"nemo.lens.run/c/5/sr0", true},
		{"no cluster", environ.Map{"SLURM_JOB_ID": "5", "SLURM_RESTART_COUNT": "2"}, "",
			"nemo.lens.run/nocluster/5/sr2", true},
		{"torchelastic restart count appended", environ.Map{"SLURM_CLUSTER_NAME": "c", "SLURM_JOB_ID": "5", "TORCHELASTIC_RESTART_COUNT": "4"}, "",
			"nemo.lens.run/c/5/sr0/te4", true},
		{"torchelastic restart count set but empty", environ.Map{"SLURM_CLUSTER_NAME": "c", "SLURM_JOB_ID": "5", "TORCHELASTIC_RESTART_COUNT": ""}, "",
			"nemo.lens.run/c/5/sr0/te", true},
		{"array job has no sr", environ.Map{"SLURM_CLUSTER_NAME": "c", "SLURM_JOB_ID": "101", "SLURM_ARRAY_JOB_ID": "100", "SLURM_ARRAY_TASK_ID": "1", "SLURM_RESTART_COUNT": "2"}, "",
			"nemo.lens.run/c/100", true},
		{"array job with torchelastic", environ.Map{"SLURM_CLUSTER_NAME": "c", "SLURM_JOB_ID": "101", "SLURM_ARRAY_JOB_ID": "100", "SLURM_ARRAY_TASK_ID": "1", "TORCHELASTIC_RESTART_COUNT": "3"}, "",
			"nemo.lens.run/c/100/te3", true},
		{"run id ignored with a Slurm job", environ.Map{"SLURM_CLUSTER_NAME": "c", "SLURM_JOB_ID": "5", "TORCHELASTIC_RUN_ID": "tr"}, "mine",
			"nemo.lens.run/c/5/sr0", true},
		{"array job id alone is a Slurm job", environ.Map{"SLURM_CLUSTER_NAME": "c", "SLURM_ARRAY_JOB_ID": "100"}, "mine",
			"nemo.lens.run/c/nojob/sr0", true},
		{"local run id argument", environ.Map{}, "exp1",
			"nemo.lens.run/local/exp1/te0", true},
		{"local run id from torchelastic", environ.Map{"TORCHELASTIC_RUN_ID": "tr", "TORCHELASTIC_RESTART_COUNT": "2"}, "",
			"nemo.lens.run/local/tr/te2", true},
		{"argument beats torchelastic run id", environ.Map{"TORCHELASTIC_RUN_ID": "tr"}, "exp1",
			"nemo.lens.run/local/exp1/te0", true},
		{"local empty torchelastic restart count is 0", environ.Map{"TORCHELASTIC_RESTART_COUNT": ""}, "exp1",
			"nemo.lens.run/local/exp1/te0", true},
		{"empty job id means local", environ.Map{"SLURM_JOB_ID": "", "SLURM_CLUSTER_NAME": "c"}, "exp1",
			"nemo.lens.run/local/exp1/te0", true},
		{"no run id", environ.Map{"SLURM_CLUSTER_NAME": "c"}, "", "", false},
		{"empty torchelastic run id", environ.Map{"TORCHELASTIC_RUN_ID": ""}, "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := RunName(tt.env, tt.runID)
			if got != tt.want || ok != tt.ok {
				t.Errorf("RunName = %q, %v; want %q, %v", got, ok, tt.want, tt.ok)
			}
			u, ok := RunUUID(tt.env, tt.runID)
			want := uuid.Nil
			if tt.ok {
				want = uuid.NewSHA1(uuid.NameSpaceURL, []byte(tt.want))
			}
			if uuid.UUID(u) != want || ok != tt.ok {
				t.Errorf("RunUUID = %v, %v; want %v, %v", u, ok, want, tt.ok)
			}
		})
	}
}

func TestRunUUIDSpecExample(t *testing.T) {
	got, ok := RunUUID(environ.Map{"SLURM_CLUSTER_NAME": "cluster-a", "SLURM_JOB_ID": "12345", "SLURM_RESTART_COUNT": "1"}, "")
	if want := "be42db52-ed95-5653-b035-190f2392e702"; !ok || got.String() != want {
		t.Fatalf("RunUUID = %v, %v; want %v, true", got, ok, want)
	}
}

// Names longer than the stack buffer must still hash correctly.
func TestLongNames(t *testing.T) {
	long := strings.Repeat("x", 3*nameBufSize)
	e := environ.Map{"SLURM_CLUSTER_NAME": long, "SLURM_JOB_ID": "1"}
	if got, want := uuid.UUID(JobUUID(e)), uuid.NewSHA1(uuid.NameSpaceURL, []byte("nemo.lens.job/"+long+"/1")); got != want {
		t.Errorf("JobUUID = %v, want %v", got, want)
	}
	if got := JobName(e); got != "nemo.lens.job/"+long+"/1" {
		t.Errorf("JobName has length %d", len(got))
	}
	u, ok := RunUUID(environ.Map{}, long)
	if want := uuid.NewSHA1(uuid.NameSpaceURL, []byte("nemo.lens.run/local/"+long+"/te0")); !ok || uuid.UUID(u) != want {
		t.Errorf("RunUUID = %v, %v; want %v", u, ok, want)
	}
}

// JobUUID runs in every task of every job step: it must not allocate.
func TestJobUUIDDoesNotAllocate(t *testing.T) {
	e := environ.Map{"SLURM_CLUSTER_NAME": "cluster-a", "SLURM_JOB_ID": "12345"}
	if n := testing.AllocsPerRun(100, func() { _ = JobUUID(e) }); n != 0 {
		t.Errorf("JobUUID: %v allocations per run, want 0", n)
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = RunUUID(e, "") }); n != 0 {
		t.Errorf("RunUUID: %v allocations per run, want 0", n)
	}
}

func BenchmarkJobUUID(b *testing.B) {
	e := environ.Map{"SLURM_CLUSTER_NAME": "cluster-a", "SLURM_JOB_ID": "12345"}
	b.ReportAllocs()
	for b.Loop() {
		_ = JobUUID(e)
	}
}
