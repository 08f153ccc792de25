package detect

import (
	"maps"

	"github.com/spank-otel/spank-otel/libcarrier"
)

// ResourceOptions are the system queries of [Resource]; the zero value
// queries the real system.
type ResourceOptions struct {
	Local      LocalOptions      // for Local
	Kubernetes KubernetesOptions // for Kubernetes
}

// Resource returns the attributes of all detectors, merged in the order
// [Local], [Slurm], [Kubernetes]: on a collision the later source wins. The
// warnings are those of Slurm.
func Resource(env Env, opts ResourceOptions) (Attributes, []libcarrier.Warning) {
	out := Local(env, opts.Local)
	slurm, warns := Slurm(env)
	maps.Copy(out, slurm)
	maps.Copy(out, Kubernetes(env, opts.Kubernetes))
	return out, warns
}
