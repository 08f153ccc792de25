package gpu

import (
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/spank-otel/spank-otel/environ"
)

const (
	constrained = "CgroupPlugin=autodetect\nConstrainCores=yes\nConstrainDevices=yes\n"
	gres4       = "Name=gpu File=/dev/nvidia[0-3]\n"
	gres8       = "Name=gpu File=/dev/nvidia[0-7]\n"
)

// task is the environment of a task on node n1 with the given variables.
func task(kv ...string) environ.Map {
	env := environ.Map{
		"SLURM_CONF":      "/etc/slurm/slurm.conf",
		"SLURMD_NODENAME": "n1",
		"SLURM_JOB_ID":    "7",
		"SLURM_STEP_ID":   "0",
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "<unset>" {
			delete(env, kv[i])
			continue
		}
		env[kv[i]] = kv[i+1]
	}
	return env
}

// gpuTask is a task given GPUs: CUDA_VISIBLE_DEVICES, SLURM_STEP_GPUS and
// SLURM_GPUS_ON_NODE, then any other variables.
func gpuTask(cuda, step, onNode string, kv ...string) environ.Map {
	return task(append([]string{"CUDA_VISIBLE_DEVICES", cuda, "SLURM_STEP_GPUS", step, "SLURM_GPUS_ON_NODE", onNode}, kv...)...)
}

// with returns a copy of f with files set (a "" content removes one) and
// device nodes replaced.
func with(f fakeFS, files map[string]string, devices map[string]Stat) fakeFS {
	g := fakeFS{files: maps.Clone(f.files), devices: maps.Clone(f.devices), admitted: maps.Clone(f.admitted)}
	for k, v := range files {
		if v == "" {
			delete(g.files, k)
		} else {
			g.files[k] = v
		}
	}
	for k, v := range devices {
		if v == (Stat{}) {
			delete(g.devices, k)
		} else {
			g.devices[k] = v
		}
	}
	return g
}

// reversedMinors are 4 alike GPUs whose minors run against PCI order.
func reversedMinors() []fakeGPU {
	gpus := gpusInPCIOrder(4)
	for i := range gpus {
		gpus[i].minor = 3 - i
	}
	return gpus
}

