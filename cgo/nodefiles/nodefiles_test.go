package nodefiles

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/spank-otel/spank-otel/detect/gpu"
	"github.com/spank-otel/spank-otel/environ"
)

// node is the FS behind the records in the tests: it answers every
// question with errNode, so a test sees which ones reached it.
type node struct{ asked []string }

var errNode = errors.New("asked the node")

func (n *node) AppendFile(dst []byte, name string) ([]byte, error) {
	n.asked = append(n.asked, "file "+name)
	return dst, errNode
}

func (n *node) ReadDir(name string) ([]string, error) {
	n.asked = append(n.asked, "dir "+name)
	return nil, errNode
}

func (n *node) Usable(name string) (bool, error) {
	n.asked = append(n.asked, "usable "+name)
	return false, errNode
}

func (n *node) Stat(name string) (gpu.Stat, error) {
	n.asked = append(n.asked, "stat "+name)
	return gpu.Stat{}, errNode
}

// records are those of a small node.
func records() []byte {
	var r []byte
	r = AppendRecord(r, KindDir, "/proc/driver/nvidia/gpus", []byte("0000:1b:00.0\x000000:2b:00.0\x00"))
	r = AppendRecord(r, KindFile, "/proc/driver/nvidia/gpus/0000:1b:00.0/information", []byte("GPU UUID: GPU-a\n"))
	r = AppendRecord(r, KindCharDev, "/dev/nvidia1", []byte{195, 0, 0, 0, 1, 0, 0, 0})
	r = AppendRecord(r, KindOther, "/dev/nvidiactl", nil)
	r = AppendRecord(r, KindAbsent, "/etc/slurm/fake_gpus.conf", nil)
	r = AppendRecord(r, KindFile, "/etc/slurm/empty.conf", nil)
	r = AppendRecord(r, KindDir, "/empty", nil)
	return r
}

// stalled are the records of a step whose reading blocked.
func stalled() []byte {
	return AppendRecord(nil, KindStalled, "/proc/driver/nvidia/gpus/0000:1b:00.0/information", nil)
}

