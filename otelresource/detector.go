package otelresource

import (
	"context"
	"math"
	"slices"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/spank-otel/spank-otel/detect"
	"github.com/spank-otel/spank-otel/detect/nvidiasmi"
	"github.com/spank-otel/spank-otel/environ"
	"github.com/spank-otel/spank-otel/libcarrier"
)

// Detector is a resource.Detector that runs [detect.Resource] (local, then
// Slurm, then Kubernetes attributes) on the environment it was given, never
// on the process environment.
type Detector struct {
	env  environ.Env
	opts detect.Options
	// countGPUs counts with nvidia-smi under the context of Detect, when
	// the options have no counter of their own.
	countGPUs func(context.Context) (int, bool)
}

var _ resource.Detector = (*Detector)(nil)

// DetectorOption configures a [Detector].
type DetectorOption func(*Detector)

// WithDetectOptions sets the options of the detectors: how GPUs are
// counted when CUDA_VISIBLE_DEVICES is unset. By default nvidia-smi counts
// them, within the context of Detect.
func WithDetectOptions(opts detect.Options) DetectorOption {
	return func(d *Detector) { d.opts = opts }
}

// NewDetector returns a Detector over env. A nil env is an empty
// environment: only the local attributes are detected then. Pass
// environ.List(os.Environ()) to read the process environment.
func NewDetector(env environ.Env, opts ...DetectorOption) *Detector {
	if env == nil {
		env = environ.Map{}
	}
	d := &Detector{env: env}
	for _, o := range opts {
		o(d)
	}
	if d.opts.CountGPUs == nil {
		// Without CUDA_VISIBLE_DEVICES, a Go program asks nvidia-smi.
		d.countGPUs = nvidiasmi.CountGPUsContext
	}
	return d
}

// Detect returns the detected attributes as a schemaless resource: the
// int64 values of detect (process.pid, slurm.nnodes ...) as attribute.Int64,
// the others as attribute.String.
//
// When a value had to be left out (an inherited or local integer that is not
// an integer), the resource holds everything else and the error is a
// *PartialError, which matches resource.ErrPartialResource: resource.New and
// resource.Detect keep such a resource and return the error.
func (d *Detector) Detect(ctx context.Context) (*resource.Resource, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	opts := d.opts
	if d.countGPUs != nil {
		// nvidia-smi can hang; the caller's deadline bounds it.
		opts.CountGPUs = func() (int, bool) { return d.countGPUs(ctx) }
	}
	attrs, warns := detect.Resource(d.env, opts)
	res := resource.NewSchemaless(KeyValues(attrs)...)
	if len(warns) > 0 {
		return res, &PartialError{Warnings: warns}
	}
	return res, nil
}

// PartialError reports the values a [Detector] left out of its resource.
// errors.Is(err, resource.ErrPartialResource) is true for it.
type PartialError struct {
	Warnings []libcarrier.Warning
}

// Error lists the warnings after the text of resource.ErrPartialResource.
func (e *PartialError) Error() string {
	var b strings.Builder
	b.WriteString(resource.ErrPartialResource.Error())
	for i, w := range e.Warnings {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString("; ")
		}
		b.WriteString(w.String())
	}
	return b.String()
}

// Unwrap returns resource.ErrPartialResource.
func (e *PartialError) Unwrap() error { return resource.ErrPartialResource }

// KeyValues converts attributes to OpenTelemetry key-values, sorted by key:
// string values become attribute.String, int64 values attribute.Int64. The
// other Go scalar types (bool, floats, other integers) are converted too; a
// value of any other type, or an unsigned one beyond the int64 range, is left
// out. detect never produces those.
func KeyValues(attrs detect.Attributes) []attribute.KeyValue {
	kvs := make([]attribute.KeyValue, 0, len(attrs))
	for k, v := range attrs {
		if kv, ok := keyValue(k, v); ok {
			kvs = append(kvs, kv)
		}
	}
	sortKeyValues(kvs)
	return kvs
}

func sortKeyValues(kvs []attribute.KeyValue) {
	slices.SortFunc(kvs, func(a, b attribute.KeyValue) int { return strings.Compare(string(a.Key), string(b.Key)) })
}

// keyValue converts one scalar value; ok is false for any other type.
func keyValue(k string, v any) (kv attribute.KeyValue, ok bool) {
	switch v := v.(type) {
	case string:
		return attribute.String(k, v), true
	case bool:
		return attribute.Bool(k, v), true
	case float64:
		return attribute.Float64(k, v), true
	case float32:
		return attribute.Float64(k, float64(v)), true
	}
	for _, try := range [...]func(any) (int64, bool){
		asInt64[int64], asInt64[int], asInt64[int32], asInt64[int16], asInt64[int8],
		asInt64[uint], asInt64[uint64], asInt64[uint32], asInt64[uint16], asInt64[uint8],
	} {
		if n, ok := try(v); ok {
			return attribute.Int64(k, n), true
		}
	}
	return attribute.KeyValue{}, false
}

// asInt64 returns v as an int64 if it holds a T within the int64 range.
func asInt64[T int | int8 | int16 | int32 | int64 | uint | uint8 | uint16 | uint32 | uint64](v any) (int64, bool) {
	n, ok := v.(T)
	if !ok || n > 0 && uint64(n) > math.MaxInt64 {
		return 0, false
	}
	return int64(n), true
}
