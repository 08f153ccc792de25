package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"
	"golang.org/x/sys/unix"
	"gotest.tools/v3/assert"

	"github.com/spank-otel/spank-otel/taskenv"
)

var slurmStep = []string{
	"SLURM_JOB_ID=12345", "SLURM_CLUSTER_NAME=cluster-a", "SLURM_STEP_ID=0",
	"SLURM_NNODES=2", "SLURM_NTASKS=4", "SLURM_RESTART_COUNT=1", "SLURMD_NODENAME=c1",
	"SLURM_TOPOLOGY_ADDR=c1",
}

func invoke(args []string, env []string) (code int, stdout, stderr string) {
	return invokeBudget(args, env, 0)
}

func invokeBudget(args []string, env []string, maxEnvBytes int) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = run(args, env, maxEnvBytes, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestCommands(t *testing.T) {
	const want = "nv.dl.job.uuid=be34ba0f-41ed-5d53-84c1-e3f3dd25bfd7,slurm.array.count=1,slurm.array.job_id=12345,slurm.array.task_id=0,slurm.cluster.name=cluster-a,slurm.job.id=12345,slurm.job.id.raw=12345,slurm.nnodes=2,slurm.node.name=c1,slurm.ntasks=4,slurm.restart_count=1,slurm.step.id=0,slurm.topology.addr=c1,team=a%2Cb"
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
		{name: "task-env repairs a malformed carrier and says what it dropped", args: []string{"task-env"},
			env: append([]string{"OTEL_RESOURCE_ATTRIBUTES=a=1,junk"}, slurmStep...), stdout: "a=1,nv.dl.job.uuid=",
			stderrPart: `spank-otel: OTEL_RESOURCE_ATTRIBUTES: entry "junk" has no '=': dropped`},
		{name: "task-env outside Slurm leaves a malformed carrier", args: []string{"task-env"},
			env: []string{"OTEL_RESOURCE_ATTRIBUTES=a=1,junk"}, stdout: "a=1,junk\n"},
		{name: "export unsets an empty result", args: []string{"export"},
			env: []string{"OTEL_RESOURCE_ATTRIBUTES=slurm.topology.addr=c1"}, stdout: "unset OTEL_RESOURCE_ATTRIBUTES\n"},
		{name: "task-env prints nothing for an empty result", args: []string{"task-env"},
			env: []string{"OTEL_RESOURCE_ATTRIBUTES=slurm.topology.addr=c1"}},
		{name: "export outside Slurm keeps the variable unset", args: []string{"export"}, env: []string{"HOME=/"},
			stdout: "unset OTEL_RESOURCE_ATTRIBUTES\n"},
		{name: "export --stage task writes topology and no head node", args: []string{"export", "--stage", "task"},
			env:    append([]string{"SLURMD_NODENAME=c1", "SLURM_TOPOLOGY_ADDR=c1"}, slurmStep[:2]...),
			stdout: "export OTEL_RESOURCE_ATTRIBUTES=nv.dl.job.uuid=be34ba0f-41ed-5d53-84c1-e3f3dd25bfd7,slurm.array.count=1,slurm.array.job_id=12345,slurm.array.task_id=0,slurm.cluster.name=cluster-a,slurm.job.id=12345,slurm.job.id.raw=12345,slurm.node.name=c1,slurm.restart_count=0,slurm.topology.addr=c1\n"},
		{name: "export", args: []string{"export"}, env: withUser, stdout: "export OTEL_RESOURCE_ATTRIBUTES=" + want + "\n"},
		{name: "export quotes what the shell would read", args: []string{"export"},
			env: []string{"OTEL_RESOURCE_ATTRIBUTES=it's=1"}, stdout: `export OTEL_RESOURCE_ATTRIBUTES='it'\''s=1'` + "\n"},
		{name: "export --stage sbatch writes the head node", args: []string{"export", "--stage", "sbatch"}, env: slurmStep,
			stdout: "export OTEL_RESOURCE_ATTRIBUTES=nv.dl.job.uuid=be34ba0f-41ed-5d53-84c1-e3f3dd25bfd7,slurm.array.count=1,slurm.array.job_id=12345,slurm.array.task_id=0,slurm.cluster.name=cluster-a,slurm.head_node.name=c1,slurm.job.id=12345,slurm.job.id.raw=12345,slurm.nnodes=2,slurm.ntasks=4,slurm.restart_count=1\n"},
		{name: "task-env --step-id: the step the plugin is given", args: []string{"task-env", "--step-id", "7"}, env: withUser,
			stdout: strings.Replace(want, "slurm.step.id=0", "slurm.step.id=7", 1) + "\n"},
		{name: "task-env --step-id batch: a job context", args: []string{"task-env", "--step-id", "batch"}, env: slurmStep,
			stdout: "nv.dl.job.uuid=be34ba0f-41ed-5d53-84c1-e3f3dd25bfd7,slurm.array.count=1,slurm.array.job_id=12345,slurm.array.task_id=0,slurm.cluster.name=cluster-a,slurm.head_node.name=c1,slurm.job.id=12345,slurm.job.id.raw=12345,slurm.nnodes=2,slurm.ntasks=4,slurm.restart_count=1\n"},
		{name: "task-env --rank on", args: []string{"task-env", "--rank", "on"},
			env: append([]string{"SLURM_PROCID=3", "SLURM_LOCALID=1", "SLURM_STEP_NUM_TASKS=4"}, slurmStep...), stdout: "nv.dl.local_rank=1,nv.dl.rank=3,"},
		{name: "task-env --rank off keeps the user's rank", args: []string{"task-env", "--rank", "off"},
			env: append([]string{"SLURM_PROCID=3", "OTEL_RESOURCE_ATTRIBUTES=nv.dl.rank=9"}, slurmStep...), stdout: "nv.dl.job.uuid=be34ba0f-41ed-5d53-84c1-e3f3dd25bfd7,nv.dl.rank=9,"},
		{name: "task-env rejects a bad step id", args: []string{"task-env", "--step-id", "x"}, code: 2, stderrPart: "--step-id must be"},
		{name: "task-env rejects a bad --rank", args: []string{"task-env", "--rank", "yes"}, code: 2, stderrPart: "--rank must be"},
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

// TestExportEvaluates runs the printed line through real shells and reads
// the variable back.
func TestExportEvaluates(t *testing.T) {
	carriers := []string{"a=1", "it's=x%27y", `k$x=1`, "~root:x=1", "~/x=1", "a=1,x:~root:y=1", "a=1,x:~/y=1", "~=1"}
	for _, shell := range []string{"sh", "bash"} {
		if _, err := exec.LookPath(shell); err != nil {
			t.Fatalf("%s: %v", shell, err)
		}
		for _, carrier := range carriers {
			code, stdout, _ := invoke([]string{"export"}, []string{"OTEL_RESOURCE_ATTRIBUTES=" + carrier})
			assert.Equal(t, code, 0)
			out, err := exec.Command(shell, "-c", stdout+`printf %s "$OTEL_RESOURCE_ATTRIBUTES"`).Output()
			assert.NilError(t, err)
			assert.Equal(t, string(out), carrier, "%s read back %q", shell, stdout)
		}
	}
}

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"a=1,b=x%2Cy":   "a=1,b=x%2Cy",
		"~root:x=1":     "'~root:x=1'",
		"a=1,x:~root=1": "'a=1,x:~root=1'",
		"a=1,x~=1":      "a=1,x~=1",
		"it's=1":        `'it'\''s=1'`,
		"":              "''",
	} {
		assert.Equal(t, shellQuote(in), want, "shellQuote(%q)", in)
	}
}

