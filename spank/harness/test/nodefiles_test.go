//go:build harness

package test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/spank-otel/spank-otel/cgo/nodefiles"
	"github.com/spank-otel/spank-otel/detect/gpu"
	"github.com/spank-otel/spank-otel/environ"
)

// nodeCase is a fake node for the step parent's records of its files
// (spank/nodefiles.c) and the GPU tasks asked of it.
type nodeCase struct {
	name   string
	pci    []string // one GPU per address, minor = index
	order  []int    // gres.conf's File= minors, in order; nil: AutoDetect=nvidia
	cgroup string   // cgroup.conf; "" leaves it out
	extra  func(t *testing.T, root string)
	tasks  []map[string]string // each task's GPU variables
	found  bool                // every task is told its GPUs
}

// TestNodeFilesAnswerTheSearch builds fake nodes, device nodes included
// (mknod, root), has stepdrive record them as the plugin's user_init
// does, and runs the GPU search of each task twice: from the records over
// a node that fails the test if asked, and from the node's files. The
// answers must be the same, and the records must answer every question.
func TestNodeFilesAnswerTheSearch(t *testing.T) {
	drive := need(t, "stepdrive")
	gpus := func(cuda, step, onNode string) map[string]string {
		return map[string]string{"CUDA_VISIBLE_DEVICES": cuda, "SLURM_STEP_GPUS": step, "SLURM_GPUS_ON_NODE": onNode}
	}
	pci := func(n int) []string {
		var out []string
		for i := range n {
			out = append(out, fmt.Sprintf("0000:%02x:00.0", 0x1b+16*i))
		}
		return out
	}
	cases := []nodeCase{
		{name: "1 GPU", pci: pci(1), order: []int{0}, cgroup: "ConstrainDevices=yes\n", found: true,
			tasks: []map[string]string{gpus("0", "0", "1")}},
		{name: "4 GPUs, ConstrainDevices", pci: pci(4), order: []int{0, 1, 2, 3}, cgroup: "ConstrainDevices=yes\n", found: true,
			tasks: []map[string]string{gpus("0,1", "2,3", "2"), gpus("0", "1", "1"), gpus("0,1,2,3", "0,1,2,3", "4")}},
		{name: "8 GPUs, global indices", pci: pci(8), order: []int{0, 1, 2, 3, 4, 5, 6, 7}, found: true,
			tasks: []map[string]string{gpus("5,2", "5,2", "2"), gpus("0", "0", "1")}},
		{name: "8 GPUs, File= order not PCI order", pci: pci(8), order: []int{7, 6, 5, 4, 3, 2, 1, 0}, cgroup: "ConstrainDevices=yes\n", found: true,
			tasks: []map[string]string{gpus("0", "5", "1"), gpus("0", "0", "1")}},
		{name: "8 GPUs, File= order not PCI order, global indices", pci: pci(8), order: []int{7, 6, 5, 4, 3, 2, 1, 0},
			tasks: []map[string]string{gpus("5,2", "5,2", "2")}},
		{name: "AutoDetect", pci: pci(4), cgroup: "ConstrainDevices=yes\n", found: true,
			tasks: []map[string]string{gpus("0,1", "1,2", "2")}},
		{name: "fake_gpus.conf present", pci: pci(2), order: []int{0, 1}, cgroup: "ConstrainDevices=yes\n",
			extra: func(t *testing.T, root string) { write(t, root, "etc/slurm/fake_gpus.conf", "") },
			tasks: []map[string]string{gpus("0", "0", "1")}},
		{name: "no gres.conf", pci: pci(2), cgroup: "ConstrainDevices=yes\n",
			extra: func(t *testing.T, root string) { assertNil(t, os.Remove(filepath.Join(root, "etc/slurm/gres.conf"))) },
			tasks: []map[string]string{gpus("0", "0", "1")}},
		{name: "a device file of no GPU the driver lists", pci: pci(2), order: []int{0, 1, 2}, cgroup: "ConstrainDevices=yes\n",
			extra: func(t *testing.T, root string) { mknod(t, root, 2) },
			tasks: []map[string]string{gpus("0", "2", "1")}},
		{name: "a device file that is no device", pci: pci(2), order: []int{0, 1}, cgroup: "ConstrainDevices=yes\n",
			extra: func(t *testing.T, root string) {
				assertNil(t, os.Remove(filepath.Join(root, "dev/nvidia1")))
				write(t, root, "dev/nvidia1", "")
			},
			tasks: []map[string]string{gpus("0", "1", "1")}},
		{name: "malformed driver file", pci: pci(2), order: []int{0, 1}, cgroup: "ConstrainDevices=yes\n",
			extra: func(t *testing.T, root string) {
				write(t, root, "proc/driver/nvidia/gpus/"+pci(2)[1]+"/information", "Model: x\n")
			},
			tasks: []map[string]string{gpus("0", "1", "1")}},
		{name: "MIG devices", pci: pci(1), order: []int{0}, cgroup: "ConstrainDevices=yes\n",
			tasks: []map[string]string{gpus("MIG-0", "0", "1")}},
		// Another maker's GPUs: Slurm sets CUDA_VISIBLE_DEVICES for them
		// too, and the search ends at the records.
		{name: "no NVIDIA driver", order: []int{0, 1}, cgroup: "ConstrainDevices=yes\n",
			tasks: []map[string]string{gpus("0,1", "0,1", "2")}},
		{name: "no NVIDIA driver, AutoDetect", cgroup: "ConstrainDevices=yes\n",
			tasks: []map[string]string{gpus("0", "0", "1")}},
		{name: "a driver that lists no GPU", order: []int{0}, cgroup: "ConstrainDevices=yes\n",
			extra: func(t *testing.T, root string) {
				assertNil(t, os.MkdirAll(filepath.Join(root, "proc/driver/nvidia/gpus"), 0o755))
			},
			tasks: []map[string]string{gpus("0", "0", "1")}},
	}
	for _, nc := range cases {
		check(t, "node files: "+nc.name, func(t *testing.T) {
			root := fakeNode(t, nc)
			env := filepath.Join(t.TempDir(), "env")
			assertNil(t, os.WriteFile(env, []byte("SLURM_CONF=/etc/slurm/slurm.conf\n"), 0o644))
			out, err := exec.Command(drive, "--dump-node-files", root, "--env-file", env).Output()
			if err != nil {
				t.Fatalf("--dump-node-files: %v", err)
			}
			for _, vars := range nc.tasks {
				taskEnv := environ.List(taskVars(vars))
				strict := &refusing{t: t}
				fromRecords := nodefiles.New(string(out), strict)
				uuids, warns := gpu.Find(taskEnv, fromRecords)
				wantUUIDs, wantWarns := gpu.Find(taskEnv, gpu.Root(root))
				if !slices.Equal(uuids, wantUUIDs) || len(warns) != len(wantWarns) {
					t.Errorf("%v: from the records %q %v, from the node %q %v", vars, uuids, warns, wantUUIDs, wantWarns)
				}
				for i := range min(len(warns), len(wantWarns)) {
					// The node's messages name the fake root.
					if want := strings.ReplaceAll(wantWarns[i].Message, root, ""); warns[i].Message != want {
						t.Errorf("%v: warning %q, from the node %q", vars, warns[i].Message, want)
					}
				}
				if nc.found != (len(uuids) > 0) {
					t.Errorf("%v: UUIDs %q (warnings %v), want them found: %v", vars, uuids, warns, nc.found)
				}
				if fromRecords.Asked != 0 {
					t.Errorf("%v: the records left %d questions to the node", vars, fromRecords.Asked)
				}
			}
		})
	}
	// A site's shared gres.conf of 300 KB, over what the records of a
	// step hold: it costs its own record only, and the search reads it
	// from the node.
	check(t, "node files: a gres.conf too large for the records is left to the node", func(t *testing.T) {
		root := fakeNode(t, nodeCase{pci: pci(2), order: []int{0, 1}, cgroup: "ConstrainDevices=yes\n"})
		gres := strings.Repeat("# a comment line of a large shared gres.conf, for many node names\n", 300<<10/64) +
			"Name=gpu File=/dev/nvidia[0-1]\n"
		write(t, root, "etc/slurm/gres.conf", gres)
		env := filepath.Join(t.TempDir(), "env")
		assertNil(t, os.WriteFile(env, []byte("SLURM_CONF=/etc/slurm/slurm.conf\n"), 0o644))
		out, err := exec.Command(drive, "--dump-node-files", root, "--env-file", env).Output()
		if err != nil {
			t.Fatalf("--dump-node-files: %v", err)
		}
		if !strings.Contains(string(out), "/proc/driver/nvidia/gpus/"+pci(2)[1]+"/information") ||
			!strings.Contains(string(out), "/etc/slurm/cgroup.conf") || strings.Contains(string(out), "/etc/slurm/gres.conf") {
			t.Fatalf("records (%d bytes) should hold the driver's files and cgroup.conf, not gres.conf", len(out))
		}
		taskEnv := environ.List(taskVars(map[string]string{"CUDA_VISIBLE_DEVICES": "0", "SLURM_STEP_GPUS": "1", "SLURM_GPUS_ON_NODE": "1"}))
		files := nodefiles.New(string(out), gpu.Root(root))
		uuids, warns := gpu.Find(taskEnv, files)
		if len(uuids) != 1 || len(warns) != 0 || files.Source() != "step+node" {
			t.Errorf("from the records and the node: %q %v, source %s", uuids, warns, files.Source())
		}
	})
	check(t, "node files: without the driver's directory, that directory absent", func(t *testing.T) {
		root := t.TempDir()
		write(t, root, "etc/slurm/gres.conf", "Name=gpu File=/dev/nvidia0\n")
		out, err := exec.Command(drive, "--dump-node-files", root).Output()
		want := nodefiles.AppendRecord(nil, nodefiles.KindAbsent, "/proc/driver/nvidia/gpus", nil)
		if err != nil || !strings.HasPrefix(string(out), string(want)) {
			t.Errorf("--dump-node-files of a node without the driver: %v, %q, want it to begin %q", err, out, want)
		}
	})
}

