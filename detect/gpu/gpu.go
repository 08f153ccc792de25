package gpu

import (
	"errors"
	"strconv"

	"github.com/spank-otel/spank-otel/environ"
	"github.com/spank-otel/spank-otel/internal/strs"
	"github.com/spank-otel/spank-otel/libcarrier"
)

// The keys of a task's GPUs (docs/spec.md, section 3): the UUIDs, joined
// with commas in CUDA_VISIBLE_DEVICES order, and their number.
const (
	KeyUUIDs = "nv.gpu.uuids"
	KeyCount = "nv.gpu.count"
)

// nvidiaMajor is the character device major of /dev/nvidiaN (Linux's
// devices.txt).
const nvidiaMajor = 195

// Find returns the UUIDs of the whole GPUs Slurm gave the task whose
// environment is env, in the order of its CUDA_VISIBLE_DEVICES, reading
// the node's files through fsys.
//
// A task without GPUs (neither CUDA_VISIBLE_DEVICES nor SLURM_STEP_GPUS
// set and non-empty) gets nil and no warning, after no file was read.
// When the task names GPUs but any source is missing, malformed or
// disagrees with another, or the GPUs are MIG devices, Find returns nil
// and one warning, under [KeyUUIDs], that says why: never a GPU it cannot
// prove.
func Find(env environ.Env, fsys FS) ([]string, []libcarrier.Warning) {
	visible, _ := env.Lookup("CUDA_VISIBLE_DEVICES")
	step, _ := env.Lookup("SLURM_STEP_GPUS")
	if visible == "" && step == "" {
		return nil, nil
	}
	uuids, err := find(env, fsys, visible, step)
	if err != nil {
		return nil, []libcarrier.Warning{{Key: KeyUUIDs, Message: "no GPU UUIDs: " + err.Error()}}
	}
	return uuids, nil
}

// Join returns the value of [KeyUUIDs] for uuids: them, comma-separated.
func Join(uuids []string) string {
	var b strs.Builder
	for i, u := range uuids {
		if i > 0 {
			_ = b.WriteByte(',')
		}
		b.WriteString(u)
	}
	return b.String()
}