// TestBudget: the command applies the plugin's execve budget.
func TestBudget(t *testing.T) {
	env := append([]string{"OTEL_RESOURCE_ATTRIBUTES=u=1"}, slurmStep...)
	code, stdout, stderr := invokeBudget([]string{"export"}, env, 400)
	assert.Equal(t, code, 0)
	assert.Equal(t, stdout, "export OTEL_RESOURCE_ATTRIBUTES=u=1\n")
	assert.Assert(t, strings.Contains(stderr, "execve budget"), "stderr %q", stderr)

	_, stdout, _ = invokeBudget([]string{"export"}, env, 4096)
	assert.Assert(t, strings.Contains(stdout, "slurm.job.id=12345"), "stdout %q", stdout)

	// This process's own budget follows the shared rule.
	var lim unix.Rlimit
	assert.NilError(t, unix.Getrlimit(unix.RLIMIT_STACK, &lim))
	assert.Equal(t, execveBudget(), taskenv.ExecBudget(taskenv.ExecOf(lim.Cur, nil)))
}

func uuidOf(name string) string {
	return uuid.NewSHA1(uuid.NameSpaceURL, []byte(name)).String()
}

// TestRootFlag: task-env and export find a step task's GPUs below --root
// (default /), as the plugin does below /, and say why they find none.
// The directory holds a node's gres.conf and driver tree but no device
// node, which only root can make: the note names the file it looked for
// under the root given.
func TestRootFlag(t *testing.T) {
	env := append([]string{"SLURM_CONF=/etc/slurm/slurm.conf", "CUDA_VISIBLE_DEVICES=0",
		"SLURM_STEP_GPUS=0", "SLURM_GPUS_ON_NODE=1"}, slurmStep...)
	root := "../../detect/gpu/testdata/node"
	for _, args := range [][]string{
		{"task-env", "--root", root},
		{"export", "--root", root},
	} {
		code, stdout, stderr := invoke(args, env)
		assert.Equal(t, code, exitOK, stderr)
		assert.Assert(t, !strings.Contains(stdout, "nv.gpu."), stdout)
		assert.Assert(t, strings.Contains(stderr, `spank-otel: note: key "nv.gpu.uuid": no GPU UUIDs: stat `+root+"/dev/nvidia0: no such file or directory"), stderr)
	}
	// An empty root has no gres.conf.
	code, _, stderr := invoke([]string{"task-env", "--root", t.TempDir()}, env)
	assert.Equal(t, code, exitOK, stderr)
	assert.Assert(t, strings.Contains(stderr, "/etc/slurm/gres.conf: no such file or directory"), stderr)
}

