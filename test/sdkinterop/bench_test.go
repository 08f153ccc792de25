package sdkinterop_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/spank-otel/spank-otel/libcarrier"
	"github.com/spank-otel/spank-otel/libcarrier/carriertest"
)

// benchCarrier is the carrier of libcarrier's BenchmarkParse.
func benchCarrier(b *testing.B) string {
	s, warns := libcarrier.FormatStrings(carriertest.BenchAttributes)
	if warns != nil {
		b.Fatal(warns)
	}
	return s
}

// BenchmarkSDKFromEnv measures the OpenTelemetry Go SDK's environment
// detector decoding the same carrier, for comparison with libcarrier's BenchmarkParse.
func BenchmarkSDKFromEnv(b *testing.B) {
	s := benchCarrier(b)
	b.Setenv(libcarrier.EnvVar, s)
	b.Setenv("OTEL_SERVICE_NAME", "")
	if got := resource.Environment().Len(); got != len(carriertest.BenchAttributes) {
		b.Fatalf("SDK read %d attributes, want %d", got, len(carriertest.BenchAttributes))
	}
	b.SetBytes(int64(len(s)))
	b.ReportAllocs()
	for b.Loop() {
		resource.Environment()
	}
}

// BenchmarkSDKNew is the same through resource.New with WithFromEnv, the
// call an application makes.
func BenchmarkSDKNew(b *testing.B) {
	s := benchCarrier(b)
	b.Setenv(libcarrier.EnvVar, s)
	b.Setenv("OTEL_SERVICE_NAME", "")
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := resource.New(ctx, resource.WithFromEnv()); err != nil {
			b.Fatal(err)
		}
	}
}
