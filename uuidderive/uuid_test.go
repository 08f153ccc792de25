package uuidderive

import (
	"testing"

	"github.com/google/uuid"

	"github.com/spank-otel/spank-otel/environ"
)

func TestJobVars(t *testing.T) {
	tests := []struct {
		vars JobVars
		want string
	}{
		{JobVars{Cluster: "cluster-a", JobID: "12345"}, "nemo.lens.job/cluster-a/12345"},
		{JobVars{Cluster: "c", JobID: "101", ArrayJobID: "100", ArrayTask: true}, "nemo.lens.job/c/100"},
		{JobVars{Cluster: "c", JobID: "101", ArrayJobID: "100"}, "nemo.lens.job/c/101"},
		{JobVars{Cluster: "c", JobID: "101", ArrayTask: true}, "nemo.lens.job/c/nojob"},
		{JobVars{JobID: "7"}, "nemo.lens.job/nocluster/7"},
		{JobVars{}, "nemo.lens.job/nocluster/nojob"},
	}
	for _, tt := range tests {
		want := uuid.NewSHA1(uuid.NameSpaceURL, []byte(tt.want))
		if got := tt.vars.UUID(); uuid.UUID(got) != want || got.String() != want.String() {
			t.Errorf("%+v.UUID() = %v, want uuid5(URL, %q) = %v", tt.vars, got, tt.want, want)
		}
	}
}

// TestJobVarsMatchJobUUID: the values of an environment give its JobUUID.
func TestJobVarsMatchJobUUID(t *testing.T) {
	for _, e := range []environ.Map{
		{},
		{"SLURM_JOB_ID": "7", "SLURM_CLUSTER_NAME": "c"},
		{"SLURM_JOB_ID": "7", "SLURM_CLUSTER_NAME": ""},
		{"SLURM_JOB_ID": "101", "SLURM_ARRAY_JOB_ID": "100", "SLURM_ARRAY_TASK_ID": "1"},
		{"SLURM_JOB_ID": "101", "SLURM_ARRAY_JOB_ID": "100", "SLURM_ARRAY_TASK_ID": ""},
		{"SLURM_JOB_ID": "101", "SLURM_ARRAY_JOB_ID": "100"},
		{"SLURM_JOB_ID": "101", "SLURM_ARRAY_TASK_ID": "3"},
	} {
		_, array := e["SLURM_ARRAY_TASK_ID"]
		vars := JobVars{Cluster: e["SLURM_CLUSTER_NAME"], JobID: e["SLURM_JOB_ID"], ArrayJobID: e["SLURM_ARRAY_JOB_ID"], ArrayTask: array}
		if got, want := vars.UUID(), JobUUID(e); got != want {
			t.Errorf("JobVars of %v: UUID %v, JobUUID %v", e, got, want)
		}
	}
}

// TestString checks the text form against github.com/google/uuid on
// UUIDs of every nibble value.
func TestString(t *testing.T) {
	for i := 0; i < 256; i++ {
		var u UUID
		for j := range u {
			u[j] = byte(i*7 + j*31)
		}
		if got, want := u.String(), uuid.UUID(u).String(); got != want {
			t.Errorf("String() = %s, want %s", got, want)
		}
	}
	if got := namespaceURL(); uuid.UUID(got) != uuid.NameSpaceURL {
		t.Errorf("namespaceURL() = %s", got)
	}
}
