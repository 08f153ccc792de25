package otelresource

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/attribute"

	"github.com/spank-otel/spank-otel/detect/slurm"
	"github.com/spank-otel/spank-otel/environ"
	"github.com/spank-otel/spank-otel/internal/keys"
	"github.com/spank-otel/spank-otel/libcarrier"
)

// Keys of the default attributes.
const (
	KeyServiceName       = "service.name"
	KeyServiceVersion    = "service.version"
	KeyServiceInstanceID = "service.instance.id"
	KeyRunID             = "nemo.run.id"
	KeyUserID            = "nemo.user.id"
	KeyDeploymentEnv     = "deployment.environment"
	KeyRank              = keys.DLRank // the Slurm detector's rank key
)

// DefaultServiceName is service.name when nothing else names the service.
const DefaultServiceName = "nemo"

// Options are the inputs of [DefaultAttributes]. Every field is optional.
type Options struct {
	// Env is the environment OTEL_RESOURCE_ATTRIBUTES, OTEL_SERVICE_NAME, SLURM_JOB_ID,
	// DEPLOYMENT_ENV and ENVIRONMENT are read from; nil is an empty
	// environment. Pass environ.List(os.Environ()) for the process's own.
	Env environ.Env
	// ServiceName, ServiceVersion, ServiceInstanceID, RunID and User set
	// service.name, service.version, service.instance.id, nemo.run.id and
	// nemo.user.id, ahead of every other source.
	ServiceName       string
	ServiceVersion    string
	ServiceInstanceID string
	RunID             string
	User              string
	// Attributes are the caller's resource attributes, such as nv.dl.rank
	// and nv.dl.world_size. They win over those inherited through
	// OTEL_RESOURCE_ATTRIBUTES; a nil value removes an inherited key.
	// Values may be strings, bools, integers or floats.
	Attributes map[string]any
	// NewRunID returns nemo.run.id when no run id is given; nil means a
	// random (version 4) UUID.
	NewRunID func() string
}