func find(env environ.Env, fsys FS, visible, step string) ([]string, error) {
	if visible == "" {
		return nil, errors.New("SLURM_STEP_GPUS is set but CUDA_VISIBLE_DEVICES is not")
	}
	cuda, err := parseIndices("CUDA_VISIBLE_DEVICES", visible)
	if err != nil {
		return nil, err
	}
	if step == "" {
		return nil, errors.New("CUDA_VISIBLE_DEVICES is not Slurm's: SLURM_STEP_GPUS is unset")
	}
	gres, err := parseIndices("SLURM_STEP_GPUS", step)
	if err != nil {
		return nil, err
	}
	if len(gres) != len(cuda) {
		return nil, errors.New("CUDA_VISIBLE_DEVICES=" + visible + " and SLURM_STEP_GPUS=" + step + " differ in length")
	}
	onNode, err := envInt(env, "SLURM_GPUS_ON_NODE")
	if err != nil {
		return nil, err
	}
	if len(cuda) > onNode {
		return nil, errors.New("CUDA_VISIBLE_DEVICES=" + visible + " names more GPUs than SLURM_GPUS_ON_NODE")
	}

	// slurmstepd puts slurmd's SLURM_CONF in every task (env.c,
	// setup_env): in configless mode a file in slurmd's conf-cache.
	confFile, _ := env.Lookup("SLURM_CONF")
	slash := lastSlash(confFile)
	if slash < 0 || confFile[0] != '/' {
		return nil, errors.New("SLURM_CONF=" + strconv.Quote(confFile) + " names no configuration directory")
	}
	confDir := confFile[:slash+1]
	// slurmd takes fake_gpus.conf for the detected GPUs and re-sorts
	// them (gres_gpu.c): a test setup, not read here.
	if _, err := fsys.Stat(confDir + "fake_gpus.conf"); !errors.Is(err, ErrNotExist) {
		return nil, errors.New(confDir + "fake_gpus.conf is present (or unreadable)")
	}
	text, err := fsys.ReadFile(confDir + "gres.conf")
	if err != nil {
		return nil, err
	}
	node, _ := env.Lookup("SLURMD_NODENAME")
	conf, err := parseGresConf(text, node)
	if err != nil {
		return nil, err
	}
	local := false
	text, err = fsys.ReadFile(confDir + "cgroup.conf")
	switch {
	case err == nil:
		if local, err = constrainDevices(text); err != nil {
			return nil, err
		}
	case !errors.Is(err, ErrNotExist):
		return nil, err
	}

	gpus, err := readDriver(fsys)
	if err != nil {
		return nil, err
	}
	// devices[i] is the driver's GPU of GRES index i.
	devices, err := gresDevices(fsys, conf, gpus)
	if err != nil {
		return nil, err
	}

	// CUDA's order of the GPUs a task can open is PCI order only if the
	// task asked for it or the GPUs are alike (docs/spec.md).
	pciOrder, _ := env.Lookup("CUDA_DEVICE_ORDER")
	uuids := make([]string, len(cuda))
	if local {
		// Local indices (ConstrainDevices): the task opens its own
		// GPUs, CUDA numbers them from 0. Only a task that has all of
		// its step's GPUs can be told from its environment.
		if len(cuda) != onNode {
			return nil, errors.New("under ConstrainDevices the task has " + strconv.Itoa(len(cuda)) + " of its step's " + strconv.Itoa(onNode) + " GPUs on the node, and Slurm's SLURM_STEP_GPUS does not say which")
		}
		var prev *driverGPU
		for i, c := range cuda {
			if c != i {
				return nil, errors.New("CUDA_VISIBLE_DEVICES=" + visible + " is not 0 to n-1 under ConstrainDevices")
			}
			g, err := device(devices, gres[i])
			if err != nil {
				return nil, err
			}
			if prev != nil {
				if g.pci < prev.pci {
					return nil, errors.New("GRES order differs from PCI order for SLURM_STEP_GPUS=" + step)
				}
				if pciOrder != "PCI_BUS_ID" && g.model != prev.model {
					return nil, errors.New("GPUs of different models, and CUDA_DEVICE_ORDER is not PCI_BUS_ID: CUDA's order is unknown")
				}
			}
			prev = g
			uuids[i] = g.uuid
		}
		return uuids, nil
	}
	// Global indices: every GPU of the node is visible to CUDA, and an
	// entry is both a GRES index and CUDA's ordinal.
	if pciOrder != "PCI_BUS_ID" && len(gpus) > 1 {
		for _, g := range gpus[1:] {
			if g.model != gpus[0].model {
				return nil, errors.New("GPUs of different models, and CUDA_DEVICE_ORDER is not PCI_BUS_ID: CUDA's order is unknown")
			}
		}
	}
	for i, c := range cuda {
		if c != gres[i] {
			return nil, errors.New("CUDA_VISIBLE_DEVICES=" + visible + " differs from SLURM_STEP_GPUS=" + step + " without ConstrainDevices")
		}
		g, err := device(devices, c)
		if err != nil {
			return nil, err
		}
		if c >= len(gpus) || gpus[c].uuid != g.uuid {
			return nil, errors.New("GRES index " + strconv.Itoa(c) + " is not CUDA's GPU " + strconv.Itoa(c) + " in PCI order")
		}
		uuids[i] = g.uuid
	}
	return uuids, nil
}

// device returns the GPU of GRES index i.
func device(devices []*driverGPU, i int) (*driverGPU, error) {
	if i >= len(devices) {
		return nil, errors.New("GRES index " + strconv.Itoa(i) + " is not in gres.conf")
	}
	return devices[i], nil
}

