package detect

import (
	"os"
	"strings"
)

// LocalOptions are the system queries of [Local]. The zero value asks the
// real system for the host name and process id and counts no GPUs beyond
// CUDA_VISIBLE_DEVICES; tests replace the queries so that they need neither
// a GPU nor a particular host.
type LocalOptions struct {
	// Hostname returns host.name; nil means os.Hostname. An error or an
	// empty name leaves host.name out.
	Hostname func() (string, error)
	// PID is process.pid; 0 means os.Getpid().
	PID int
	// CountGPUs returns host.gpu.count when CUDA_VISIBLE_DEVICES is unset,
	// and false when it cannot tell, which leaves host.gpu.count out.
	// nvidiasmi.CountGPUs counts with `nvidia-smi -L`; nil leaves the
	// attribute out, so this package never runs a program by itself.
	CountGPUs func() (int, bool)
}

// Local returns the attributes of the process itself: host.name,
// process.pid and host.gpu.count.
//
// host.gpu.count is the number of entries in env's CUDA_VISIBLE_DEVICES
// (comma-separated; blank entries are not devices, so "" counts 0). When that
// variable is unset the GPUs are counted by opts.CountGPUs (package
// nvidiasmi has one); without a counter, or when it cannot tell, the
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
		if opts.CountGPUs != nil {
			if n, ok := opts.CountGPUs(); ok {
				out["host.gpu.count"] = int64(n)
			}
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
