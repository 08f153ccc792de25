package gpu

import (
	"fmt"
	"sort"
	"strings"
)

// fakeFS is an FS held in memory: files, device nodes by name, and the
// device nodes the task's device cgroup admits (nil: no cgroup to ask).
type fakeFS struct {
	files    map[string]string
	devices  map[string]Stat
	admitted map[string]bool
}

func (f fakeFS) AppendFile(dst []byte, name string) ([]byte, error) {
	text, ok := f.files[name]
	if !ok {
		return dst, fmt.Errorf("open %s: %w", name, ErrNotExist)
	}
	return append(dst, text...), nil
}

func (f fakeFS) ReadDir(name string) ([]string, error) {
	seen := map[string]bool{}
	prefix := name + "/"
	for path := range f.files {
		if rest, ok := strings.CutPrefix(path, prefix); ok {
			seen[strings.SplitN(rest, "/", 2)[0]] = true
		}
	}
	if len(seen) == 0 {
		return nil, fmt.Errorf("open %s: %w", name, ErrNotExist)
	}
	var names []string
	for n := range seen {
		names = append(names, n)
	}
	sort.Sort(sort.Reverse(sort.StringSlice(names))) // no order is promised
	return names, nil
}

func (f fakeFS) Usable(name string) (bool, error) {
	if f.admitted == nil {
		return false, ErrNoOracle
	}
	return f.admitted[name], nil
}

// admitting returns f whose task's device cgroup admits the device nodes
// of the given minors.
func admitting(f fakeFS, minors ...int) fakeFS {
	f.admitted = map[string]bool{}
	for _, m := range minors {
		f.admitted[fmt.Sprintf("/dev/nvidia%d", m)] = true
	}
	return f
}

func (f fakeFS) Stat(name string) (Stat, error) {
	if st, ok := f.devices[name]; ok {
		return st, nil
	}
	if _, ok := f.files[name]; ok {
		return Stat{}, nil
	}
	return Stat{}, fmt.Errorf("stat %s: %w", name, ErrNotExist)
}

// fakeGPU is one GPU of a fake node.
type fakeGPU struct {
	pci   string
	minor int
	model string
}

// uuidOf is the fake UUID of a node's GPU of minor m.
func uuidOf(node string, m int) string {
	return fmt.Sprintf("GPU-%08x-0000-4000-8000-%012d", len(node)*1000+m, m)
}

// information is the driver's file for g, in the shape of a real one.
func information(node string, g fakeGPU) string {
	return "Model: \t\t " + g.model + "\n" +
		"IRQ:   \t\t 42\n" +
		"GPU UUID: \t " + uuidOf(node, g.minor) + "\n" +
		"Video BIOS: \t ??.??.??.??.??\n" +
		"Bus Type: \t PCIe\n" +
		"DMA Size: \t 47 bits\n" +
		"DMA Mask: \t 0x7fffffffffff\n" +
		"Bus Location: \t " + g.pci + "\n" +
		"Device Minor: \t " + fmt.Sprint(g.minor) + "\n" +
		"GPU Excluded:\t No\n"
}

// node builds a fake node: its GPUs in the driver's tree, a device node
// /dev/nvidia<minor> for each, and the given gres.conf and cgroup.conf
// in /etc/slurm (cgroup "" leaves cgroup.conf out).
func node(name string, gpus []fakeGPU, gres, cgroup string) fakeFS {
	f := fakeFS{files: map[string]string{}, devices: map[string]Stat{}}
	for _, g := range gpus {
		f.files[driverDir+"/"+g.pci+"/information"] = information(name, g)
		f.devices[fmt.Sprintf("/dev/nvidia%d", g.minor)] = Stat{CharDevice: true, Major: 195, Minor: uint32(g.minor)}
	}
	f.files["/etc/slurm/slurm.conf"] = "ClusterName=c\n"
	f.files["/etc/slurm/gres.conf"] = gres
	if cgroup != "" {
		f.files["/etc/slurm/cgroup.conf"] = cgroup
	}
	return f
}

// gpusInPCIOrder returns n alike GPUs whose minors follow PCI order.
func gpusInPCIOrder(n int) []fakeGPU {
	var gpus []fakeGPU
	step := 0x10
	if n > 14 {
		step = 0x08 // two hex digits still
	}
	for i := range n {
		gpus = append(gpus, fakeGPU{pci: fmt.Sprintf("0000:%02x:00.0", 0x1b+i*step), minor: i, model: "NVIDIA H100 80GB HBM3"})
	}
	return gpus
}
