package detect

import (
	"maps"

	"github.com/spank-otel/spank-otel/detect/slurm"
	"github.com/spank-otel/spank-otel/environ"
	"github.com/spank-otel/spank-otel/libcarrier"
)

// Resource returns the attributes of all detectors, merged in the order
// [Local], Slurm ([slurm.Detect]), [Kubernetes]: on a collision the later
// source wins. The warnings are those of the Slurm detector.
func Resource(env environ.Env, opts Options) (Attributes, []libcarrier.Warning) {
	out := Local(env, opts)
	identity, warns := slurm.Detect(env)
	maps.Copy(out, identity)
	maps.Copy(out, Kubernetes(env))
	return out, warns
}
