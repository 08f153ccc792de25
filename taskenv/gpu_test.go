package taskenv_test

import (
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/spank-otel/spank-otel/detect/gpu"
	"github.com/spank-otel/spank-otel/detect/slurm"
	"github.com/spank-otel/spank-otel/detect/slurm/slurmtest"
	"github.com/spank-otel/spank-otel/environ"
	"github.com/spank-otel/spank-otel/libcarrier"
	"github.com/spank-otel/spank-otel/taskenv"
)

// gpuNode is a node of two GPUs held in memory (package gpu's own tests
// cover the detection; these cover where its keys are written).
type gpuNode map[string]string

func (n gpuNode) AppendFile(dst []byte, name string) ([]byte, error) {
	if text, ok := n[name]; ok {
		return append(dst, text...), nil
	}
	return dst, gpu.ErrNotExist
}

func (n gpuNode) ReadDir(name string) ([]string, error) {
	if name == "/proc/driver/nvidia/gpus" {
		return []string{"0000:1b:00.0", "0000:2b:00.0"}, nil
	}
	return nil, gpu.ErrNotExist
}

// Usable: no device cgroup to ask (Slurm's variables decide).
func (n gpuNode) Usable(name string) (bool, error) { return false, gpu.ErrNoOracle }

func (n gpuNode) Stat(name string) (gpu.Stat, error) {
	switch name {
	case "/dev/nvidia0":
		return gpu.Stat{CharDevice: true, Major: 195, Minor: 0}, nil
	case "/dev/nvidia1":
		return gpu.Stat{CharDevice: true, Major: 195, Minor: 1}, nil
	}
	return gpu.Stat{}, gpu.ErrNotExist
}

const (
	uuid0 = "GPU-00000000-1111-4222-8333-444444444444"
	uuid1 = "GPU-11111111-1111-4222-8333-444444444444"
)

var twoGPUs = gpuNode{
	"/etc/slurm/gres.conf":                              "Name=gpu File=/dev/nvidia[0-1]\n",
	"/etc/slurm/cgroup.conf":                            "ConstrainDevices=yes\n",
	"/proc/driver/nvidia/gpus/0000:1b:00.0/information": "Model: X\nGPU UUID: " + uuid0 + "\nDevice Minor: 0\n",
	"/proc/driver/nvidia/gpus/0000:2b:00.0/information": "Model: X\nGPU UUID: " + uuid1 + "\nDevice Minor: 1\n",
}

// given are a task's variables for the GPUs Slurm gave it.
func given(cuda, stepGPUs, onNode string) []string {
	return []string{"SLURM_CONF=/etc/slurm/slurm.conf", "CUDA_VISIBLE_DEVICES=" + cuda,
		"SLURM_STEP_GPUS=" + stepGPUs, "SLURM_GPUS_ON_NODE=" + onNode}
}