func TestFS(t *testing.T) {
	tests := []struct {
		name    string
		records []byte
		call    func(*FS) (any, error)
		want    any
		wantErr error // errors.Is
		asked   []string
	}{
		{
			name: "file", records: records(),
			call: func(f *FS) (any, error) {
				b, err := f.AppendFile([]byte("x:"), "/proc/driver/nvidia/gpus/0000:1b:00.0/information")
				return string(b), err
			},
			want: "x:GPU UUID: GPU-a\n",
		},
		{
			name: "empty file", records: records(),
			call: func(f *FS) (any, error) { b, err := f.AppendFile(nil, "/etc/slurm/empty.conf"); return string(b), err },
			want: "",
		},
		{
			name: "file recorded absent", records: records(),
			call: func(f *FS) (any, error) {
				b, err := f.AppendFile([]byte("kept"), "/etc/slurm/fake_gpus.conf")
				return string(b), err
			},
			want: "kept", wantErr: gpu.ErrNotExist,
		},
		{
			name: "file not recorded", records: records(),
			call: func(f *FS) (any, error) { b, err := f.AppendFile(nil, "/etc/slurm/gres.conf"); return string(b), err },
			want: "", wantErr: errNode, asked: []string{"file /etc/slurm/gres.conf"},
		},
		{
			name: "a directory read as a file goes to the node", records: records(),
			call: func(f *FS) (any, error) {
				b, err := f.AppendFile(nil, "/proc/driver/nvidia/gpus")
				return string(b), err
			},
			want: "", wantErr: errNode, asked: []string{"file /proc/driver/nvidia/gpus"},
		},
		{
			name: "directory", records: records(),
			call: func(f *FS) (any, error) { return f.ReadDir("/proc/driver/nvidia/gpus") },
			want: []string{"0000:1b:00.0", "0000:2b:00.0"},
		},
		{
			name: "empty directory", records: records(),
			call: func(f *FS) (any, error) { return f.ReadDir("/empty") },
			want: []string{},
		},
		{
			name: "directory recorded absent", records: records(),
			call: func(f *FS) (any, error) { return f.ReadDir("/etc/slurm/fake_gpus.conf") },
			want: []string(nil), wantErr: gpu.ErrNotExist,
		},
		{
			name: "directory not recorded", records: records(),
			call: func(f *FS) (any, error) { return f.ReadDir("/dev") },
			want: []string(nil), wantErr: errNode, asked: []string{"dir /dev"},
		},
		{
			name: "device", records: records(),
			call: func(f *FS) (any, error) { return f.Stat("/dev/nvidia1") },
			want: gpu.Stat{CharDevice: true, Major: 195, Minor: 1},
		},
		{
			name: "stat of no device", records: records(),
			call: func(f *FS) (any, error) { return f.Stat("/dev/nvidiactl") },
			want: gpu.Stat{},
		},
		{
			name: "stat of a file", records: records(),
			call: func(f *FS) (any, error) { return f.Stat("/etc/slurm/empty.conf") },
			want: gpu.Stat{},
		},
		{
			name: "stat recorded absent", records: records(),
			call: func(f *FS) (any, error) { return f.Stat("/etc/slurm/fake_gpus.conf") },
			want: gpu.Stat{}, wantErr: gpu.ErrNotExist,
		},
		{
			name: "stat not recorded", records: records(),
			call: func(f *FS) (any, error) { return f.Stat("/dev/nvidia0") },
			want: gpu.Stat{}, wantErr: errNode, asked: []string{"stat /dev/nvidia0"},
		},
		{
			name: "device record of the wrong size", records: AppendRecord(nil, KindCharDev, "/dev/nvidia0", []byte{195}),
			call: func(f *FS) (any, error) { return f.Stat("/dev/nvidia0") },
			want: gpu.Stat{}, wantErr: errDamaged,
		},
		{
			name: "no records", records: nil,
			call: func(f *FS) (any, error) { return f.Stat("/dev/nvidia1") },
			want: gpu.Stat{}, wantErr: errNode, asked: []string{"stat /dev/nvidia1"},
		},
		{
			name: "a record cut short ends them", records: records()[:len(records())-3],
			call: func(f *FS) (any, error) { return f.ReadDir("/empty") },
			want: []string(nil), wantErr: errNode, asked: []string{"dir /empty"},
		},
		{
			name: "a length past the end ends them",
			records: append(AppendRecord(nil, KindFile, "/a", []byte("x")),
				KindFile, '/', 'b', 0, 0xff, 0xff, 0xff, 0x7f, 'y'),
			call: func(f *FS) (any, error) { b, err := f.AppendFile(nil, "/b"); return string(b), err },
			want: "", wantErr: errNode, asked: []string{"file /b"},
		},
		{
			name: "stalled: a file", records: stalled(),
			call: func(f *FS) (any, error) {
				b, err := f.AppendFile([]byte("kept"), "/etc/slurm/gres.conf")
				return string(b), err
			},
			want: "kept", wantErr: ErrStalled,
		},
		{
			name: "stalled: a directory", records: stalled(),
			call: func(f *FS) (any, error) { return f.ReadDir("/proc/driver/nvidia/gpus") },
			want: []string(nil), wantErr: ErrStalled,
		},
		{
			name: "stalled: a stat", records: stalled(),
			call: func(f *FS) (any, error) { return f.Stat("/dev/nvidia0") },
			want: gpu.Stat{}, wantErr: ErrStalled,
		},
		{
			name: "a name without its NUL ends them", records: []byte("f/etc/slurm/gres.conf"),
			call: func(f *FS) (any, error) { b, err := f.AppendFile(nil, "/etc/slurm/gres.conf"); return string(b), err },
			want: "", wantErr: errNode, asked: []string{"file /etc/slurm/gres.conf"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := &node{}
			f := New(string(tt.records), n)
			got, err := tt.call(f)
			if !equal(got, tt.want) {
				t.Errorf("got %#v, want %#v", got, tt.want)
			}
			if tt.wantErr == nil && err != nil || tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("error %v, want %v", err, tt.wantErr)
			}
			if !slices.Equal(n.asked, tt.asked) {
				t.Errorf("asked the node %q, want %q", n.asked, tt.asked)
			}
			if answered := 1 - len(tt.asked); f.Answered != answered || f.Asked != len(tt.asked) {
				t.Errorf("Answered %d, Asked %d; want %d and %d", f.Answered, f.Asked, answered, len(tt.asked))
			}
		})
	}
}

