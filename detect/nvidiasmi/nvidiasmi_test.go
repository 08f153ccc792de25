package nvidiasmi_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/spank-otel/spank-otel/detect"
	"github.com/spank-otel/spank-otel/detect/nvidiasmi"
	"github.com/spank-otel/spank-otel/environ"
)

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

func TestCountGPUs(t *testing.T) {
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Fatal("the fake nvidia-smi needs /bin/sh:", err)
	}
	tests := []struct {
		name   string
		script string
		count  int
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
			n, ok := nvidiasmi.CountGPUs()
			if ok != tt.ok || n != tt.count {
				t.Errorf("CountGPUs = %d, %v; want %d, %v", n, ok, tt.count, tt.ok)
			}
		})
	}
}

// A set CUDA_VISIBLE_DEVICES wins: nvidia-smi is not asked.
func TestVisibleDevicesWin(t *testing.T) {
	fakeNvidiaSMI(t, "echo 'GPU 0: x'; echo 'GPU 1: y'\n")
	got := detect.Local(environ.Map{"CUDA_VISIBLE_DEVICES": ""}, detect.Options{CountGPUs: nvidiasmi.CountGPUs})
	if got["host.gpu.count"] != int64(0) {
		t.Errorf("host.gpu.count = %v, want 0", got["host.gpu.count"])
	}
}

func ExampleCountGPUs() {
	// Plug it into the local detector; without it, host.gpu.count comes
	// only from CUDA_VISIBLE_DEVICES.
	attrs := detect.Local(environ.Map{"CUDA_VISIBLE_DEVICES": "0,1"}, detect.Options{CountGPUs: nvidiasmi.CountGPUs})
	fmt.Println(attrs["host.gpu.count"])
	// Output: 2
}

// TestCountGPUsContext: the caller's deadline stops a hanging nvidia-smi
// long before Timeout.
func TestCountGPUsContext(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatal(err)
	}
	fakeNvidiaSMI(t, "exec "+sleep+" 30\n")
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	n, ok := nvidiasmi.CountGPUsContext(ctx)
	if ok || n != 0 {
		t.Errorf("CountGPUsContext = %d, %v; want 0, false", n, ok)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v: the caller's deadline was ignored", d)
	}
}
