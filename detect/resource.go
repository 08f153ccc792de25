package detect

import (
	"maps"

	"github.com/spank-otel/spank-otel/detect/slurm"
	"github.com/spank-otel/spank-otel/libcarrier"
)

// ResourceOptions are the system queries of [Resource]; the zero value
// queries the real system.
type ResourceOptions struct {
	Local      LocalOptions      // for Local
	Kubernetes KubernetesOptions // for Kubernetes
}

// Resource returns the attributes of all detectors, merged in the order
// [Local], Slurm ([slurm.Detect]), [Kubernetes]: on a collision the later
// source wins. The warnings are those of the Slurm detector.
func Resource(env Env, opts ResourceOptions) (Attributes, []libcarrier.Warning) {
	out := Local(env, opts.Local)
	identity, warns := slurm.Detect(env)
	maps.Copy(out, identity)
	maps.Copy(out, Kubernetes(env, opts.Kubernetes))
	return out, warns
}