func equal(a, b any) bool {
	if as, ok := a.([]string); ok {
		bs, ok := b.([]string)
		return ok && (as == nil) == (bs == nil) && slices.Equal(as, bs)
	}
	return a == b
}

// TestAbsentErrorWording: a name recorded absent reads as the node's own
// error for it, which the GPU search's warnings quote.
func TestAbsentErrorWording(t *testing.T) {
	f := New(string(AppendRecord(nil, KindAbsent, "/nonexistent/gres.conf", nil)), gpu.Root("/"))
	_, recorded := f.AppendFile(nil, "/nonexistent/gres.conf")
	_, real := gpu.Root("/").AppendFile(nil, "/nonexistent/gres.conf")
	if recorded == nil || real == nil || recorded.Error() != real.Error() {
		t.Errorf("recorded absent: %v; the node: %v", recorded, real)
	}
	_, recorded = f.Stat("/nonexistent/gres.conf")
	_, real = gpu.Root("/").Stat("/nonexistent/gres.conf")
	if recorded == nil || real == nil || recorded.Error() != real.Error() {
		t.Errorf("stat recorded absent: %v; the node: %v", recorded, real)
	}
}

// TestUsable: without the task's answers, whether the task may use a
// device is the node's answer (the task's own helper asks in the task's
// cgroups), and reads no file, so it counts neither as answered nor as
// asked; a stalled step asks nothing.
func TestUsable(t *testing.T) {
	n := &node{}
	f := New(string(records()), n)
	if _, err := f.Usable("/dev/nvidia1"); !errors.Is(err, errNode) || !slices.Equal(n.asked, []string{"usable /dev/nvidia1"}) {
		t.Errorf("Usable: %v, asked %q", err, n.asked)
	}
	if f.Answered != 0 || f.Asked != 0 || f.Source() != "none" {
		t.Errorf("Answered %d, Asked %d, Source %q", f.Answered, f.Asked, f.Source())
	}
	n = &node{}
	if _, err := New(string(stalled()), n).Usable("/dev/nvidia1"); !errors.Is(err, ErrStalled) || len(n.asked) != 0 {
		t.Errorf("stalled Usable: %v, asked %q", err, n.asked)
	}
}

// minors returns the bits of the task's answers (contract.h,
// devices_asked and devices_usable) for the minors ns.
func minors(ns ...int) [4]uint64 {
	var w [4]uint64
	for _, n := range ns {
		w[n/64] |= 1 << (n % 64)
	}
	return w
}

// every is the task's answers with every bit set.
var every = [4]uint64{^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0)}