func TestGPUKeys(t *testing.T) {
	stale := libcarrier.EnvVar + "=nv.gpu.count=2,nv.gpu.uuids=GPU-stale%2CGPU-other,user.team=ml"
	tests := []struct {
		name    string
		env     []string
		fs      gpu.FS // the node's files, nil for none
		opts    taskenv.Options
		want    map[string]string // the GPU keys and user.team of the result
		debug   string            // what the one debug note says, if any
		changed bool
	}{
		{name: "a step task given both GPUs", env: step(given("0,1", "0,1", "2")...), fs: twoGPUs,
			want: map[string]string{"nv.gpu.count": "2", "nv.gpu.0.uuid": uuid0, "nv.gpu.1.uuid": uuid1}, changed: true},
		{name: "a step task given the second GPU", env: step(given("0", "1", "1")...), fs: twoGPUs,
			want: map[string]string{"nv.gpu.count": "1", "nv.gpu.uuid": uuid1, "nv.gpu.0.uuid": uuid1}, changed: true},
		{name: "another task's GPUs replaced, the older list key removed", env: step(append(given("0", "0", "1"), stale)...), fs: twoGPUs,
			want: map[string]string{"nv.gpu.count": "1", "nv.gpu.uuid": uuid0, "nv.gpu.0.uuid": uuid0, "user.team": "ml"}, changed: true},
		{name: "a bound task: nothing, the stale keys removed", env: step(append(given("0", "0", "2"), stale)...), fs: twoGPUs,
			want: map[string]string{"user.team": "ml"}, debug: "under ConstrainDevices the task has 1 of its step's 2 GPUs", changed: true},
		{name: "a step task without GPUs: the stale keys removed", env: step(stale), fs: twoGPUs,
			want: map[string]string{"user.team": "ml"}, changed: true},
		{name: "no file system: none written, the stale keys removed", env: step(append(given("0", "0", "1"), stale)...),
			want: map[string]string{"user.team": "ml"}, changed: true},
		{name: "the batch script: none, the stale keys removed", env: batch(append(given("0,1", "", "2"), stale)...), fs: twoGPUs,
			want: map[string]string{"user.team": "ml"}, changed: true},
		{name: "the batch script, even with a step's variables", env: batch(given("0,1", "0,1", "2")...), fs: twoGPUs, opts: taskenv.Options{Stage: taskenv.StageBatch},
			want: map[string]string{}, changed: true},
		{name: "excluded: the user's own kept", env: step(append(given("0", "0", "1"), stale)...),
			fs: twoGPUs, opts: taskenv.Options{Exclude: []string{"nv.gpu.uuids", "nv.gpu.count"}},
			want: map[string]string{"nv.gpu.count": "2", "nv.gpu.uuids": "GPU-stale,GPU-other", "nv.gpu.uuid": uuid0, "nv.gpu.0.uuid": uuid0, "user.team": "ml"}, changed: true},
		{name: "excluded as a family: nv.gpu.* writes none and keeps the user's", env: step(append(given("0,1", "0,1", "2"), stale)...),
			fs: twoGPUs, opts: taskenv.Options{Exclude: []string{"nv.gpu.*"}},
			want: map[string]string{"nv.gpu.count": "2", "nv.gpu.uuids": "GPU-stale,GPU-other", "user.team": "ml"}, changed: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := *taskenv.Run(&taskenv.Request{Env: tt.env, Node: tt.fs, Options: tt.opts})
			assert.Equal(t, res.Changed, tt.changed)
			got := map[string]string{}
			for k, v := range decode(t, res.Value) {
				if strings.HasPrefix(k, "nv.gpu.") || k == "user.team" {
					got[k] = v
				}
			}
			assert.DeepEqual(t, got, tt.want)
			if tt.debug == "" {
				assert.Equal(t, len(res.Debug), 0, "debug %v", res.Debug)
			} else {
				assert.Equal(t, len(res.Debug), 1, "debug %v", res.Debug)
				assert.Assert(t, strings.Contains(res.Debug[0].Message, tt.debug), "debug %v", res.Debug)
			}
			if strings.Contains(res.Value, "nv.gpu.0.uuid=GPU") {
				// The keys in the carrier's order.
				assert.Assert(t, strings.Index(res.Value, "nv.dl.job.uuid=") < strings.Index(res.Value, "nv.gpu.0.uuid=") &&
					strings.Index(res.Value, "nv.gpu.0.uuid=") < strings.Index(res.Value, "nv.gpu.count=") &&
					strings.Index(res.Value, "nv.gpu.count=") < strings.Index(res.Value, "slurm."), res.Value)
			}
		})
	}
}

// TestVarsHoldWhatGPUSearchReads guards the one view of a task's
// environment: Run reads the task's variables once, into a slurm.Vars,
// and the GPU search reads that Vars, which reports every variable it does
// not hold as unset. If gpu.Find starts to read another variable, this
// test fails until the Vars holds it too (internal/keys, detect/slurm's
// gpuVarNames). The tasks reach every lookup of the search.
func TestVarsHoldWhatGPUSearchReads(t *testing.T) {
	read := map[string]bool{}
	for _, env := range [][]string{
		append(given("0,1", "0,1", "2"), "SLURMD_NODENAME=n1", "CUDA_DEVICE_ORDER=PCI_BUS_ID"),
		given(uuid1, "1", "1"),
		given("0", "", "1"),
	} {
		gpu.Find(slurmtest.Recorder{Env: environ.List(env), Read: read}, twoGPUs)
	}
	assert.Assert(t, len(read) >= 6, "the search read only %v", read)
	for name := range read {
		var vars slurm.Vars
		vars.ReadList([]string{name + "=v"})
		if v, ok := vars.Lookup(name); v != "v" || !ok {
			t.Errorf("the GPU search reads %s, which slurm.Vars does not hold", name)
		}
	}
}

// BenchmarkComputeGPUs is Run for a step task given two
// GPUs of a node held in memory (the node's file reads come on top, see
// package gpu's BenchmarkFind and make bench).
func BenchmarkComputeGPUs(b *testing.B) {
	// The variables given come first, so they win over the task's own.
	env := append(given("0,1", "0,1", "2"), slurmtest.TaskEnvWithCarrier(b)...)
	b.ReportAllocs()
	for b.Loop() {
		res := taskenv.Run(&taskenv.Request{Env: env, Node: twoGPUs, Options: taskenv.Options{MaxEnvBytes: 2 << 20}})
		if !strings.Contains(res.Value, "nv.gpu.1.uuid=") {
			b.Fatalf("no GPU keys: %q %v", res.Value, res.Debug)
		}
	}
}
