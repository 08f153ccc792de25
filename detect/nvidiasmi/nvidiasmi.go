// Package nvidiasmi counts a host's GPUs with `nvidia-smi -L`.
//
// It is the one place where detection runs a program, kept out of package
// detect so that the per-task library, which never needs it, does not link
// os/exec: every package linked into libspankotel.so adds to its load time
// in every task.
package nvidiasmi

import (
	"bytes"
	"context"
	"os/exec"
	"time"
)

// Timeout bounds the wait for nvidia-smi, which can hang on a GPU in a bad
// state; detection must not.
const Timeout = 10 * time.Second

// CountGPUs counts the GPUs that `nvidia-smi -L` lists, with nvidia-smi
// found on the process PATH. It reports false when nvidia-smi is not there,
// fails or times out. Its signature fits detect.Options.CountGPUs.
func CountGPUs() (int, bool) {
	return CountGPUsContext(context.Background())
}

// CountGPUsContext is [CountGPUs] bounded by ctx as well as by Timeout: a
// caller's deadline or cancellation stops nvidia-smi too.
func CountGPUsContext(ctx context.Context) (int, bool) {
	path, err := exec.LookPath("nvidia-smi")
	if err != nil {
		return 0, false
	}
	ctx, cancel := context.WithTimeout(ctx, Timeout)
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
