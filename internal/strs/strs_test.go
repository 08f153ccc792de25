package strs_test

import (
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/spank-otel/spank-otel/internal/strs"
)

// The functions are checked against package strings, whose behaviour they
// stand in for.

var searchCases = []struct {
	s string
	c byte
}{
	{"", ','},
	{",", ','},
	{"a=1,b=2,c=3", ','},
	{"a=1,b=2,c=3", '='},
	{"no separator", ','},
	{"%41%zz%", '%'},
	{"é,\xff,", ','},
	{strings.Repeat("k=v,", 300), ','},
	// Eight bytes at a time: matches in every lane, across words, in the
	// tail, and the bytes the arithmetic could carry into.
	{"abcdefgh", 'a'}, {"abcdefgh", 'h'}, {"abcdefghi", 'i'}, {"aaaaaaaab", 'b'},
	{"\x00\x00a\x00", 0}, {"\x01\x00\x01\x00\x01\x00\x01\x00\x01", 0},
	{"abcdefg\xffhijk\xff", 0xff}, {strings.Repeat("\x80", 17) + "\x7f", 0x7f},
	{strings.Repeat("\x7f\x80", 9), 0x80}, {strings.Repeat("\xfe", 16), 0xff},
}

func TestIndexByteAndCount(t *testing.T) {
	for _, tc := range searchCases {
		assert.Equal(t, strs.IndexByte(tc.s, tc.c), strings.IndexByte(tc.s, tc.c), "IndexByte(%q, %q)", tc.s, tc.c)
		assert.Equal(t, strs.Count(tc.s, tc.c), strings.Count(tc.s, string([]byte{tc.c})), "Count(%q, %q)", tc.s, tc.c)
	}
}

func TestHasPrefix(t *testing.T) {
	for _, tc := range []struct{ s, prefix string }{
		{"slurm.topology.addr", "slurm.topology."},
		{"slurm.topology", "slurm.topology."},
		{"", ""},
		{"x", ""},
		{"", "x"},
	} {
		assert.Equal(t, strs.HasPrefix(tc.s, tc.prefix), strings.HasPrefix(tc.s, tc.prefix), "HasPrefix(%q, %q)", tc.s, tc.prefix)
	}
}

func TestTrim(t *testing.T) {
	for _, s := range []string{"", " ", "  42 ", "42", " - 1", "\t1 ", "   ", " \t slurm.job.id\t ", "\t\t"} {
		for _, cutset := range []string{" ", " \t"} {
			assert.Equal(t, strs.Trim(s, cutset), strings.Trim(s, cutset), "Trim(%q, %q)", s, cutset)
		}
	}
}

func TestBuilder(t *testing.T) {
	var b strs.Builder
	var want strings.Builder
	b.Grow(4)
	want.Grow(4)
	var earlier []string
	for i, piece := range []string{"a=1", "", ",", "é", strings.Repeat("x", 100), "\xff"} {
		b.WriteString(piece)
		want.WriteString(piece)
		b.WriteByte(byte('0' + i))
		want.WriteByte(byte('0' + i))
		b.WriteRune('→')
		want.WriteRune('→')
		assert.Equal(t, b.Len(), want.Len())
		assert.Equal(t, b.String(), want.String())
		earlier = append(earlier, b.String())
	}
	// Strings returned earlier are not changed by later writes.
	for i, s := range earlier {
		assert.Assert(t, strings.HasPrefix(b.String(), s), "string %d changed: %q", i, s)
	}
	b.WriteRune(0xD800) // a surrogate is written as U+FFFD, as strings.Builder does
	want.WriteRune(0xD800)
	assert.Equal(t, b.String(), want.String())
}

func TestBuilderUse(t *testing.T) {
	buf := make([]byte, 2, 64)
	copy(buf, "ab")
	var b strs.Builder
	b.Use(buf)
	// AllocsPerRun calls the function once more than it counts: 5 times
	// 8 bytes, within the room of 62.
	allocs := testing.AllocsPerRun(4, func() {
		b.Grow(8)
		b.WriteString("12345678")
	})
	assert.Equal(t, allocs, 0.0, "writing within the room allocated")
	first := b.String()
	want := strings.Repeat("12345678", 5)
	assert.Equal(t, first, want)
	assert.Equal(t, string(buf[2:42]), want, "not written into the room")
	b.WriteString(strings.Repeat("x", 30)) // past the room: a new array
	assert.Equal(t, b.String(), want+strings.Repeat("x", 30))
	assert.Equal(t, first, want, "an earlier string changed")
	assert.Equal(t, string(buf[:2]), "ab", "the bytes before the room changed")
}

// TestBuilderGrowAllocatesOnce: growing past the room is one allocation,
// with -race too, and what was written is kept.
func TestBuilderGrowAllocatesOnce(t *testing.T) {
	for _, n := range []int{1, 100, 5000} {
		allocs := testing.AllocsPerRun(10, func() {
			var b strs.Builder
			b.WriteString("0123456789abcdef") // a full array of 16 bytes
			b.Grow(n)
			if b.String() != "0123456789abcdef" {
				t.Fatalf("Grow(%d) lost the bytes written", n)
			}
		})
		// One for the first array, one for Grow.
		assert.Equal(t, allocs, 2.0, "Grow(%d)", n)
	}
}

func FuzzIndexByteAndCount(f *testing.F) {
	for _, tc := range searchCases {
		f.Add(tc.s, tc.c)
	}
	f.Fuzz(func(t *testing.T, s string, c byte) {
		if got, want := strs.IndexByte(s, c), strings.IndexByte(s, c); got != want {
			t.Errorf("IndexByte(%q, %q) = %d, strings says %d", s, c, got, want)
		}
		if got, want := strs.Count(s, c), strings.Count(s, string([]byte{c})); got != want {
			t.Errorf("Count(%q, %q) = %d, strings says %d", s, c, got, want)
		}
	})
}

// The benchmarks scan a carrier-sized string for a byte it does not hold,
// beside package strings (assembly) for scale.
var benchText = strings.Repeat("slurm.job.name=train%20run,", 26)

func BenchmarkIndexByte(b *testing.B) {
	b.SetBytes(int64(len(benchText)))
	for b.Loop() {
		strs.IndexByte(benchText, ';')
	}
}

func BenchmarkIndexByteStrings(b *testing.B) {
	b.SetBytes(int64(len(benchText)))
	for b.Loop() {
		strings.IndexByte(benchText, ';')
	}
}

func BenchmarkCount(b *testing.B) {
	b.SetBytes(int64(len(benchText)))
	for b.Loop() {
		strs.Count(benchText, ',')
	}
}
