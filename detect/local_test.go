package detect

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestLocal(t *testing.T) {
	host := func() (string, error) { return "c1", nil }
	threeGPUs := func() (int, bool) { return 3, true }
	noGPUs := func() (int, bool) { return 0, false }
	tests := []struct {
		name string
		env  EnvMap
		opts LocalOptions
		want Attributes
	}{
		{"devices listed", EnvMap{"CUDA_VISIBLE_DEVICES": "0,1,2"}, LocalOptions{Hostname: host, PID: 42, CountGPUs: noGPUs},
			Attributes{"host.name": "c1", "process.pid": int64(42), "host.gpu.count": int64(3)}},
		{"one device", EnvMap{"CUDA_VISIBLE_DEVICES": "GPU-8c2f9b1e-0000-0000-0000-000000000000"}, LocalOptions{Hostname: host, PID: 42, CountGPUs: threeGPUs},
			Attributes{"host.name": "c1", "process.pid": int64(42), "host.gpu.count": int64(1)}},
		{"empty list is 0, not a query", EnvMap{"CUDA_VISIBLE_DEVICES": ""}, LocalOptions{Hostname: host, PID: 42, CountGPUs: threeGPUs},
			Attributes{"host.name": "c1", "process.pid": int64(42), "host.gpu.count": int64(0)}},
		{"blank entries are not devices", EnvMap{"CUDA_VISIBLE_DEVICES": "0,,1, "}, LocalOptions{Hostname: host, PID: 42, CountGPUs: threeGPUs},
			Attributes{"host.name": "c1", "process.pid": int64(42), "host.gpu.count": int64(2)}},
		{"unset list asks CountGPUs", EnvMap{}, LocalOptions{Hostname: host, PID: 42, CountGPUs: threeGPUs},
			Attributes{"host.name": "c1", "process.pid": int64(42), "host.gpu.count": int64(3)}},
		{"no count is omitted", EnvMap{}, LocalOptions{Hostname: host, PID: 42, CountGPUs: noGPUs},
			Attributes{"host.name": "c1", "process.pid": int64(42)}},
		{"hostname error is omitted", EnvMap{}, LocalOptions{Hostname: func() (string, error) { return "", errors.New("no") }, PID: 7, CountGPUs: noGPUs},
			Attributes{"process.pid": int64(7)}},
		{"empty hostname is omitted", EnvMap{}, LocalOptions{Hostname: func() (string, error) { return "", nil }, PID: 7, CountGPUs: noGPUs},
			Attributes{"process.pid": int64(7)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Local(tt.env, tt.opts); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Local = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestLocalDefaults(t *testing.T) {
	got := Local(EnvMap{"CUDA_VISIBLE_DEVICES": "0"}, LocalOptions{})
	name, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	want := Attributes{"host.name": name, "process.pid": int64(os.Getpid()), "host.gpu.count": int64(1)}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Local = %v, want %v", got, want)
	}
}

// fakeNvidiaSMI puts an nvidia-smi script on the process PATH, alone.
func fakeNvidiaSMI(t *testing.T, script string) {
	dir := t.TempDir()
	if script != "" {
		if err := os.WriteFile(filepath.Join(dir, "nvidia-smi"), []byte("#!/bin/sh\n"+script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", dir)
}

// The default GPU count runs `nvidia-smi -L` from the process PATH.
func TestLocalNvidiaSMI(t *testing.T) {
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Fatal("the fake nvidia-smi needs /bin/sh:", err)
	}
	tests := []struct {
		name   string
		script string
		count  int64
		ok     bool
	}{
		{"two GPUs", `[ "$1" = -L ] || exit 2
echo "GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-0b5c2a52-7f71-44e4-a2b8-1d5bb2b5a0a1)"
echo "GPU 1: NVIDIA A100-SXM4-80GB (UUID: GPU-9d1e4f3c-2a8b-4c6d-8e0f-1a2b3c4d5e6f)"
`, 2, true},
		{"MIG devices are parts of their GPU", `echo "GPU 0: NVIDIA A100-SXM4-40GB (UUID: GPU-0b5c2a52-7f71-44e4-a2b8-1d5bb2b5a0a1)"
echo "  MIG 3g.20gb     Device  0: (UUID: MIG-5c8e6b9a-1111-2222-3333-444455556666)"
echo "  MIG 3g.20gb     Device  1: (UUID: MIG-5c8e6b9a-7777-8888-9999-aaaabbbbcccc)"
`, 1, true},
		{"no output", "exit 0\n", 0, true},
		{"failure", "echo 'NVIDIA-SMI has failed'; exit 9\n", 0, false},
		{"not on PATH", "", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fakeNvidiaSMI(t, tt.script)
			got := Local(EnvMap{}, LocalOptions{Hostname: func() (string, error) { return "h", nil }, PID: 1})
			n, ok := got["host.gpu.count"]
			if ok != tt.ok || (ok && n != tt.count) {
				t.Errorf("host.gpu.count = %v (present %v), want %v (present %v)", n, ok, tt.count, tt.ok)
			}
		})
	}
}

func TestLocalSetListSkipsNvidiaSMI(t *testing.T) {
	fakeNvidiaSMI(t, "echo 'GPU 0: x'; echo 'GPU 1: y'\n")
	got := Local(EnvMap{"CUDA_VISIBLE_DEVICES": ""}, LocalOptions{PID: 1})
	if got["host.gpu.count"] != int64(0) {
		t.Errorf("host.gpu.count = %v, want 0", got["host.gpu.count"])
	}
}
