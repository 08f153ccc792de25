package main

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/google/uuid"
	"gotest.tools/v3/assert"
)

var slurmStep = []string{
	"SLURM_JOB_ID=12345", "SLURM_CLUSTER_NAME=cluster-a", "SLURM_STEP_ID=0",
	"SLURM_NNODES=2", "SLURM_NTASKS=4", "SLURM_RESTART_COUNT=1", "SLURMD_NODENAME=c1",
	"SLURM_TOPOLOGY_ADDR=c1",
}

func invoke(args []string, env []string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = run(args, env, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestCommands(t *testing.T) {
	const want = "nv.dl.job.uuid=be34ba0f-41ed-5d53-84c1-e3f3dd25bfd7,slurm.array.count=1,slurm.array.job_id=12345,slurm.array.task_id=0,slurm.cluster.name=cluster-a,slurm.job.id=12345,slurm.job.id.raw=12345,slurm.nnodes=2,slurm.ntasks=4,slurm.restart_count=1,slurm.topology.addr=c1,team=a%2Cb"
	withUser := append([]string{"OTEL_RESOURCE_ATTRIBUTES=team=a%2Cb"}, slurmStep...)
	tests := []struct {
		name       string
		args       []string
		env        []string
		code       int
		stdout     string
		stderrPart string
	}{
		{name: "task-env in a step", args: []string{"task-env"}, env: withUser, stdout: want + "\n"},
		{name: "task-env outside Slurm prints nothing", args: []string{"task-env"}, env: []string{"HOME=/"}},
		{name: "task-env outside Slurm keeps a set value", args: []string{"task-env"},
			env: []string{"OTEL_RESOURCE_ATTRIBUTES=a=1"}, stdout: "a=1\n"},
		{name: "task-env warns on a malformed carrier and keeps it", args: []string{"task-env"},
			env: append([]string{"OTEL_RESOURCE_ATTRIBUTES=a=1,junk"}, slurmStep...), stdout: "a=1,junk\n", stderrPart: "malformed"},
		{name: "export", args: []string{"export"}, env: withUser, stdout: "export OTEL_RESOURCE_ATTRIBUTES=" + want + "\n"},
		{name: "export quotes what the shell would read", args: []string{"export"},
			env: []string{"OTEL_RESOURCE_ATTRIBUTES=it's=1"}, stdout: `export OTEL_RESOURCE_ATTRIBUTES='it'\''s=1'` + "\n"},
		{name: "export --stage sbatch writes the head node", args: []string{"export", "--stage", "sbatch"}, env: slurmStep,
			stdout: "export OTEL_RESOURCE_ATTRIBUTES=nv.dl.job.uuid=be34ba0f-41ed-5d53-84c1-e3f3dd25bfd7,slurm.array.count=1,slurm.array.job_id=12345,slurm.array.task_id=0,slurm.cluster.name=cluster-a,slurm.head_node.name=c1,slurm.job.id=12345,slurm.job.id.raw=12345,slurm.nnodes=2,slurm.ntasks=4,slurm.restart_count=1\n"},
		{name: "export rejects an unknown stage", args: []string{"export", "--stage=prolog"}, code: 2, stderrPart: "sbatch or task"},
		{name: "decode an argument", args: []string{"decode", "b=2, a = x%2Cy ,c=%zz"}, stdout: `{"a":"x,y","b":"2","c":"%zz"}` + "\n"},
		{name: "decode the environment", args: []string{"decode"}, env: []string{"OTEL_RESOURCE_ATTRIBUTES=k=%3C%3E"}, stdout: `{"k":"<>"}` + "\n"},
		{name: "decode warns on a dropped entry", args: []string{"decode", "a=1,oops"}, stdout: `{"a":"1"}` + "\n", stderrPart: "oops"},
		{name: "decode takes one value", args: []string{"decode", "a=1", "b=2"}, code: 2},
		{name: "run-uuid in a job", args: []string{"run-uuid"}, env: slurmStep, stdout: "be42db52-ed95-5653-b035-190f2392e702\n"},
		{name: "run-uuid with a run id", args: []string{"run-uuid", "--run-id", "r1"},
			stdout: uuidOf("nemo.lens.run/local/r1/te0") + "\n"},
		{name: "run-uuid without identity", args: []string{"run-uuid"}, code: 1, stderrPart: "no identity"},
		{name: "unknown command", args: []string{"frobnicate"}, code: 2, stderrPart: `unknown command "frobnicate"`},
		{name: "unknown flag", args: []string{"task-env", "--bogus"}, code: 2, stderrPart: "bogus"},
		{name: "no command", args: nil, code: 2, stderrPart: "Usage"},
		{name: "help", args: []string{"--help"}, stdout: "Usage: spank-otel COMMAND"},
		{name: "subcommand help", args: []string{"run-uuid", "--help"}, stdout: "-run-id"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := invoke(tc.args, tc.env)
			assert.Equal(t, code, tc.code, "stderr: %s", stderr)
			if strings.HasSuffix(tc.stdout, "\n") || tc.stdout == "" {
				assert.Equal(t, stdout, tc.stdout)
			} else {
				assert.Assert(t, strings.Contains(stdout, tc.stdout), "stdout %q", stdout)
			}
			if tc.stderrPart != "" {
				assert.Assert(t, strings.Contains(stderr, tc.stderrPart), "stderr %q", stderr)
			}
		})
	}
}

func TestDetectPrintsIntegersAsNumbers(t *testing.T) {
	code, stdout, _ := invoke([]string{"detect"}, slurmStep)
	assert.Equal(t, code, 0)
	var got map[string]any
	assert.NilError(t, json.Unmarshal([]byte(stdout), &got))
	assert.Equal(t, got["slurm.ntasks"], float64(4))
	assert.Equal(t, got["slurm.job.id"], "12345")
	assert.Equal(t, got["nv.dl.job.uuid"], "be34ba0f-41ed-5d53-84c1-e3f3dd25bfd7")
	_, hasPID := got["process.pid"]
	assert.Assert(t, hasPID)
}

// TestExportEvaluates runs the printed line through a real shell and reads
// the variable back.
func TestExportEvaluates(t *testing.T) {
	for _, carrier := range []string{"a=1", "it's=x%27y", `k$x=1`} {
		code, stdout, _ := invoke([]string{"export"}, []string{"OTEL_RESOURCE_ATTRIBUTES=" + carrier})
		assert.Equal(t, code, 0)
		out, err := exec.Command("sh", "-c", stdout+`printf %s "$OTEL_RESOURCE_ATTRIBUTES"`).Output()
		assert.NilError(t, err)
		assert.Equal(t, string(out), carrier)
	}
}

func uuidOf(name string) string {
	return uuid.NewSHA1(uuid.NameSpaceURL, []byte(name)).String()
}