func taskVars(vars map[string]string) []string {
	env := []string{"SLURM_CONF=/etc/slurm/slurm.conf", "SLURMD_NODENAME=n1"}
	for k, v := range vars {
		env = append(env, k+"="+v)
	}
	return env
}

// refusing is the node behind the records: a question it gets fails the
// test.
type refusing struct{ t *testing.T }

func (r *refusing) AppendFile(dst []byte, name string) ([]byte, error) {
	r.t.Errorf("the node was asked for the file %s", name)
	return dst, gpu.ErrNotExist
}

func (r *refusing) ReadDir(name string) ([]string, error) {
	r.t.Errorf("the node was asked for the directory %s", name)
	return nil, gpu.ErrNotExist
}

// Usable: the fake nodes are copies, with no device cgroup to ask, as
// gpu.Root of a directory answers.
func (r *refusing) Usable(name string) (bool, error) { return false, gpu.ErrNoOracle }

func (r *refusing) Stat(name string) (gpu.Stat, error) {
	r.t.Errorf("the node was asked to stat %s", name)
	return gpu.Stat{}, gpu.ErrNotExist
}

// fakeNode writes nc's files below a new directory: the driver's tree,
// /dev/nvidia<minor> of each GPU (and /dev/nvidiactl, which is no GPU),
// slurm.conf, gres.conf and cgroup.conf.
func fakeNode(t *testing.T, nc nodeCase) string {
	t.Helper()
	root := t.TempDir()
	for i, addr := range nc.pci {
		write(t, root, "proc/driver/nvidia/gpus/"+addr+"/information", fmt.Sprintf(
			"Model: \t\t NVIDIA H100\nGPU UUID: \t GPU-%08d-1111-2222-3333-444444444444\nBus Location: \t %s\nDevice Minor: \t %d\n", i, addr, i))
		mknod(t, root, i)
	}
	write(t, root, "dev/nvidiactl", "")
	write(t, root, "etc/slurm/slurm.conf", "ClusterName=c\n")
	gres := "AutoDetect=nvidia\nName=gpu\n"
	if nc.order != nil {
		var files []string
		for _, m := range nc.order {
			files = append(files, fmt.Sprintf("File=/dev/nvidia%d", m))
		}
		gres = ""
		for _, f := range files {
			gres += "Name=gpu " + f + "\n"
		}
	}
	write(t, root, "etc/slurm/gres.conf", gres)
	if nc.cgroup != "" {
		write(t, root, "etc/slurm/cgroup.conf", nc.cgroup)
	}
	if nc.extra != nil {
		nc.extra(t, root)
	}
	return root
}

func write(t *testing.T, root, name, text string) {
	t.Helper()
	path := filepath.Join(root, name)
	assertNil(t, os.MkdirAll(filepath.Dir(path), 0o755))
	assertNil(t, os.WriteFile(path, []byte(text), 0o644))
}

// mknod makes root/dev/nvidia<minor>, character device 195:minor.
func mknod(t *testing.T, root string, minor int) {
	t.Helper()
	path := filepath.Join(root, "dev", fmt.Sprintf("nvidia%d", minor))
	assertNil(t, os.MkdirAll(filepath.Dir(path), 0o755))
	if err := unix.Mknod(path, unix.S_IFCHR|0o666, int(unix.Mkdev(195, uint32(minor)))); err != nil {
		t.Fatalf("mknod %s (the test runs as root, as make ctest does): %v", path, err)
	}
}

func assertNil(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
