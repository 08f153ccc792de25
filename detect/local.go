package detect

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"time"
)

// LocalOptions are the system queries of [Local]. The zero value queries the
// real system; tests replace them so that they need neither a GPU nor a
// particular host.
type LocalOptions struct {
	// Hostname returns host.name; nil means os.Hostname. An error or an
	// empty name leaves host.name out.
	Hostname func() (string, error)
	// PID is process.pid; 0 means os.Getpid().
	PID int
	// CountGPUs returns host.gpu.count when CUDA_VISIBLE_DEVICES is unset,
	// and false when it cannot tell, which leaves host.gpu.count out. nil
	// means counting the GPUs listed by `nvidia-smi -L`.
	CountGPUs func() (int, bool)
}

// Local returns the attributes of the process itself: host.name,
// process.pid and host.gpu.count.
//
// host.gpu.count is the number of entries in env's CUDA_VISIBLE_DEVICES
// (comma-separated; blank entries are not devices, so "" counts 0). When that
// variable is unset the GPUs are counted by opts.CountGPUs, by default with
// `nvidia-smi -L`, found on the PATH of the process (not env's PATH: the
// command runs in this process's context); when that is not possible the
// attribute is omitted.
func Local(env Env, opts LocalOptions) Attributes {
	out := make(Attributes, 3)

	hostname := opts.Hostname
	if hostname == nil {
		hostname = os.Hostname
	}
	if name, err := hostname(); err == nil && name != "" {
		out["host.name"] = name
	}

	pid := opts.PID
	if pid == 0 {
		pid = os.Getpid()
	}
	out["process.pid"] = int64(pid)

	if devices, ok := env.Lookup("CUDA_VISIBLE_DEVICES"); ok {
		out["host.gpu.count"] = int64(countDevices(devices))
	} else {
		count := opts.CountGPUs
		if count == nil {
			count = countNvidiaSMI
		}
		if n, ok := count(); ok {
			out["host.gpu.count"] = int64(n)
		}
	}
	return out
}

// countDevices counts the non-blank entries of a CUDA_VISIBLE_DEVICES list.
func countDevices(list string) int {
	n := 0
	for entry := range strings.SplitSeq(list, ",") {
		if strings.TrimSpace(entry) != "" {
			n++
		}
	}
	return n
}

// nvidiaSMITimeout bounds the wait for nvidia-smi, which can hang on a GPU
// in a bad state; detection must not.
const nvidiaSMITimeout = 10 * time.Second

// countNvidiaSMI counts the GPUs that `nvidia-smi -L` lists. It reports false
// when nvidia-smi is not on the PATH, fails or times out.
func countNvidiaSMI() (int, bool) {
	path, err := exec.LookPath("nvidia-smi")
	if err != nil {
		return 0, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), nvidiaSMITimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "-L").Output()
	if err != nil {
		return 0, false
	}
	return countGPULines(out), true
}

// countGPULines counts the lines of `nvidia-smi -L` output that describe a
// GPU ("GPU 0: <model> (UUID: ...)"). The indented lines that list MIG
// devices under a GPU are not counted: they are parts of that GPU.
func countGPULines(out []byte) int {
	n := 0
	for line := range bytes.Lines(out) {
		if bytes.HasPrefix(line, []byte("GPU ")) {
			n++
		}
	}
	return n
}
