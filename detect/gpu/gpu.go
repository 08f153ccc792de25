package gpu

import (
	"cmp"
	"errors"
	"slices"
	"strconv"

	"github.com/spank-otel/spank-otel/environ"
	"github.com/spank-otel/spank-otel/internal/keys"
	"github.com/spank-otel/spank-otel/internal/strs"
	"github.com/spank-otel/spank-otel/libcarrier"
)

// The keys of a task's GPUs (docs/spec.md, section 3), named in the
// project's key table (internal/keys), which says which keys are the GPU
// detector's and their types.
const (
	// KeyCount is the number of the task's GPUs.
	KeyCount = keys.GPUCount
	// KeyUUID is the UUID of a task's one GPU, written only when it has
	// exactly one: its value equals dcgm-exporter's UUID label.
	KeyUUID = keys.GPUUUID
	// KeyUUIDs was the comma-separated list of earlier versions. It is
	// never written; an inherited one is removed as another task's.
	KeyUUIDs = keys.GPUUUIDs
)

// MaxGPUs is the most GPUs of one task that are named, one key each
// ([OrdinalKey]).
const MaxGPUs = 16

// OrdinalKey returns the key of the UUID of the task's GPU that CUDA
// numbers ordinal in the task: nv.gpu.<ordinal>.uuid.
func OrdinalKey(ordinal int) string {
	return keys.GPUOrdinalPrefix + strconv.Itoa(ordinal) + keys.GPUOrdinalSuffix
}

// IsKey reports whether key is one of the GPU keys ([KeyCount], [KeyUUID],
// an [OrdinalKey], or the older [KeyUUIDs]): a task's own, never read from
// an inherited carrier.
func IsKey(key string) bool {
	return keys.WriterOf(key) == keys.GPU
}

// Keys returns the GPU keys of a task whose GPUs are uuids, in CUDA's
// order: [KeyCount], [KeyUUID] when there is one, and an [OrdinalKey] for
// each, sorted by key.
func Keys(uuids []string) []libcarrier.KeyValue {
	if len(uuids) == 0 {
		return nil
	}
	kvs := make([]libcarrier.KeyValue, 0, len(uuids)+2)
	for i, u := range uuids {
		kvs = append(kvs, libcarrier.KeyValue{Key: OrdinalKey(i), Value: u})
	}
	// "nv.gpu.10.uuid" sorts before "nv.gpu.2.uuid".
	slices.SortFunc(kvs, func(a, b libcarrier.KeyValue) int { return cmp.Compare(a.Key, b.Key) })
	kvs = append(kvs, libcarrier.KeyValue{Key: KeyCount, Value: strconv.Itoa(len(uuids))})
	if len(uuids) == 1 {
		kvs = append(kvs, libcarrier.KeyValue{Key: KeyUUID, Value: uuids[0]})
	}
	return kvs
}

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
// and one warning, under [KeyUUID], that says why: never a GPU it cannot
// prove.
func Find(env environ.Env, fsys FS) ([]string, []libcarrier.Warning) {
	visible, _ := env.Lookup(keys.VarVisibleDevices)
	step, _ := env.Lookup(keys.VarStepGPUs)
	if visible == "" && step == "" {
		return nil, nil
	}
	// Three steps, parse the variables, read the node's files, match the
	// two, each in a frame of its own, and their state on the heap, in
	// the one allocation that also holds the buffer the files are read
	// into (the stack rule: package taskenv).
	sr := new(search)
	req, facts := &sr.req, &sr.facts
	facts.buf = sr.room[:0]
	err := req.parseVars(env, visible, step)
	if err == nil {
		err = facts.readNodeFiles(fsys, req.confDir, req.node)
	}
	var uuids []string
	if err == nil {
		uuids, err = matchGPUs(req, facts)
	}
	if err == nil {
		err = fits(uuids)
	}
	if err != nil {
		return nil, warning(err)
	}
	return uuids, nil
}