// DefaultAttributes returns the attributes of a telemetry setup, sorted by
// key, and warnings about the values it dropped, converted or could not
// derive.
//
// The result holds the attributes inherited through Env's
// OTEL_RESOURCE_ATTRIBUTES, except the Slurm keys that [Detector] reads
// (see [slurm.IsKey]), replaced by opts.Attributes, with the integer
// keys of the specification (nv.dl.rank, slurm.nnodes ...; see
// [libcarrier.IsIntegerKey]) as int64 values (see [libcarrier.Typed] for
// invalid ones), plus these defaults. Each takes the first value found in
// the sources listed, where "given" means opts.Attributes, then the
// inherited attributes:
//
//   - service.name: opts.ServiceName, given (opts.Attributes only),
//     OTEL_SERVICE_NAME, inherited, then "nemo";
//   - service.version: opts.ServiceVersion, given;
//   - nemo.run.id: opts.RunID, given, then opts.NewRunID();
//   - nemo.user.id: opts.User, given;
//   - deployment.environment: opts.Attributes, DEPLOYMENT_ENV, ENVIRONMENT,
//     inherited; inside a Slurm job (SLURM_JOB_ID set) ENVIRONMENT=BATCH is
//     Slurm's mark of the batch script and does not count;
//   - service.instance.id: opts.ServiceInstanceID, given, else
//     "<nemo.run.id>-rank<nv.dl.rank>" when nv.dl.rank is given as an
//     integer; else it is left to the SDK.
//
// The rank is never taken from RANK, WORLD_SIZE or SLURM_PROCID, which need
// not be the caller's rank. When it is missing or empty, and no instance id
// is given, the warnings include exactly one for nv.dl.rank: telemetry of
// this process cannot be filtered by rank.
//
// Entries of the carrier that cannot be parsed are reported as warnings
// too; DefaultAttributes reads the whole carrier.
func DefaultAttributes(opts Options) ([]attribute.KeyValue, []libcarrier.Warning) {
	env := opts.Env
	if env == nil {
		env = environ.Map{}
	}
	var warns []libcarrier.Warning

	var inherited map[string]any
	if text, _ := env.Lookup(libcarrier.EnvVar); text != "" {
		parsed, w := libcarrier.Parse(text)
		warns = append(warns, w...)
		// The Slurm detector owns the allowlisted keys: it reads them with
		// its own rules and its values are authoritative.
		maps.DeleteFunc(parsed, func(k, _ string) bool { return slurm.IsKey(k) })
		inherited, w = libcarrier.Typed(parsed)
		warns = append(warns, w...)
	}
	caller, w := typedAttributes(opts.Attributes)
	warns = append(warns, w...)

	// given is the inherited attributes replaced by the caller's.
	given := make(map[string]any, len(inherited)+len(caller)+7)
	maps.Copy(given, inherited)
	for k, v := range caller {
		if v == nil {
			delete(given, k)
		} else {
			given[k] = v
		}
	}
	out := maps.Clone(given)

	// pick returns the first present value of: explicit, the caller's value
	// of key, fromEnv, the given value of key (the inherited one unless the
	// caller removed it); nil when there is none.
	pick := func(key, explicit, fromEnv string) any {
		if explicit != "" {
			return explicit
		}
		if v := caller[key]; present(v) {
			return v
		}
		if fromEnv != "" {
			return fromEnv
		}
		if v := given[key]; present(v) {
			return v
		}
		return nil
	}
	set := func(key string, v any) {
		if v != nil {
			out[key] = v
		}
	}

	serviceName := pick(KeyServiceName, opts.ServiceName, strings.TrimSpace(lookup(env, "OTEL_SERVICE_NAME")))
	if serviceName == nil {
		serviceName = DefaultServiceName
	}
	set(KeyServiceName, serviceName)
	set(KeyServiceVersion, pick(KeyServiceVersion, opts.ServiceVersion, ""))
	set(KeyUserID, pick(KeyUserID, opts.User, ""))
	deployment := lookup(env, "DEPLOYMENT_ENV")
	if deployment == "" {
		deployment = lookup(env, "ENVIRONMENT")
		// Slurm sets ENVIRONMENT=BATCH in the batch script, and its steps
		// inherit it: inside a job it names no deployment.
		if deployment == "BATCH" && lookup(env, "SLURM_JOB_ID") != "" {
			deployment = ""
		}
	}
	set(KeyDeploymentEnv, pick(KeyDeploymentEnv, "", deployment))

	runID := pick(KeyRunID, opts.RunID, "")
	if runID == nil {
		newRunID := opts.NewRunID
		if newRunID == nil {
			newRunID = uuid.NewString
		}
		runID = newRunID()
	}
	set(KeyRunID, runID)

	if id := pick(KeyServiceInstanceID, opts.ServiceInstanceID, ""); id != nil {
		set(KeyServiceInstanceID, id)
	} else {
		switch rank := given[KeyRank].(type) {
		case int64:
			set(KeyServiceInstanceID, fmt.Sprint(runID)+"-rank"+strconv.FormatInt(rank, 10))
		case string:
			if rank == "" {
				// An empty rank is a missing one, reported once: not
				// also as a value that is not an integer.
				warns = slices.DeleteFunc(warns, func(w libcarrier.Warning) bool { return w.Key == KeyRank })
				warns = append(warns, missingRank)
			}
			// Otherwise Typed has already said that it is not an integer.
		case nil:
			warns = append(warns, missingRank)
		default:
			warns = append(warns, libcarrier.Warning{Key: KeyRank,
				Message: fmt.Sprintf("value of type %T is not an integer: service.instance.id is left to the SDK", rank)})
		}
	}

	kvs := make([]attribute.KeyValue, 0, len(out))
	for k, v := range out {
		kv, _ := keyValue(k, v) // typedAttributes and Typed keep scalars only
		kvs = append(kvs, kv)
	}
	sortKeyValues(kvs)
	return kvs, warns
}

// missingRank is the warning about a missing nv.dl.rank.
var missingRank = libcarrier.Warning{Key: KeyRank,
	Message: "not supplied (it is never taken from RANK, WORLD_SIZE or SLURM_PROCID): " +
		"telemetry cannot be filtered by rank and service.instance.id is left to the SDK"}

func present(v any) bool {
	return v != nil && v != ""
}

func lookup(env environ.Env, name string) string {
	v, _ := env.Lookup(name)
	return v
}

// typedAttributes returns the caller's attributes with string values typed
// like inherited ones (libcarrier.Typed), integers as int64, floats as
// float64, and nil kept as the mark of a removed key. Values of other types
// and empty keys are dropped with a warning.
func typedAttributes(attrs map[string]any) (map[string]any, []libcarrier.Warning) {
	out := make(map[string]any, len(attrs))
	var strs map[string]string
	var warns []libcarrier.Warning
	for k, v := range attrs {
		if k == "" {
			warns = append(warns, libcarrier.Warning{Message: "attribute with an empty key: dropped"})
			continue
		}
		switch v := v.(type) {
		case nil:
			out[k] = nil
		case string:
			if strs == nil {
				strs = make(map[string]string)
			}
			strs[k] = v
		default:
			kv, ok := keyValue(k, v)
			if !ok {
				warns = append(warns, libcarrier.Warning{Key: k, Message: fmt.Sprintf("value of type %T is not supported: dropped", v)})
				continue
			}
			out[k] = kv.Value.AsInterface()
		}
	}
	typed, w := libcarrier.Typed(strs)
	maps.Copy(out, typed)
	warns = append(warns, w...)
	slices.SortStableFunc(warns, func(a, b libcarrier.Warning) int { return strings.Compare(a.Key, b.Key) })
	return out, warns
}
