package libcarrier

import (
	"cmp"
	"slices"

	"github.com/spank-otel/spank-otel/internal/keys"
	"github.com/spank-otel/spank-otel/internal/strs"
)

// IsIntegerKey reports whether the values of key are integers once a
// Resource is built (see [Typed]). The list is fixed: the integer keys of
// the project's one key table (docs/spec.md, section 2); no other key is
// typed, however numeric its value looks.
func IsIntegerKey(key string) bool {
	return keys.IsInteger(key)
}

// ParseInteger reads a complete signed base-10 integer, [+-]?[0-9]+, after
// trimming spaces (only ' '; a tab is not trimmed). It rejects everything
// else, including "3.5", "1e3", "1_000", "--1", "0x10" and values outside
// the int64 range.
func ParseInteger(s string) (int64, bool) {
	s = strs.Trim(s, " ")
	neg := false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg = s[0] == '-'
		s = s[1:]
	}
	if s == "" {
		return 0, false
	}
	// Accumulate the magnitude as a uint64 so that -9223372036854775808
	// is accepted.
	const limit = 1 << 63
	var n uint64
	for i := 0; i < len(s); i++ {
		d := uint64(s[i] - '0')
		if d > 9 {
			return 0, false
		}
		if n > (limit-d)/10 {
			return 0, false // n*10+d would exceed 2^63
		}
		n = n*10 + d
	}
	if neg {
		return -int64(n), true // for n == 2^63 both sides are math.MinInt64
	}
	if n == limit {
		return 0, false
	}
	return int64(n), true
}

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
		if strs.HasPrefix(k, "slurm.") {
			warns = append(warns, Warning{Key: k, Message: "value " + Quote(v) + " is not an integer: dropped"})
			continue
		}
		out[k] = v
		warns = append(warns, Warning{Key: k, Message: "value " + Quote(v) + " is not an integer: kept as a string"})
	}
	slices.SortFunc(warns, func(a, b Warning) int { return cmp.Compare(a.Key, b.Key) })
	return out, warns
}
