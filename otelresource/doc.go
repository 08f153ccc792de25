// Package otelresource connects the detectors of package detect to the
// OpenTelemetry Go SDK.
//
// [Detector] is a resource.Detector that runs [detect.Resource] on an
// environment it is given. [DefaultAttributes] returns the default
// attributes of a telemetry setup (service.*, nemo.*, deployment.environment)
// together with the caller's attributes and those inherited through
// OTEL_RESOURCE_ATTRIBUTES (but for the Slurm keys, which the detector owns),
// with the integer keys of the specification as int64 values:
//
//	env := environ.List(os.Environ())
//	defaults, warnings := otelresource.DefaultAttributes(otelresource.Options{Env: env, ServiceVersion: version})
//	res, err := resource.New(ctx,
//		resource.WithAttributes(defaults...),
//		resource.WithDetectors(otelresource.NewDetector(env)),
//	)
//
// Put the detector after the attributes: for the Slurm keys the detector's
// values are authoritative. If resource.WithFromEnv is used too, put it
// first, or it replaces the typed values with the strings of the carrier.
//
// The package is a module of its own, github.com/spank-otel/spank-otel/otelresource,
// so that the module of the plugin and of the other packages does not
// depend on the SDK.
package otelresource