// TestTaskAnswers: with the task's own answers, Usable gives the answer
// for a /dev/nvidia<N> the task asked of, and ErrNoOracle for any other
// name (the GPU search then decides as without a device cgroup); the
// node is never asked, and no file is read, so nothing is counted; a
// stalled step still answers with its stall.
func TestTaskAnswers(t *testing.T) {
	tests := []struct {
		name          string
		records       []byte
		asked, usable [4]uint64
		device        string
		want          bool
		wantErr       error // errors.Is
	}{
		{name: "asked, usable", asked: minors(1, 3), usable: minors(1), device: "/dev/nvidia1", want: true},
		{name: "asked, not usable", asked: minors(1, 3), usable: minors(1), device: "/dev/nvidia3"},
		// The task asks of every /dev/nvidia<N> the records hold: one it
		// did not ask of has no device node.
		{name: "not asked: no device node, not usable", asked: minors(1, 3), usable: minors(1), device: "/dev/nvidia2"},
		{name: "not asked, though its usable bit is set", asked: minors(1), usable: minors(1, 2), device: "/dev/nvidia2"},
		{name: "nothing asked", device: "/dev/nvidia0"},
		{name: "minor 0", asked: minors(0), usable: minors(0), device: "/dev/nvidia0", want: true},
		{name: "minor 63, the first word's last bit", asked: minors(63), usable: minors(63), device: "/dev/nvidia63", want: true},
		{name: "minor 64, the second word's first bit", asked: minors(64), usable: minors(64), device: "/dev/nvidia64", want: true},
		{name: "minor 64 is not minor 0", asked: minors(0), usable: minors(0), device: "/dev/nvidia64"},
		{name: "minor 255, usable", asked: minors(255), usable: minors(255), device: "/dev/nvidia255", want: true},
		{name: "minor 255, not usable", asked: minors(255), device: "/dev/nvidia255"},
		{name: "minor 256 is past the answers", asked: every, usable: every, device: "/dev/nvidia256", wantErr: gpu.ErrNoOracle},
		{name: "minor 1000", asked: every, usable: every, device: "/dev/nvidia1000", wantErr: gpu.ErrNoOracle},
		{name: "a leading zero", asked: every, usable: every, device: "/dev/nvidia01", wantErr: gpu.ErrNoOracle},
		{name: "two zeros", asked: every, usable: every, device: "/dev/nvidia00", wantErr: gpu.ErrNoOracle},
		{name: "no minor", asked: every, usable: every, device: "/dev/nvidia", wantErr: gpu.ErrNoOracle},
		{name: "/dev/nvidiactl", asked: every, usable: every, device: "/dev/nvidiactl", wantErr: gpu.ErrNoOracle},
		{name: "/dev/nvidia-uvm", asked: every, usable: every, device: "/dev/nvidia-uvm", wantErr: gpu.ErrNoOracle},
		{name: "a sign", asked: every, usable: every, device: "/dev/nvidia+1", wantErr: gpu.ErrNoOracle},
		{name: "another directory", asked: every, usable: every, device: "/tmp/nvidia1", wantErr: gpu.ErrNoOracle},
		{name: "a path below", asked: every, usable: every, device: "/dev/nvidia1/x", wantErr: gpu.ErrNoOracle},
		{name: "stalled: the stall first", records: stalled(), asked: every, usable: every, device: "/dev/nvidia1", wantErr: ErrStalled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := &node{}
			f := New(string(tt.records), n)
			f.TaskAnswers(tt.asked, tt.usable)
			got, err := f.Usable(tt.device)
			if got != tt.want {
				t.Errorf("Usable(%s) = %v, want %v", tt.device, got, tt.want)
			}
			if tt.wantErr == nil && err != nil || tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("error %v, want %v", err, tt.wantErr)
			}
			if len(n.asked) != 0 {
				t.Errorf("asked the node %q", n.asked)
			}
			if tt.records == nil && (f.Answered != 0 || f.Asked != 0) {
				t.Errorf("Answered %d, Asked %d; want none", f.Answered, f.Asked)
			}
		})
	}
}

// TestStalledSearch: a GPU task of a step whose reading stalled gets no
// UUIDs and a warning naming the file that blocked, and the node is never
// asked (its read would block too).
func TestStalledSearch(t *testing.T) {
	n := &node{}
	f := New(string(stalled()), n)
	env := environ.List([]string{"CUDA_VISIBLE_DEVICES=0", "SLURM_STEP_GPUS=0", "SLURM_GPUS_ON_NODE=1",
		"SLURM_CONF=/etc/slurm/slurm.conf", "SLURMD_NODENAME=n1"})
	uuids, warns := gpu.Find(env, f)
	if uuids != nil || len(warns) != 1 || !strings.Contains(warns[0].Message, "reading /proc/driver/nvidia/gpus/0000:1b:00.0/information did not finish") {
		t.Errorf("got %q, %v", uuids, warns)
	}
	if len(n.asked) != 0 || f.Source() != "stalled" {
		t.Errorf("asked the node %q; source %q", n.asked, f.Source())
	}
}

func TestSource(t *testing.T) {
	tests := []struct {
		answered, asked int
		want            string
	}{
		{0, 0, "none"},
		{3, 0, "step"},
		{0, 2, "node"},
		{3, 1, "step+node"},
	}
	for _, tt := range tests {
		f := &FS{Answered: tt.answered, Asked: tt.asked}
		if got := f.Source(); got != tt.want {
			t.Errorf("Answered %d Asked %d: %q, want %q", tt.answered, tt.asked, got, tt.want)
		}
	}
}