// fits reports why uuids cannot be written: more than [MaxGPUs], or a
// UUID longer than one value may be (libcarrier.MaxValueBytes, over which
// the JavaScript SDK discards the whole variable; a driver's UUID is 40
// bytes).
func fits(uuids []string) error {
	if len(uuids) > MaxGPUs {
		return errors.New(strconv.Itoa(len(uuids)) + " GPUs, over the " + strconv.Itoa(MaxGPUs) + " one task's keys name")
	}
	for _, u := range uuids {
		if len(u) > libcarrier.MaxValueBytes {
			return errors.New("a GPU UUID of " + strconv.Itoa(len(u)) + " bytes, over the " + strconv.Itoa(libcarrier.MaxValueBytes) +
				" of one value that the JavaScript SDK and the Collector read")
		}
	}
	return nil
}

// warning is Find's warning for err.
//
//go:noinline
func warning(err error) []libcarrier.Warning {
	return []libcarrier.Warning{{Key: KeyUUID, Message: "no GPU UUIDs: " + err.Error()}}
}

// Join returns uuids comma-separated, for display.
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

// search is the state of one Find.
type search struct {
	req   request
	facts nodeFacts
	room  [1024]byte // facts.buf's first: a driver file and a short gres.conf fit
}

// request is what the task's environment says of its GPUs.
type request struct {
	visible, step string   // CUDA_VISIBLE_DEVICES, SLURM_STEP_GPUS
	cuda, gres    []int    // their entries
	named         []string // CUDA_VISIBLE_DEVICES as GPU UUIDs (Flags=env_uuid), instead of cuda
	onNode        int      // SLURM_GPUS_ON_NODE: the step's GPUs on the node
	confDir       string   // slurmd's configuration directory, with a slash
	node          string   // SLURMD_NODENAME
	pciOrder      bool     // CUDA_DEVICE_ORDER=PCI_BUS_ID
}

// parseVars fills r from the task's variables, visible and step being
// CUDA_VISIBLE_DEVICES and SLURM_STEP_GPUS, or says why they name no GPU
// the search can find.
//
//go:noinline
func (r *request) parseVars(env environ.Env, visible, step string) error {
	r.visible, r.step = visible, step
	if visible == "" {
		return errors.New("SLURM_STEP_GPUS is set but CUDA_VISIBLE_DEVICES is not")
	}
	var err error
	if strs.HasPrefix(visible, "GPU-") {
		// gres.conf Flags=env_uuid (Slurm 26.05): the GPUs' UUIDs.
		r.named, err = parseUUIDs(visible)
	} else {
		r.cuda, err = parseIndices("CUDA_VISIBLE_DEVICES", visible)
	}
	if err != nil {
		return err
	}
	n := len(r.cuda) + len(r.named)
	if step == "" {
		return errors.New("CUDA_VISIBLE_DEVICES is not Slurm's: SLURM_STEP_GPUS is unset")
	}
	if r.gres, err = parseIndices("SLURM_STEP_GPUS", step); err != nil {
		return err
	}
	if len(r.gres) != n {
		return errors.New("CUDA_VISIBLE_DEVICES=" + visible + " and SLURM_STEP_GPUS=" + step + " differ in length")
	}
	if r.onNode, err = envInt(env, keys.VarGPUsOnNode); err != nil {
		return err
	}
	if n > r.onNode {
		return errors.New("CUDA_VISIBLE_DEVICES=" + visible + " names more GPUs than SLURM_GPUS_ON_NODE")
	}
	// slurmstepd puts slurmd's SLURM_CONF in every task (env.c,
	// setup_env): in configless mode a file in slurmd's conf-cache.
	confFile, _ := env.Lookup(keys.VarSlurmConf)
	slash := lastSlash(confFile)
	if slash < 0 || confFile[0] != '/' {
		return errors.New("SLURM_CONF=" + strconv.Quote(confFile) + " names no configuration directory")
	}
	r.confDir = confFile[:slash+1]
	r.node, _ = env.Lookup(keys.VarNodeName)
	order, _ := env.Lookup(keys.VarDeviceOrder)
	r.pciOrder = order == "PCI_BUS_ID"
	return nil
}

