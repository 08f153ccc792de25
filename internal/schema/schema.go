// Package schema is the typed-integer schema of resource attributes: which
// keys hold integers, and what counts as one. Package libcarrier (Typed) and
// the Slurm detector both read it, so the two cannot disagree.
package schema

import (
	"strconv"

	"github.com/spank-otel/spank-otel/internal/strs"
)

// IsIntegerKey reports whether the values of key are integers once a
// Resource is built (libcarrier.Typed). The list is fixed; no other key is
// typed, however numeric its value looks.
func IsIntegerKey(key string) bool {
	switch key {
	case "nv.dl.rank",
		"nv.dl.world_size",
		"nv.dl.local_rank",
		"nv.dl.topology.size.tp",
		"nv.dl.topology.size.pp",
		"nv.dl.topology.size.dp",
		"nv.dl.training.config.global_batch_size",
		"nv.dl.training.config.micro_batch_size",
		"nv.dl.training.config.sequence_length",
		"nv.dl.training.target.train_iters",
		"nv.dl.training.target.train_samples",
		"nv.dl.training.target.train_tokens",
		"nv.gpu.index",
		"nv.gpu.memory_total",
		"slurm.array.count",
		"slurm.nnodes",
		"slurm.ntasks",
		"slurm.restart_count":
		return true
	}
	return false
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

// Canonical returns s as a canonical base-10 integer if it is one by
// the rule of [ParseInteger]. A value that is already canonical, as
// Slurm writes them, is returned as it is, without allocating.
func Canonical(s string) (string, bool) {
	n, ok := ParseInteger(s)
	if !ok {
		return "", false
	}
	if isCanonical(s) {
		return s, true
	}
	return strconv.FormatInt(n, 10), true
}

// isCanonical reports whether s is what strconv.FormatInt writes: an optional
// '-' and digits without a leading zero, or "0". s is known to be an integer.
func isCanonical(s string) bool {
	digits := s
	if digits != "" && digits[0] == '-' {
		digits = digits[1:]
	}
	if digits == "" || (digits[0] == '0' && (len(digits) > 1 || len(s) > 1)) {
		return false
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return false
		}
	}
	return true
}
