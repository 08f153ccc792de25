package sha1_test

import (
	stdsha1 "crypto/sha1"
	"encoding/hex"
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/spank-otel/spank-otel/internal/sha1"
)

func TestSum(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		// FIPS 180 examples.
		{"empty", "", "da39a3ee5e6b4b0d3255bfef95601890afd80709"},
		{"abc", "abc", "a9993e364706816aba3e25717850c26c9cd0d89d"},
		{"two blocks", "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", "84983e441c3bd26ebaae4aa1f95129e5e54670f1"},
		{"a million a", strings.Repeat("a", 1000000), "34aa973cd4c4daa4f61eeb2bdbad27316534016f"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sum := sha1.Sum([]byte(tc.in))
			assert.Equal(t, hex.EncodeToString(sum[:]), tc.want)
		})
	}
}

// Every length around the block and padding boundaries.
func TestSumMatchesCryptoSHA1(t *testing.T) {
	b := make([]byte, 300)
	for i := range b {
		b[i] = byte(i * 7)
	}
	for n := 0; n <= len(b); n++ {
		assert.Equal(t, sha1.Sum(b[:n]), stdsha1.Sum(b[:n]), "length %d", n)
	}
}

func FuzzSum(f *testing.F) {
	f.Add([]byte("nemo.lens.job/cluster-a/12345"))
	f.Add(make([]byte, 55))
	f.Add(make([]byte, 56))
	f.Add(make([]byte, 64))
	f.Fuzz(func(t *testing.T, b []byte) {
		assert.Equal(t, sha1.Sum(b), stdsha1.Sum(b))
	})
}

func TestSumDoesNotAllocate(t *testing.T) {
	b := []byte("nemo.lens.job/cluster-a/12345")
	assert.Equal(t, testing.AllocsPerRun(100, func() { sha1.Sum(b) }), 0.0)
}

func BenchmarkSum(b *testing.B) {
	name := []byte("\x6b\xa7\xb8\x11\x9d\xad\x11\xd1\x80\xb4\x00\xc0\x4f\xd4\x30\xc8nemo.lens.job/cluster-a/12345")
	for b.Loop() {
		sha1.Sum(name)
	}
}

func BenchmarkCryptoSHA1(b *testing.B) {
	name := []byte("\x6b\xa7\xb8\x11\x9d\xad\x11\xd1\x80\xb4\x00\xc0\x4f\xd4\x30\xc8nemo.lens.job/cluster-a/12345")
	for b.Loop() {
		stdsha1.Sum(name)
	}
}