// nodeFacts is what the node's files say of its GPUs.
type nodeFacts struct {
	buf []byte // every file is read into it in turn
	// The driver's GPUs of a node of up to 16 are kept here, in the
	// search's one allocation.
	gpuRoom [16]driverGPU
	local   bool         // cgroup.conf's ConstrainDevices: local indices
	gpus    []driverGPU  // the driver's GPUs, PCI order
	devices []*driverGPU // devices[i] is the GPU of GRES index i
	// With local: the GPUs the task's device cgroup admits, PCI order,
	// and whether the FS could tell (false: ErrNoOracle).
	admitted []*driverGPU
	oracle   bool
}

// readNodeFiles fills f from the node's files, slurmd's configuration in
// confDir for the node named node and the driver's, or says why they
// cannot be used.
//
//go:noinline
func (f *nodeFacts) readNodeFiles(fsys FS, confDir, node string) error {
	// slurmd takes fake_gpus.conf for the detected GPUs and re-sorts
	// them (gres_gpu.c): a test setup, not read here.
	switch _, err := fsys.Stat(confDir + "fake_gpus.conf"); {
	case err == nil:
		return errors.New(confDir + "fake_gpus.conf is present")
	case !notExist(err):
		return err
	}
	conf, err := f.readGresConf(fsys, confDir+"gres.conf", node)
	if err != nil {
		return err
	}
	if f.local, err = f.readConstrainDevices(fsys, confDir+"cgroup.conf"); err != nil {
		return err
	}
	if f.gpus, err = f.readDriver(fsys); err != nil {
		return err
	}
	if f.devices, err = gresDevices(fsys, conf, f.gpus); err != nil || !f.local {
		return err
	}
	f.admitted, f.oracle, err = admittedGPUs(fsys, f.gpus)
	return err
}

// admittedGPUs returns the GPUs of gpus (PCI order) whose device node the
// task may read and write, and whether fsys could tell. A GPU without its
// node is not one the task can use; a node that is not that GPU's is an
// error.
//
//go:noinline
func admittedGPUs(fsys FS, gpus []driverGPU) ([]*driverGPU, bool, error) {
	admitted := make([]*driverGPU, 0, len(gpus))
	for i := range gpus {
		name := "/dev/nvidia" + strconv.FormatUint(uint64(gpus[i].minor), 10)
		ok, err := fsys.Usable(name)
		if errors.Is(err, ErrNoOracle) {
			return nil, false, nil
		}
		if err != nil {
			return nil, false, err
		}
		if !ok {
			continue
		}
		st, err := fsys.Stat(name)
		if err != nil {
			return nil, false, err
		}
		if !st.CharDevice || st.Major != nvidiaMajor || st.Minor != gpus[i].minor {
			return nil, false, errors.New(name + " is not the device node of the driver's GPU of minor " + strconv.FormatUint(uint64(gpus[i].minor), 10))
		}
		admitted = append(admitted, &gpus[i])
	}
	return admitted, true, nil
}

// readGresConf reads and parses gres.conf.
//
//go:noinline
func (f *nodeFacts) readGresConf(fsys FS, name, node string) (gresConf, error) {
	var err error
	if f.buf, err = fsys.AppendFile(f.buf[:0], name); err != nil {
		return gresConf{}, err
	}
	return parseGresConf(f.buf, node)
}

// readConstrainDevices reads cgroup.conf's ConstrainDevices; a node
// without cgroup.conf has Slurm's default, no.
//
//go:noinline
func (f *nodeFacts) readConstrainDevices(fsys FS, name string) (bool, error) {
	var err error
	f.buf, err = fsys.AppendFile(f.buf[:0], name)
	switch {
	case err == nil:
		return constrainDevices(f.buf)
	case notExist(err):
		return false, nil
	}
	return false, err
}

