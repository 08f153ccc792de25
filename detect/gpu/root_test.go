package gpu

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
)

func TestRootAppendFile(t *testing.T) {
	root := Root("testdata/node/")
	got, err := root.AppendFile([]byte("kept:"), "/etc/slurm/gres.conf")
	if err != nil || string(got) != "kept:Name=gpu File=/dev/nvidia0\n" {
		t.Errorf("AppendFile = %q, %v", got, err)
	}
	if got, err := root.AppendFile([]byte("kept"), "/etc/slurm/cgroup.conf"); !errors.Is(err, ErrNotExist) || string(got) != "kept" {
		t.Errorf("AppendFile of a missing file: %q, %v, want the buffer as it was and ErrNotExist", got, err)
	}
	if _, err := root.AppendFile(nil, "/etc/slurm"); err == nil || errors.Is(err, ErrNotExist) {
		t.Errorf("AppendFile of a directory: %v, want an error that is not ErrNotExist", err)
	}
	// A file larger than the buffer's first size, from /proc (size 0).
	self, err := Root("/").AppendFile(make([]byte, 0, 16), "/proc/self/maps")
	if err != nil || len(self) < 1000 {
		t.Errorf("AppendFile(/proc/self/maps) = %d bytes, %v", len(self), err)
	}
	big := filepath.Join(t.TempDir(), "big")
	want := make([]byte, 10000)
	for i := range want {
		want[i] = byte('a' + i%26)
	}
	if err := os.WriteFile(big, want, 0o600); err != nil {
		t.Fatal(err)
	}
	// Into a buffer too small, and into one with room to spare.
	for _, dst := range [][]byte{[]byte("x"), make([]byte, 1, 20000)} {
		if got, err := Root("/").AppendFile(dst, big); err != nil || string(got) != string(dst[:1])+string(want) {
			t.Errorf("AppendFile of 10000 bytes after %d: %d bytes, %v", len(dst), len(got), err)
		}
	}
}

func TestRootReadDir(t *testing.T) {
	got, err := Root("testdata/node").ReadDir("/proc/driver/nvidia/gpus")
	if err != nil || !slices.Equal(got, []string{"0000:1b:00.0"}) {
		t.Errorf("ReadDir = %q, %v", got, err)
	}
	if _, err := Root("testdata/node").ReadDir("/proc/driver/nvidia/none"); !errors.Is(err, ErrNotExist) {
		t.Errorf("ReadDir of a missing directory: %v, want ErrNotExist", err)
	}
	// More entries than one getdents buffer holds.
	dir := t.TempDir()
	for i := range 300 {
		name := filepath.Join(dir, "entry-with-a-long-name-to-fill-the-buffer-"+string(rune('a'+i%26))+string(rune('a'+i/26)))
		if err := os.WriteFile(name, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	names, err := Root("/").ReadDir(dir)
	if err != nil || len(names) != 300 {
		t.Errorf("ReadDir of 300 entries: %d, %v", len(names), err)
	}
}

func TestRootStat(t *testing.T) {
	// /dev/null is character device 1:3 on every Linux machine.
	st, err := Root("/").Stat("/dev/null")
	if err != nil || st != (Stat{CharDevice: true, Major: 1, Minor: 3}) {
		t.Errorf("Stat(/dev/null) = %+v, %v", st, err)
	}
	st, err = Root("testdata/node").Stat("/etc/slurm/gres.conf")
	if err != nil || st != (Stat{}) {
		t.Errorf("Stat of a regular file = %+v, %v", st, err)
	}
	if _, err := Root("testdata/node").Stat("/dev/nvidia0"); !errors.Is(err, ErrNotExist) {
		t.Errorf("Stat of a missing node: %v, want ErrNotExist", err)
	}
	var e *PathError
	if _, err := Root("testdata/node").Stat("/dev/nvidia0"); !errors.As(err, &e) || !errors.Is(err, syscall.ENOENT) {
		t.Errorf("Stat error %v does not wrap ENOENT", err)
	}
}

func TestDevNumbers(t *testing.T) {
	tests := []struct {
		dev          uint64
		major, minor uint32
	}{
		{0xc300, 195, 0},   // /dev/nvidia0 as the kernel packs it
		{0xc307, 195, 7},   // /dev/nvidia7
		{0xc3ff, 195, 255}, // /dev/nvidia255
		{0x10c300, 195, 256},
		{0x103, 1, 3},
		{0x10000000_00000000 | 0xc300, 0x10000000 | 195, 0},
	}
	for _, tt := range tests {
		if ma, mi := devMajor(tt.dev), devMinor(tt.dev); ma != tt.major || mi != tt.minor {
			t.Errorf("dev %#x = %d:%d, want %d:%d", tt.dev, ma, mi, tt.major, tt.minor)
		}
	}
}

// TestFindOnRoot reads a node's files from a directory, as spank-otel
// task-env --root does, but for the device node, which only root can make:
// the answer is then nothing, for the right reason.
func TestFindOnRoot(t *testing.T) {
	_, warns := Find(gpuTask("0", "0", "1"), Root("testdata/node"))
	if len(warns) != 1 || warns[0].Message != "no GPU UUIDs: stat testdata/node/dev/nvidia0: no such file or directory" {
		t.Errorf("warnings %v", warns)
	}
}