func TestFind(t *testing.T) {
	four := node("n1", gpusInPCIOrder(4), gres4, constrained)
	eight := node("n1", gpusInPCIOrder(8), gres8, constrained)
	sixteen := node("n1", gpusInPCIOrder(16), "Name=gpu File=/dev/nvidia[0-15]\n", constrained)
	seventeen := node("n1", gpusInPCIOrder(17), "Name=gpu File=/dev/nvidia[0-16]\n", constrained)
	mixed := gpusInPCIOrder(4)
	mixed[2].model = "NVIDIA A100-SXM4-80GB"
	configless := fakeFS{files: map[string]string{}, devices: four.devices}
	for k, v := range four.files {
		configless.files[strings.Replace(k, "/etc/slurm/", "/var/spool/slurmd/conf-cache/", 1)] = v
	}
	tests := []struct {
		name  string
		fs    fakeFS
		env   environ.Map
		want  []int  // minors of the GPUs, in order
		warns string // what the one warning says, when want is nil
	}{
		// Local indices (ConstrainDevices): the task has all of its
		// step's GPUs on the node.
		{name: "1 GPU", fs: node("n1", gpusInPCIOrder(1), "Name=gpu File=/dev/nvidia0\n", constrained),
			env: gpuTask("0", "0", "1"), want: []int{0}},
		{name: "4 GPUs, step has 2", fs: four, env: gpuTask("0,1", "1,3", "2"), want: []int{1, 3}},
		{name: "4 GPUs, all", fs: four, env: gpuTask("0,1,2,3", "0,1,2,3", "4"), want: []int{0, 1, 2, 3}},
		{name: "6 GPUs", fs: eight, env: gpuTask("0,1,2,3,4,5", "0,1,2,3,4,5", "6"), want: []int{0, 1, 2, 3, 4, 5}},
		{name: "7 GPUs", fs: eight, env: gpuTask("0,1,2,3,4,5,6", "0,1,2,3,4,5,6", "7"), want: []int{0, 1, 2, 3, 4, 5, 6}},
		{name: "8 GPUs, all", fs: eight, env: gpuTask("0,1,2,3,4,5,6,7", "0,1,2,3,4,5,6,7", "8"), want: []int{0, 1, 2, 3, 4, 5, 6, 7}},
		{name: "16 GPUs, all: the most one task's keys name", fs: sixteen, env: gpuTask(upTo(16), upTo(16), "16"), want: seq(16)},
		{name: "17 GPUs, all: over the 16 named", fs: seventeen, env: gpuTask(upTo(17), upTo(17), "17"), warns: "17 GPUs, over the 16"},
		{name: "8 GPUs, step has 3", fs: eight, env: gpuTask("0,1,2", "2,5,7", "3"), want: []int{2, 5, 7}},
		{name: "configless: slurmd's conf-cache", fs: configless,
			env: gpuTask("0", "2", "1", "SLURM_CONF", "/var/spool/slurmd/conf-cache/slurm.conf"), want: []int{2}},
		{name: "a task bound to 1 of its step's 4 GPUs (--gpus-per-task)", fs: four, env: gpuTask("0", "0", "4"),
			warns: "under ConstrainDevices the task has 1 of its step's 4 GPUs"},
		{name: "local entries not from 0", fs: four, env: gpuTask("1,2", "1,2", "2"), warns: "is not 0 to n-1"},

		// The task's device cgroup (what access(2) answers in the
		// task's cgroups): the GPUs CUDA can open, numbered from 0 in
		// CUDA's order, whatever Slurm's SLURM_STEP_GPUS says.
		{name: "bound: --gpus-per-task=1, the task's third GPU", fs: admitting(four, 2), env: gpuTask("0", "0", "4"), want: []int{2}},
		{name: "bound: --gpu-bind=map_gpu:3,1, the second task", fs: admitting(four, 1), env: gpuTask("0", "0", "2"), want: []int{1}},
		{name: "bound: two of four, reversed by Slurm", fs: admitting(four, 1, 3), env: gpuTask("1,0", "0,1", "4"), want: []int{3, 1}},
		{name: "bound: two of four, both, reversed", fs: admitting(four, 0, 3), env: gpuTask("1,0", "0,1", "4"), want: []int{3, 0}},
		{name: "every task sees the step's four", fs: admitting(four, 0, 1, 2, 3), env: gpuTask("0,1,2,3", "0,1,2,3", "4"), want: []int{0, 1, 2, 3}},
		{name: "one task of eight GPUs (torchrun)", fs: admitting(eight, 0, 1, 2, 3, 4, 5, 6, 7), env: gpuTask("0,1,2,3,4,5,6,7", "0,1,2,3,4,5,6,7", "8"),
			want: []int{0, 1, 2, 3, 4, 5, 6, 7}},
		{name: "the step's two, Slurm's indices agree", fs: admitting(four, 1, 3), env: gpuTask("0,1", "1,3", "2"), want: []int{1, 3}},
		{name: "the step's two, Slurm names another", fs: admitting(four, 1, 3), env: gpuTask("0,1", "1,2", "2"),
			warns: "SLURM_STEP_GPUS=1,2 names GRES index 2, which the task's device cgroup does not admit"},
		{name: "the cgroup admits more GPUs than the step has: not the task's constraint", fs: admitting(four, 0, 1, 2, 3), env: gpuTask("0", "0", "1"),
			warns: "admits 4 GPUs, more than the step's 1 on the node"},
		{name: "the cgroup admits none", fs: admitting(four), env: gpuTask("0", "0", "1"), warns: "admits none of the node's GPUs"},
		{name: "CUDA names an ordinal past what the cgroup admits", fs: admitting(four, 2), env: gpuTask("1", "1", "4"),
			warns: "names CUDA's GPU 1, and the task's device cgroup admits 1"},
		{name: "a bound task whose cgroup admits the step's four: the step's constraint, not the task's", fs: admitting(four, 0, 1, 2, 3),
			env: gpuTask("0", "0", "4"), warns: "admits 4 GPUs and CUDA_VISIBLE_DEVICES=0 names 1"},
		{name: "bound, GPUs of different models: CUDA's order unknown", fs: admitting(node("n1", mixed, gres4, constrained), 1, 2),
			env: gpuTask("0,1", "0,1", "4"), warns: "different models"},
		{name: "bound, GPUs of different models, CUDA_DEVICE_ORDER=PCI_BUS_ID", fs: admitting(node("n1", mixed, gres4, constrained), 1, 2),
			env: gpuTask("1,0", "0,1", "4", "CUDA_DEVICE_ORDER", "PCI_BUS_ID"), want: []int{2, 1}},
		{name: "bound, the admitted node is another device", fs: admitting(with(node("n1", gpusInPCIOrder(4), "AutoDetect=nvidia\n", constrained), nil, map[string]Stat{"/dev/nvidia2": {CharDevice: true, Major: 195, Minor: 3}}), 2),
			env: gpuTask("0", "0", "4"), warns: "/dev/nvidia2 is not the device node of the driver's GPU of minor 2"},
		{name: "without ConstrainDevices the cgroup is not asked", fs: admitting(node("n1", gpusInPCIOrder(4), gres4, ""), 2),
			env: gpuTask("3", "3", "1"), want: []int{3}},

		// Global indices (no ConstrainDevices): entries are GRES indices
		// and CUDA's ordinals over every GPU of the node.
		{name: "global, no cgroup.conf", fs: node("n1", gpusInPCIOrder(8), gres8, ""),
			env: gpuTask("2,5", "2,5", "2"), want: []int{2, 5}},
		{name: "global, ConstrainDevices=no", fs: node("n1", gpusInPCIOrder(4), gres4, "ConstrainDevices=no\n"),
			env: gpuTask("3", "3", "1"), want: []int{3}},
		{name: "global, a task bound to one of 2", fs: node("n1", gpusInPCIOrder(4), gres4, ""),
			env: gpuTask("3", "3", "2"), want: []int{3}},
		{name: "global, CUDA and GRES disagree", fs: node("n1", gpusInPCIOrder(4), gres4, ""),
			env: gpuTask("1", "2", "1"), warns: "differs from SLURM_STEP_GPUS=2 without ConstrainDevices"},

		// File= order and PCI order.
		{name: "File= order not PCI order: one GPU is still known", fs: node("n1", gpusInPCIOrder(4), "Name=gpu File=/dev/nvidia1\nName=gpu File=/dev/nvidia0\nName=gpu File=/dev/nvidia[2-3]\n", constrained),
			env: gpuTask("0", "0", "1"), want: []int{1}},
		{name: "File= order not PCI order: two GPUs are not", fs: node("n1", gpusInPCIOrder(4), "Name=gpu File=/dev/nvidia[1,0,2-3]\n", constrained),
			env: gpuTask("0,1", "0,1", "2"), warns: "GRES order differs from PCI order"},
		{name: "File= order not PCI order, global", fs: node("n1", gpusInPCIOrder(4), "Name=gpu File=/dev/nvidia[1,0,2-3]\n", ""),
			env: gpuTask("0", "0", "1"), warns: "GRES index 0 is not CUDA's GPU 0 in PCI order"},
		{name: "minors against PCI order, File= in PCI order", fs: node("n1", reversedMinors(), "Name=gpu File=/dev/nvidia[3-0]\n", ""),
			warns: "a bad range"},
		{name: "minors against PCI order, File= lines in PCI order, global", fs: node("n1", reversedMinors(), "Name=gpu File=/dev/nvidia3\nName=gpu File=/dev/nvidia2\nName=gpu File=/dev/nvidia1\nName=gpu File=/dev/nvidia0\n", ""),
			env: gpuTask("0,2", "0,2", "2"), want: []int{3, 1}},
		{name: "minors against PCI order, File= lines in PCI order, local", fs: node("n1", reversedMinors(), "Name=gpu File=/dev/nvidia3,/dev/nvidia2,/dev/nvidia1,/dev/nvidia0\n", constrained),
			env: gpuTask("0,1", "1,2", "2"), want: []int{2, 1}},

		// AutoDetect: the order slurmd gives the GPUs it finds.
		{name: "AutoDetect=nvml: PCI order", fs: node("n1", reversedMinors(), "AutoDetect=nvml\nName=gpu Type=h100 Count=4\n", constrained),
			env: gpuTask("0,1,2,3", "0,1,2,3", "4"), want: []int{3, 2, 1, 0}},
		{name: "AutoDetect=nvml on the node's line", fs: node("n1", reversedMinors(), "AutoDetect=off\nNodeName=n[1-8] AutoDetect=nvml\n", constrained),
			env: gpuTask("0", "1", "1"), want: []int{2}},
		{name: "AutoDetect=nvidia: minor order, one GPU", fs: node("n1", reversedMinors(), "AutoDetect=nvidia\n", constrained),
			env: gpuTask("0", "1", "1"), want: []int{1}},
		{name: "AutoDetect=nvidia: minor order against PCI order", fs: node("n1", reversedMinors(), "AutoDetect=nvidia\n", constrained),
			env: gpuTask("0,1", "0,1", "2"), warns: "GRES order differs from PCI order"},
		{name: "AutoDetect=nvidia, minors in PCI order", fs: node("n1", gpusInPCIOrder(8), "AutoDetect=nvidia\n", constrained),
			env: gpuTask("0,1", "4,6", "2"), want: []int{4, 6}},
		{name: "AutoDetect with File=", fs: node("n1", gpusInPCIOrder(4), "AutoDetect=nvml\n"+gres4, constrained),
			env: gpuTask("0", "1", "1"), warns: "File= together with AutoDetect"},
		{name: "AutoDetect=rsmi", fs: node("n1", gpusInPCIOrder(4), "AutoDetect=rsmi\n", constrained),
			env: gpuTask("0", "1", "1"), warns: "names no NVIDIA GPU"},

		// gres.conf as slurmd reads it.
		{name: "NodeName lines", fs: node("n1", gpusInPCIOrder(4), "# two kinds of node\nNodeName=n[1-2,5] Name=gpu File=/dev/nvidia[0-3]\nNodeName=n3 Name=gpu \\\n  File=/dev/nvidia[0-1]\nName=mps Count=200 File=/dev/nvidia0\n", constrained),
			env: gpuTask("0,1", "2,3", "2"), want: []int{2, 3}},
		{name: "a line for another node only", fs: node("n1", gpusInPCIOrder(4), "NodeName=n2 Name=gpu File=/dev/nvidia[0-3]\n", constrained),
			env: gpuTask("0", "0", "1"), warns: "the driver lists 4 GPUs, gres.conf names 0"},
		{name: "a GPU line without File=", fs: node("n1", gpusInPCIOrder(4), "Name=gpu Count=4\n", constrained),
			env: gpuTask("0", "0", "1"), warns: "without File="},
		{name: "Include", fs: node("n1", gpusInPCIOrder(4), "Include /etc/slurm/gres.d/n1.conf\n", constrained),
			env: gpuTask("0", "0", "1"), warns: "Include is not supported"},
		{name: "MultipleFiles", fs: node("n1", gpusInPCIOrder(4), "Name=gpu MultipleFiles=/dev/nvidia0,/dev/nvidia-caps/nvidia-cap21\n", constrained),
			env: gpuTask("0", "0", "1"), warns: "MultipleFiles"},
		{name: "MIG capability file", fs: node("n1", gpusInPCIOrder(4), "Name=gpu File=/dev/nvidia-caps/nvidia-cap21\n", constrained),
			env: gpuTask("0", "0", "1"), warns: "is not /dev/nvidia<N>"},
		{name: "fake_gpus.conf beside gres.conf", fs: with(four, map[string]string{"/etc/slurm/fake_gpus.conf": "h100|1|~|-1|/dev/nvidia0\n"}, nil),
			env: gpuTask("0", "0", "1"), warns: "fake_gpus.conf is present"},
		{name: "a word without =", fs: node("n1", gpusInPCIOrder(4), "Name=gpu File=/dev/nvidia[0-3] bogus\n", constrained),
			env: gpuTask("0", "0", "1"), warns: "a word without '='"},
		{name: "bad ConstrainDevices", fs: node("n1", gpusInPCIOrder(4), gres4, "ConstrainDevices=maybe\n"),
			env: gpuTask("0", "0", "1"), warns: "ConstrainDevices=maybe"},

		// MIG, and lists that are not Slurm's.
		{name: "MIG", fs: four, env: gpuTask("MIG-4b9a2d2f-1c8b-5e5e-9d4c-2f7a0c3b1e11", "0", "1"), warns: "names MIG devices"},
		// gres.conf Flags=env_uuid (Slurm 26.05): CUDA_VISIBLE_DEVICES
		// names the GPUs by UUID, which CUDA opens in that order.
		{name: "env_uuid: a GPU the driver does not list", fs: four, env: gpuTask("GPU-00000001-0000-4000-8000-000000000001", "0", "1"),
			warns: "a GPU the node's driver does not list"},
		{name: "env_uuid: one GPU", fs: four, env: gpuTask(uuidOf("n1", 2), "2", "1"), want: []int{2}},
		{name: "env_uuid: two, in CUDA_VISIBLE_DEVICES order", fs: four, env: gpuTask(uuidOf("n1", 3)+","+uuidOf("n1", 0), "0,3", "2"), want: []int{3, 0}},
		{name: "env_uuid: bound, admitted", fs: admitting(four, 1), env: gpuTask(uuidOf("n1", 1), "0", "4"), want: []int{1}},
		{name: "env_uuid: not admitted by the task's device cgroup", fs: admitting(four, 1), env: gpuTask(uuidOf("n1", 2), "0", "4"),
			warns: "which the task's device cgroup does not admit"},
		{name: "env_uuid: a MIG instance", fs: four, env: gpuTask("MIG-4b9a2d2f-1c8b-5e5e-9d4c-2f7a0c3b1e11", "0", "1"), warns: "MIG devices"},
		{name: "env_uuid: UUIDs and indices mixed", fs: four, env: gpuTask(uuidOf("n1", 1)+",2", "1,2", "2"), warns: "is neither indices nor GPU UUIDs"},
		{name: "env_uuid: one named twice", fs: four, env: gpuTask(uuidOf("n1", 1)+","+uuidOf("n1", 1), "1,2", "2"), warns: "twice"},
		{name: "indices then a UUID", fs: four, env: gpuTask("1,"+uuidOf("n1", 1), "1,2", "2"), warns: "mixes GPU UUIDs with indices"},
		{name: "the user's own CUDA_VISIBLE_DEVICES", fs: four, env: task("CUDA_VISIBLE_DEVICES", "0"), warns: "SLURM_STEP_GPUS is unset"},
		{name: "SLURM_STEP_GPUS without CUDA_VISIBLE_DEVICES", fs: four, env: task("SLURM_STEP_GPUS", "0", "SLURM_GPUS_ON_NODE", "1"), warns: "CUDA_VISIBLE_DEVICES is not"},
		{name: "malformed list", fs: four, env: gpuTask("0,,1", "0,1", "2"), warns: "is not a list of indices"},
		{name: "spaces in a list", fs: four, env: gpuTask("0, 1", "0,1", "2"), warns: "is not a list of indices"},
		{name: "an index twice", fs: four, env: gpuTask("0,0", "1,2", "2"), warns: "names 0 twice"},
		{name: "lengths differ", fs: four, env: gpuTask("0,1", "1", "2"), warns: "differ in length"},
		{name: "more than on the node", fs: four, env: gpuTask("0,1", "1,2", "1"), warns: "more GPUs than SLURM_GPUS_ON_NODE"},
		{name: "SLURM_GPUS_ON_NODE unset", fs: four, env: gpuTask("0", "1", "<unset>"), warns: "SLURM_GPUS_ON_NODE"},
		{name: "SLURM_CONF unset", fs: four, env: gpuTask("0", "1", "1", "SLURM_CONF", "<unset>"), warns: "names no configuration directory"},
		{name: "GRES index beyond gres.conf", fs: four, env: gpuTask("0", "4", "1"), warns: "GRES index 4 is not in gres.conf"},

		// CUDA's order.
		{name: "different models: CUDA's order unknown", fs: node("n1", mixed, gres4, constrained),
			env: gpuTask("0,1,2,3", "0,1,2,3", "4"), warns: "different models"},
		{name: "different models, CUDA_DEVICE_ORDER=PCI_BUS_ID", fs: node("n1", mixed, gres4, constrained),
			env: gpuTask("0,1,2,3", "0,1,2,3", "4", "CUDA_DEVICE_ORDER", "PCI_BUS_ID"), want: []int{0, 1, 2, 3}},
		{name: "different models, one GPU", fs: node("n1", mixed, gres4, constrained),
			env: gpuTask("0", "2", "1"), want: []int{2}},
		{name: "different models on the node, global", fs: node("n1", mixed, gres4, ""),
			env: gpuTask("0", "0", "1"), warns: "different models"},

		// Missing and malformed files.
		{name: "no gres.conf", fs: with(four, map[string]string{"/etc/slurm/gres.conf": ""}, nil),
			env: gpuTask("0", "0", "1"), warns: "gres.conf: file does not exist"},
		{name: "no driver tree", fs: node("n1", nil, gres4, constrained),
			env: gpuTask("0", "0", "1"), warns: "the NVIDIA driver's GPU list"},
		{name: "a GPU absent from the driver tree", fs: with(four, map[string]string{driverDir + "/0000:3b:00.0/information": ""}, nil),
			env: gpuTask("0", "0", "1"), warns: "/dev/nvidia2: the driver lists no GPU of minor 2"},
		{name: "a driver GPU gres.conf does not name", fs: node("n1", gpusInPCIOrder(4), "Name=gpu File=/dev/nvidia[0-2]\n", constrained),
			env: gpuTask("0", "0", "1"), warns: "the driver lists 4 GPUs, gres.conf names 3"},
		{name: "a device node missing", fs: with(four, nil, map[string]Stat{"/dev/nvidia3": {}}),
			env: gpuTask("0", "0", "1"), warns: "stat /dev/nvidia3"},
		{name: "a device node of another major", fs: with(four, nil, map[string]Stat{"/dev/nvidia1": {CharDevice: true, Major: 1, Minor: 3}}),
			env: gpuTask("0", "0", "1"), warns: "/dev/nvidia1 is not an NVIDIA GPU's device node"},
		{name: "two device files of one minor", fs: with(four, nil, map[string]Stat{"/dev/nvidia1": {CharDevice: true, Major: 195, Minor: 0}}),
			env: gpuTask("0", "0", "1"), warns: "a second device file of minor 0"},
		{name: "no UUID line", fs: with(four, map[string]string{driverDir + "/0000:2b:00.0/information": "Model: x\nDevice Minor: 1\n"}, nil),
			env: gpuTask("0", "0", "1"), warns: "no GPU UUID line"},
		{name: "a malformed UUID", fs: with(four, map[string]string{driverDir + "/0000:2b:00.0/information": "Model: x\nGPU UUID: GPU-1234\nDevice Minor: 1\n"}, nil),
			env: gpuTask("0", "0", "1"), warns: `GPU UUID "GPU-1234" is not GPU-<uuid>`},
		{name: "a malformed minor", fs: with(four, map[string]string{driverDir + "/0000:2b:00.0/information": "Model: x\nGPU UUID: " + uuidOf("n1", 1) + "\nDevice Minor: one\n"}, nil),
			env: gpuTask("0", "0", "1"), warns: `Device Minor "one" is not a minor number`},
		{name: "two UUIDs in one file", fs: with(four, map[string]string{driverDir + "/0000:2b:00.0/information": information("n1", fakeGPU{pci: "0000:2b:00.0", minor: 1, model: "x"}) + "GPU UUID: " + uuidOf("n1", 9) + "\n"}, nil),
			env: gpuTask("0", "0", "1"), warns: "two GPU UUID lines"},
		{name: "a directory that is no PCI address", fs: with(four, map[string]string{driverDir + "/bogus/information": "x"}, nil),
			env: gpuTask("0", "0", "1"), warns: "not a PCI address"},
		{name: "odd spacing in the driver's file", fs: with(node("n1", gpusInPCIOrder(1), "Name=gpu File=/dev/nvidia0\n", constrained),
			map[string]string{driverDir + "/0000:1b:00.0/information": "Model:NVIDIA H100\r\nGPU UUID:\t \t" + uuidOf("n1", 0) + "   \nDevice Minor:0\nBus Location:\t0000:1b:00.0"}, nil),
			env: gpuTask("0", "0", "1"), want: []int{0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := tt.env
			if env == nil {
				env = gpuTask("0", "0", "1")
			}
			got, warns := Find(env, tt.fs)
			var want []string
			for _, m := range tt.want {
				want = append(want, uuidOf("n1", m))
			}
			if strings.Join(got, ",") != strings.Join(want, ",") || (want != nil) != (got != nil) {
				t.Errorf("Find = %q, want %q (warnings %v)", got, want, warns)
			}
			if tt.warns == "" {
				if len(warns) != 0 {
					t.Errorf("warnings %v, want none", warns)
				}
				return
			}
			if len(warns) != 1 || warns[0].Key != KeyUUID || !strings.Contains(warns[0].Message, tt.warns) {
				t.Errorf("warnings %v, want one under %s saying %q", warns, KeyUUID, tt.warns)
			}
		})
	}
}