// gresDevices maps each GRES index of the node's GPUs to the driver's GPU
// of its device file, and checks that every GPU the driver lists is one.
func gresDevices(fsys FS, conf gresConf, gpus []driverGPU) ([]*driverGPU, error) {
	devices := make([]*driverGPU, 0, len(gpus))
	switch conf.auto {
	case autoNVML:
		// NVML enumerates in PCI order; slurmd sorts by its links
		// matrix, which keeps that order (gres_gpu.c).
		for i := range gpus {
			devices = append(devices, &gpus[i])
		}
		return devices, nil
	case autoNVIDIA:
		// The device files /dev/nvidia<minor>, in natural order:
		// by minor.
		for i := range gpus {
			devices = append(devices, &gpus[i])
		}
		for i := 1; i < len(devices); i++ {
			for j := i; j > 0 && devices[j].minor < devices[j-1].minor; j-- {
				devices[j], devices[j-1] = devices[j-1], devices[j]
			}
		}
		return devices, nil
	}
	for _, file := range conf.files {
		if !isNvidiaNode(file) {
			return nil, errors.New("gres.conf: File=" + file + " is not /dev/nvidia<N>")
		}
		st, err := fsys.Stat(file)
		if err != nil {
			return nil, err
		}
		if !st.CharDevice || st.Major != nvidiaMajor {
			return nil, errors.New(file + " is not an NVIDIA GPU's device node (major 195)")
		}
		var found *driverGPU
		for i := range gpus {
			if gpus[i].minor == st.Minor {
				found = &gpus[i]
			}
		}
		if found == nil {
			return nil, errors.New(file + ": the driver lists no GPU of minor " + strconv.FormatUint(uint64(st.Minor), 10))
		}
		for _, d := range devices {
			if d == found {
				return nil, errors.New(file + ": a second device file of minor " + strconv.FormatUint(uint64(st.Minor), 10))
			}
		}
		devices = append(devices, found)
	}
	if len(devices) != len(gpus) {
		return nil, errors.New("the driver lists " + strconv.Itoa(len(gpus)) + " GPUs, gres.conf names " + strconv.Itoa(len(devices)))
	}
	return devices, nil
}

// isNvidiaNode reports whether file is /dev/nvidia<N>, a whole GPU's
// node (not nvidiactl, nvidia-uvm or a MIG capability).
func isNvidiaNode(file string) bool {
	const prefix = "/dev/nvidia"
	return strs.HasPrefix(file, prefix) && isDigits(file[len(prefix):])
}

// parseIndices reads a comma-separated list of distinct decimal indices
// as Slurm writes CUDA_VISIBLE_DEVICES and SLURM_STEP_GPUS.
func parseIndices(name, list string) ([]int, error) {
	out := make([]int, 0, 1+strs.Count(list, ','))
	for rest := list; ; {
		entry := rest
		comma := strs.IndexByte(rest, ',')
		if comma >= 0 {
			entry, rest = rest[:comma], rest[comma+1:]
		}
		if strs.HasPrefix(entry, "MIG-") {
			return nil, errors.New(name + " names MIG devices, which are out of scope")
		}
		if strs.HasPrefix(entry, "GPU-") {
			return nil, errors.New(name + " names GPUs by UUID, not Slurm's indices")
		}
		n, err := strconv.Atoi(entry)
		if err != nil || !isDigits(entry) || n > 1<<16 {
			return nil, errors.New(name + "=" + strconv.Quote(list) + " is not a list of indices")
		}
		for _, seen := range out {
			if seen == n {
				return nil, errors.New(name + "=" + strconv.Quote(list) + " names " + entry + " twice")
			}
		}
		out = append(out, n)
		if comma < 0 {
			return out, nil
		}
	}
}

// envInt reads a variable that must hold a non-negative decimal integer.
func envInt(env environ.Env, name string) (int, error) {
	v, _ := env.Lookup(name)
	n, err := strconv.Atoi(v)
	if err != nil || !isDigits(v) {
		return 0, errors.New(name + "=" + strconv.Quote(v) + " is not a count")
	}
	return n, nil
}

func lastSlash(s string) int {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '/' {
			return i
		}
	}
	return -1
}
