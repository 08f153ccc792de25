package detect

import (
	"strings"

	"github.com/spank-otel/spank-otel/environ"
)

// Options are what a caller decides about detection. The zero value runs
// no program.
type Options struct {
	// CountGPUs returns host.gpu.count when CUDA_VISIBLE_DEVICES is unset,
	// and false when it cannot tell, which leaves host.gpu.count out.
	// nvidiasmi.CountGPUs counts with `nvidia-smi -L`; nil leaves the
	// attribute out, so this package never runs a program by itself.
	CountGPUs func() (int, bool)
}

// Local returns the attributes of the process itself: host.name,
// process.pid and host.gpu.count. A host name that cannot be read, or is
// empty, is left out.
//
// host.gpu.count is the number of entries in env's CUDA_VISIBLE_DEVICES
// (comma-separated; blank entries are not devices, so "" counts 0). When that
// variable is unset the GPUs are counted by opts.CountGPUs (package
// nvidiasmi has one); without a counter, or when it cannot tell, the
// attribute is omitted.
func Local(env environ.Env, opts Options) Attributes {
	out := make(Attributes, 3)
	if name, err := hostname(); err == nil && name != "" {
		out["host.name"] = name
	}
	out["process.pid"] = int64(getpid())

	if devices, ok := env.Lookup("CUDA_VISIBLE_DEVICES"); ok {
		out["host.gpu.count"] = int64(countDevices(devices))
	} else if opts.CountGPUs != nil {
		if n, ok := opts.CountGPUs(); ok {
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