// upTo is "0,1,...,n-1".
func upTo(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprint(&b, i)
	}
	return b.String()
}

// seq is 0..n-1.
func seq(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// noFS fails the test on any read: a task without GPUs reads nothing.
type noFS struct{ t *testing.T }

func (f noFS) AppendFile(dst []byte, name string) ([]byte, error) {
	f.t.Errorf("AppendFile(%s)", name)
	return dst, ErrNotExist
}
func (f noFS) ReadDir(name string) ([]string, error) {
	f.t.Errorf("ReadDir(%s)", name)
	return nil, ErrNotExist
}
func (f noFS) Usable(name string) (bool, error) {
	f.t.Errorf("Usable(%s)", name)
	return false, ErrNoOracle
}
func (f noFS) Stat(name string) (Stat, error) {
	f.t.Errorf("Stat(%s)", name)
	return Stat{}, ErrNotExist
}

func TestFindNoGPUs(t *testing.T) {
	for _, env := range []environ.Map{
		task(),
		task("CUDA_VISIBLE_DEVICES", "", "SLURM_STEP_GPUS", ""),
		{},
	} {
		got, warns := Find(env, noFS{t})
		if got != nil || warns != nil {
			t.Errorf("Find(%v) = %q, %v; want nil, nil", env, got, warns)
		}
	}
}

func TestJoin(t *testing.T) {
	tests := []struct {
		in   []string
		want string
	}{
		{nil, ""},
		{[]string{"GPU-a"}, "GPU-a"},
		{[]string{"GPU-a", "GPU-b", "GPU-c"}, "GPU-a,GPU-b,GPU-c"},
	}
	for _, tt := range tests {
		if got := Join(tt.in); got != tt.want {
			t.Errorf("Join(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// BenchmarkFind is the per-task cost of the detection on a node of 8 GPUs
// held in memory (the file reads of a real node come on top), and of a
// task without GPUs.
func BenchmarkFind(b *testing.B) {
	eight := node("n1", gpusInPCIOrder(8), gres8, constrained)
	for _, bb := range []struct {
		name string
		env  environ.Map
	}{
		{"8of8", gpuTask("0,1,2,3,4,5,6,7", "0,1,2,3,4,5,6,7", "8")},
		{"1of8", gpuTask("0", "5", "1")},
		{"none", task()},
	} {
		b.Run(bb.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Find(bb.env, eight)
			}
		})
	}
}
