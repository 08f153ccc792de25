package sdkinterop_test

import (
	"context"
	"maps"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/spank-otel/spank-otel/libcarrier"
	"github.com/spank-otel/spank-otel/libcarrier/carriertest"
)

// sdkAttributes builds a Resource from the environment with the SDK and
// returns its attributes; every one must be a string.
func sdkAttributes(t testing.TB, carrier string) map[string]string {
	t.Helper()
	t.Setenv(libcarrier.EnvVar, carrier)
	t.Setenv("OTEL_SERVICE_NAME", "")
	res, err := resource.New(context.Background(), resource.WithFromEnv())
	if err != nil {
		t.Fatalf("resource.New: %v", err)
	}
	got := make(map[string]string, res.Len())
	for _, kv := range res.Attributes() {
		if kv.Value.Type() != attribute.STRING {
			t.Fatalf("attribute %s has type %s, want STRING", kv.Key, kv.Value.Type())
		}
		got[string(kv.Key)] = kv.Value.AsString()
	}
	return got
}

func TestSDKReadsFormattedValues(t *testing.T) {
	want := carriertest.HostileAttributes()
	carrier, warns := libcarrier.FormatStrings(want)
	for _, w := range warns {
		if !strings.Contains(w.Message, "over 255") {
			t.Errorf("unexpected warning: %v", w)
		}
	}
	if len(warns) != 2 { // long.300 and long.mixed
		t.Errorf("got %d length warnings, want 2: %v", len(warns), warns)
	}
	got := sdkAttributes(t, carrier)
	if !maps.Equal(got, want) {
		for k, v := range want {
			if g, ok := got[k]; !ok || g != v {
				t.Errorf("key %q: SDK read %q (present %v), want %q", k, g, ok, v)
			}
		}
		for k, v := range got {
			if _, ok := want[k]; !ok {
				t.Errorf("SDK read extra attribute %q=%q", k, v)
			}
		}
	}

	// The same through Format with mixed types: the SDK reads their text.
	typed := map[string]any{"int": -42, "uint": uint64(18446744073709551615), "bool": true,
		"float": 2.5e-7, "float.big": 1e21, "string": "a b"}
	carrier, _ = libcarrier.Format(typed)
	wantTyped := map[string]string{"int": "-42", "uint": "18446744073709551615", "bool": "true",
		"float": "2.5e-7", "float.big": "1e21", "string": "a b"}
	if got := sdkAttributes(t, carrier); !maps.Equal(got, wantTyped) {
		t.Errorf("SDK read %q, want %q", got, wantTyped)
	}
}

// agreementInputs are the carriers, canonical or not, whose canonical
// form our Parse and the SDKs must read alike.
func agreementInputs() []string {
	inputs := []string{""}
	inputs = append(inputs, carriertest.Hostile...)
	inputs = append(inputs, "slurm.job.id=42,slurm.job.name=train run,nv.dl.rank= 3 ,x=%E6%97%A5%zz+")
	whole, _ := libcarrier.FormatStrings(carriertest.HostileAttributes())
	return append(inputs, whole)
}

// TestParseAgreesWithSDK checks that on canonical input our Parse and the
// SDK's decoder read the same attributes.
func TestParseAgreesWithSDK(t *testing.T) {
	for _, in := range agreementInputs() {
		parsed, _ := libcarrier.Parse(in)
		canon, _ := libcarrier.FormatStrings(parsed)
		ours, warns := libcarrier.Parse(canon)
		if warns != nil {
			t.Errorf("Parse(%q) warned: %v", canon, warns)
		}
		if sdk := sdkAttributes(t, canon); !maps.Equal(ours, sdk) {
			t.Errorf("canonical %q: Parse = %q, SDK = %q", canon, ours, sdk)
		}
	}
}

// FuzzSDKAgreement extends TestParseAgreesWithSDK to arbitrary input.
func FuzzSDKAgreement(f *testing.F) {
	for _, s := range carriertest.Hostile {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		parsed, _ := libcarrier.Parse(s)
		canon, _ := libcarrier.FormatStrings(parsed)
		ours, _ := libcarrier.Parse(canon)
		if sdk := sdkAttributes(t, canon); !maps.Equal(ours, sdk) {
			t.Fatalf("canonical %q: Parse = %q, SDK = %q", canon, ours, sdk)
		}
	})
}
