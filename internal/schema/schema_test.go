package schema_test

import (
	"testing"

	"github.com/spank-otel/spank-otel/internal/schema"
)

func TestCanonical(t *testing.T) {
	for _, tt := range []struct {
		in, out string
		ok      bool
	}{
		{"0", "0", true}, {"7", "7", true}, {"-1", "-1", true}, {" +007 ", "7", true},
		{"-0", "0", true}, {"+0", "0", true}, {"00", "0", true}, {"-012", "-12", true},
		{"9223372036854775807", "9223372036854775807", true},
		{"3.5", "", false}, {"1e3", "", false}, {"1_000", "", false}, {"--1", "", false},
		{"true", "", false}, {"seven", "", false}, {"", "", false}, {"-", "", false},
	} {
		out, ok := schema.Canonical(tt.in)
		if out != tt.out || ok != tt.ok {
			t.Errorf("Canonical(%q) = %q, %v; want %q, %v", tt.in, out, ok, tt.out, tt.ok)
		}
	}
}