// TestAdmittedFlag: --admitted names the GPUs a bound task's device cgroup
// admits on a copy of a node, which has no cgroup to ask: the task then
// gets its own GPU, not the step's first that Slurm's variables name. As
// root the copy gets its device nodes and the whole answer is checked;
// otherwise the note shows that the admitted node was looked for.
func TestAdmittedFlag(t *testing.T) {
	root := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		path := filepath.Join(root, name)
		assert.NilError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		assert.NilError(t, os.WriteFile(path, []byte(text), 0o644))
	}
	write("etc/slurm/gres.conf", "AutoDetect=nvidia\n")
	write("etc/slurm/cgroup.conf", "ConstrainDevices=yes\n")
	uuids := []string{"GPU-00000000-0000-4000-8000-000000000000", "GPU-11111111-0000-4000-8000-000000000000"}
	for i, u := range uuids {
		write(fmt.Sprintf("proc/driver/nvidia/gpus/0000:%d1:00.0/information", i+1),
			fmt.Sprintf("Model: X\nGPU UUID: %s\nDevice Minor: %d\n", u, i))
	}
	asRoot := os.Geteuid() == 0
	if asRoot {
		assert.NilError(t, os.MkdirAll(filepath.Join(root, "dev"), 0o755))
		for i := range uuids {
			assert.NilError(t, unix.Mknod(filepath.Join(root, fmt.Sprintf("dev/nvidia%d", i)), unix.S_IFCHR|0o666, int(unix.Mkdev(195, uint32(i)))))
		}
	}
	// A task bound to the second GPU: Slurm's variables say 0.
	env := append([]string{"SLURM_CONF=/etc/slurm/slurm.conf", "CUDA_VISIBLE_DEVICES=0",
		"SLURM_STEP_GPUS=0", "SLURM_GPUS_ON_NODE=2"}, slurmStep...)

	code, stdout, stderr := invoke([]string{"task-env", "--root", root}, env)
	assert.Equal(t, code, exitOK, stderr)
	assert.Assert(t, strings.Contains(stderr, "under ConstrainDevices the task has 1 of its step's 2 GPUs"), stderr)
	assert.Assert(t, !strings.Contains(stdout, "nv.gpu."), stdout)

	code, stdout, stderr = invoke([]string{"task-env", "--root", root, "--admitted", "1"}, env)
	assert.Equal(t, code, exitOK, stderr)
	if asRoot {
		assert.Assert(t, strings.Contains(stdout, "nv.gpu.uuid="+uuids[1]), stdout)
		assert.Assert(t, strings.Contains(stdout, "nv.gpu.0.uuid="+uuids[1]), stdout)
	} else {
		assert.Assert(t, strings.Contains(stderr, "stat "+root+"/dev/nvidia1: no such file or directory"), stderr)
	}

	code, _, stderr = invoke([]string{"task-env", "--root", root, "--admitted", "one"}, env)
	assert.Assert(t, code != exitOK)
	assert.Assert(t, strings.Contains(stderr, "--admitted must list device minors"), stderr)
}
