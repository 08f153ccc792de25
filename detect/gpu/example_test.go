package gpu_test

import (
	"fmt"
	"strings"

	"github.com/spank-otel/spank-otel/detect/gpu"
	"github.com/spank-otel/spank-otel/environ"
)

// node is a node's files held in memory: two GPUs, device files whose
// minors follow PCI order, gres.conf and cgroup.conf. The task's device
// cgroup admits the second GPU only.
type node map[string]string

func (n node) Usable(name string) (bool, error) { return name == "/dev/nvidia1", nil }

func (n node) AppendFile(dst []byte, name string) ([]byte, error) {
	if text, ok := n[name]; ok {
		return append(dst, text...), nil
	}
	return dst, gpu.ErrNotExist
}

func (n node) ReadDir(name string) ([]string, error) {
	if name != "/proc/driver/nvidia/gpus" {
		return nil, gpu.ErrNotExist
	}
	return []string{"0000:3b:00.0", "0000:1b:00.0"}, nil
}

func (n node) Stat(name string) (gpu.Stat, error) {
	if minor, ok := strings.CutPrefix(name, "/dev/nvidia"); ok && (minor == "0" || minor == "1") {
		return gpu.Stat{CharDevice: true, Major: 195, Minor: uint32(minor[0] - '0')}, nil
	}
	if _, ok := n[name]; ok {
		return gpu.Stat{}, nil
	}
	return gpu.Stat{}, gpu.ErrNotExist
}

func ExampleFind() {
	fsys := node{
		"/etc/slurm/gres.conf":   "Name=gpu File=/dev/nvidia[0-1]\n",
		"/etc/slurm/cgroup.conf": "ConstrainDevices=yes\n",
		"/proc/driver/nvidia/gpus/0000:1b:00.0/information": "Model: \t\t NVIDIA H100\n" +
			"GPU UUID: \t GPU-0a1b2c3d-0000-4000-8000-000000000000\nDevice Minor: \t 0\n",
		"/proc/driver/nvidia/gpus/0000:3b:00.0/information": "Model: \t\t NVIDIA H100\n" +
			"GPU UUID: \t GPU-0a1b2c3d-0000-4000-8000-000000000001\nDevice Minor: \t 1\n",
	}
	// A task bound to the node's second GPU (--gpus-per-task=1 in a step
	// of both): Slurm numbers it 0 under ConstrainDevices and names the
	// step's first GPU in SLURM_STEP_GPUS; the device cgroup tells.
	task := environ.Map{
		"SLURM_CONF":           "/etc/slurm/slurm.conf",
		"CUDA_VISIBLE_DEVICES": "0",
		"SLURM_STEP_GPUS":      "0",
		"SLURM_GPUS_ON_NODE":   "2",
	}
	uuids, warnings := gpu.Find(task, fsys)
	for _, kv := range gpu.Keys(uuids) {
		fmt.Printf("%s=%s\n", kv.Key, kv.Value)
	}
	fmt.Println(warnings)

	// A MIG instance: nothing, and why.
	task["CUDA_VISIBLE_DEVICES"] = "MIG-4b9a2d2f-1c8b-5e5e-9d4c-2f7a0c3b1e11"
	uuids, warnings = gpu.Find(task, fsys)
	fmt.Println(uuids, warnings)
	// Output:
	// nv.gpu.0.uuid=GPU-0a1b2c3d-0000-4000-8000-000000000001
	// nv.gpu.count=1
	// nv.gpu.uuid=GPU-0a1b2c3d-0000-4000-8000-000000000001
	// []
	// [] [key "nv.gpu.uuid": no GPU UUIDs: CUDA_VISIBLE_DEVICES names MIG devices, which are out of scope]
}
