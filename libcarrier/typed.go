package libcarrier

import (
	"slices"
	"strings"

	"github.com/spank-otel/spank-otel/internal/carrier"
	"github.com/spank-otel/spank-otel/internal/schema"
)

// IsIntegerKey reports whether the values of key are integers once a
// Resource is built (see [Typed]). The list is fixed; no other key is
// typed, however numeric its value looks.
func IsIntegerKey(key string) bool { return schema.IsIntegerKey(key) }

// ParseInteger reads a complete signed base-10 integer, [+-]?[0-9]+, after
// trimming spaces (only ' '; a tab is not trimmed). It rejects everything
// else, including "3.5", "1e3", "1_000", "--1", "0x10" and values outside
// the int64 range.
func ParseInteger(s string) (int64, bool) { return schema.ParseInteger(s) }

// Typed returns the attributes of m with the values of integer keys (see
// [IsIntegerKey]) converted to int64; every other value stays a string.
// An integer key whose value is not an integer stays a string, with a
// warning, except for slurm.* keys, which are dropped with a warning: for
// those the Slurm detector provides the value. Warnings are ordered by key.
func Typed(m map[string]string) (map[string]any, []Warning) {
	out := make(map[string]any, len(m))
	var warns []Warning
	for k, v := range m {
		if !IsIntegerKey(k) {
			out[k] = v
			continue
		}
		if n, ok := ParseInteger(v); ok {
			out[k] = n
			continue
		}
		if strings.HasPrefix(k, "slurm.") {
			warns = append(warns, Warning{Key: k, Message: "value " + carrier.Quote(v) + " is not an integer: dropped"})
			continue
		}
		out[k] = v
		warns = append(warns, Warning{Key: k, Message: "value " + carrier.Quote(v) + " is not an integer: kept as a string"})
	}
	slices.SortFunc(warns, func(a, b Warning) int { return strings.Compare(a.Key, b.Key) })
	return out, warns
}