// matchGPUs maps the task's entries to UUIDs, or says why it cannot.
//
//go:noinline
func matchGPUs(r *request, f *nodeFacts) ([]string, error) {
	if r.named != nil {
		return byUUID(r, f)
	}
	if f.local && f.oracle {
		return byDeviceCgroup(r, f)
	}
	uuids := make([]string, len(r.cuda))
	if f.local {
		// Local indices (ConstrainDevices) and no device cgroup to ask
		// (a copy of a node): the task opens its own
		// GPUs, CUDA numbers them from 0. Only a task that has all of
		// its step's GPUs can be told from its environment.
		if len(r.cuda) != r.onNode {
			return nil, errors.New("under ConstrainDevices the task has " + strconv.Itoa(len(r.cuda)) + " of its step's " + strconv.Itoa(r.onNode) + " GPUs on the node, and Slurm's SLURM_STEP_GPUS does not say which")
		}
		var prev *driverGPU
		for i, c := range r.cuda {
			if c != i {
				return nil, errors.New("CUDA_VISIBLE_DEVICES=" + r.visible + " is not 0 to n-1 under ConstrainDevices")
			}
			g, err := device(f.devices, r.gres[i])
			if err != nil {
				return nil, err
			}
			// CUDA's order of the GPUs a task can open is PCI order
			// only if the task asked for it or the GPUs are alike
			// (docs/spec.md).
			if prev != nil {
				if g.pci < prev.pci {
					return nil, errors.New("GRES order differs from PCI order for SLURM_STEP_GPUS=" + r.step)
				}
				if !r.pciOrder && g.model != prev.model {
					return nil, errDifferentModels
				}
			}
			prev = g
			uuids[i] = g.uuid
		}
		return uuids, nil
	}
	// Global indices: every GPU of the node is visible to CUDA, and an
	// entry is both a GRES index and CUDA's ordinal.
	if !r.pciOrder && len(f.gpus) > 1 {
		for _, g := range f.gpus[1:] {
			if g.model != f.gpus[0].model {
				return nil, errDifferentModels
			}
		}
	}
	for i, c := range r.cuda {
		if c != r.gres[i] {
			return nil, errors.New("CUDA_VISIBLE_DEVICES=" + r.visible + " differs from SLURM_STEP_GPUS=" + r.step + " without ConstrainDevices")
		}
		g, err := device(f.devices, c)
		if err != nil {
			return nil, err
		}
		if c >= len(f.gpus) || f.gpus[c].uuid != g.uuid {
			return nil, errors.New("GRES index " + strconv.Itoa(c) + " is not CUDA's GPU " + strconv.Itoa(c) + " in PCI order")
		}
		uuids[i] = g.uuid
	}
	return uuids, nil
}

