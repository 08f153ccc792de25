// Command otel-probe-go sends one span named by its first argument through
// the OpenTelemetry Go SDK and its OTLP/HTTP exporter, then exits. The
// exporter reads OTEL_EXPORTER_OTLP_ENDPOINT; the Resource is the SDK's
// default, which reads OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME. The
// probe sets no attribute of its own. The cluster tests run it as a Slurm
// task and look for its span in Jaeger.
//
// It is a module of its own so that the project's module does not depend on
// the exporter.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

func main() {
	if len(os.Args) != 2 || os.Args[1] == "" {
		fmt.Fprintln(os.Stderr, "usage: otel-probe-go SPAN-NAME")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "otel-probe-go:", err)
		os.Exit(1)
	}
}

func run(name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// A span exporter's errors reach only the global handler.
	var exportErr error
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { exportErr = err }))
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return err
	}
	// The syncer exports when the span ends: nothing is left to flush.
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	_, span := tp.Tracer("otel-probe-go").Start(ctx, name)
	span.End()
	if err := tp.Shutdown(ctx); err != nil {
		return err
	}
	if exportErr != nil {
		return fmt.Errorf("export failed: %w", exportErr)
	}
	return nil
}