// byDeviceCgroup answers under ConstrainDevices from the task's device
// cgroup, which the kernel enforces: the GPUs it admits are those CUDA can
// open in the task, and CUDA numbers them from 0 in its order, into which
// CUDA_VISIBLE_DEVICES indexes. A task bound to some of its step's GPUs
// (--gpus-per-task, --gpu-bind) is told apart this way, where Slurm's
// SLURM_STEP_GPUS names the step's first GPUs instead (gres_common.c).
//
//go:noinline
func byDeviceCgroup(r *request, f *nodeFacts) ([]string, error) {
	admitted := f.admitted
	switch {
	case len(admitted) == 0:
		return nil, errors.New("the task's device cgroup admits none of the node's GPUs")
	case len(admitted) > r.onNode:
		// Not the task's constraint: one not yet in force, or a node
		// that admits every GPU.
		return nil, errors.New("the task's device cgroup admits " + strconv.Itoa(len(admitted)) + " GPUs, more than the step's " +
			strconv.Itoa(r.onNode) + " on the node (SLURM_GPUS_ON_NODE)")
	case len(admitted) != len(r.cuda):
		// Slurm's CUDA_VISIBLE_DEVICES names every GPU a task is
		// bound to; a cgroup that admits others is the step's, not
		// the task's (a constraint not in force when the task asks).
		return nil, errors.New("the task's device cgroup admits " + strconv.Itoa(len(admitted)) + " GPUs and CUDA_VISIBLE_DEVICES=" +
			r.visible + " names " + strconv.Itoa(len(r.cuda)))
	}
	// CUDA's order of the GPUs a task can open is PCI order only if the
	// task asked for it or the GPUs are alike (docs/spec.md).
	if !r.pciOrder {
		for _, g := range admitted[1:] {
			if g.model != admitted[0].model {
				return nil, errDifferentModels
			}
		}
	}
	uuids := make([]string, len(r.cuda))
	for i, c := range r.cuda {
		if c >= len(admitted) {
			return nil, errors.New("CUDA_VISIBLE_DEVICES=" + r.visible + " names CUDA's GPU " + strconv.Itoa(c) +
				", and the task's device cgroup admits " + strconv.Itoa(len(admitted)))
		}
		uuids[i] = admitted[c].uuid
	}
	// A task of all of its step's GPUs: Slurm names them too, and must
	// name the same.
	if len(r.cuda) == r.onNode && len(admitted) == r.onNode {
		for _, g := range r.gres {
			d, err := device(f.devices, g)
			if err != nil {
				return nil, err
			}
			if !slices.Contains(admitted, d) {
				return nil, errors.New("SLURM_STEP_GPUS=" + r.step + " names GRES index " + strconv.Itoa(g) +
					", which the task's device cgroup does not admit")
			}
		}
	}
	return uuids, nil
}

// byUUID answers for a task whose CUDA_VISIBLE_DEVICES names its GPUs by
// UUID (gres.conf Flags=env_uuid): CUDA opens exactly those, in that
// order, so they are the task's when each is a whole GPU the node's
// driver lists and, where the task's device cgroup can be asked, one it
// admits.
//
//go:noinline
func byUUID(r *request, f *nodeFacts) ([]string, error) {
	for _, u := range r.named {
		var g *driverGPU
		for i := range f.gpus {
			if f.gpus[i].uuid == u {
				g = &f.gpus[i]
			}
		}
		if g == nil {
			return nil, errors.New("CUDA_VISIBLE_DEVICES names " + u + ", a GPU the node's driver does not list")
		}
		if f.local && f.oracle && !slices.Contains(f.admitted, g) {
			return nil, errors.New("CUDA_VISIBLE_DEVICES names " + u + ", which the task's device cgroup does not admit")
		}
	}
	return r.named, nil
}

// errDifferentModels is the answer when CUDA's FASTEST_FIRST order cannot
// be told from PCI order.
var errDifferentModels = errors.New("GPUs of different models, and CUDA_DEVICE_ORDER is not PCI_BUS_ID: CUDA's order is unknown")

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

// parseUUIDs reads CUDA_VISIBLE_DEVICES as Slurm writes it under gres.conf
// Flags=env_uuid: distinct whole GPUs' UUIDs, comma-separated.
func parseUUIDs(list string) ([]string, error) {
	out := make([]string, 0, 1+strs.Count(list, ','))
	for rest := list; ; {
		entry := rest
		comma := strs.IndexByte(rest, ',')
		if comma >= 0 {
			entry, rest = rest[:comma], rest[comma+1:]
		}
		switch {
		case strs.HasPrefix(entry, "MIG-"):
			return nil, errors.New("CUDA_VISIBLE_DEVICES names MIG devices, which are out of scope")
		case !validUUID(entry):
			return nil, errors.New("CUDA_VISIBLE_DEVICES=" + strconv.Quote(list) + " is neither indices nor GPU UUIDs")
		case slices.Contains(out, entry):
			return nil, errors.New("CUDA_VISIBLE_DEVICES=" + strconv.Quote(list) + " names " + entry + " twice")
		}
		out = append(out, entry)
		if comma < 0 {
			return out, nil
		}
	}
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
			return nil, errors.New(name + "=" + strconv.Quote(list) + " mixes GPU UUIDs with indices")
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
