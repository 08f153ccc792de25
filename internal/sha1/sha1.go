// Package sha1 computes SHA-1 digests without the standard library's
// crypto packages.
//
// The per-task library needs SHA-1 only for UUIDv5 names (RFC 9562), where
// SHA-1 is a naming function, not a security one. crypto/sha1 brings in
// the FIPS 140 module (AES, GCM, DRBG, entropy, HMAC, SHA-2/3, ...), whose
// package initialisation runs in every task's helper process for nothing.
// This package is checked against crypto/sha1 by its tests and a fuzz
// target.
package sha1

import "math/bits"

// Size is the size of a SHA-1 digest in bytes.
const Size = 20

const blockSize = 64

// Sum returns the SHA-1 digest of data. Nothing escapes to the heap.
func Sum(data []byte) [Size]byte {
	h := [5]uint32{0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476, 0xc3d2e1f0}
	n := len(data)
	for len(data) >= blockSize {
		block(&h, data[:blockSize])
		data = data[blockSize:]
	}
	// The tail, a 0x80 byte, zeros, and the length in bits: one or two
	// more blocks.
	// One block's buffer, used twice when the length does not fit after
	// the tail: the job UUID's digest is on the task path
	// (the stack rule: package taskenv).
	var last [blockSize]byte
	copy(last[:], data)
	last[len(data)] = 0x80
	if len(data) >= blockSize-8 {
		block(&h, last[:])
		last = [blockSize]byte{}
	}
	putUint64(last[blockSize-8:], uint64(n)<<3)
	block(&h, last[:])
	var sum [Size]byte
	for i, v := range h {
		sum[4*i], sum[4*i+1], sum[4*i+2], sum[4*i+3] = byte(v>>24), byte(v>>16), byte(v>>8), byte(v)
	}
	return sum
}

// block mixes one 64-byte block into h (FIPS 180-4, section 6.1.2).
func block(h *[5]uint32, p []byte) {
	var w [16]uint32
	for i := range w {
		w[i] = uint32(p[4*i])<<24 | uint32(p[4*i+1])<<16 | uint32(p[4*i+2])<<8 | uint32(p[4*i+3])
	}
	a, b, c, d, e := h[0], h[1], h[2], h[3], h[4]
	for t := 0; t < 80; t++ {
		if t >= 16 {
			// The message schedule, kept in a ring of 16 words.
			x := w[(t-3)&15] ^ w[(t-8)&15] ^ w[(t-14)&15] ^ w[t&15]
			w[t&15] = bits.RotateLeft32(x, 1)
		}
		var f, k uint32
		switch {
		case t < 20:
			f, k = (b&c)|(^b&d), 0x5a827999
		case t < 40:
			f, k = b^c^d, 0x6ed9eba1
		case t < 60:
			f, k = (b&c)|(b&d)|(c&d), 0x8f1bbcdc
		default:
			f, k = b^c^d, 0xca62c1d6
		}
		tmp := bits.RotateLeft32(a, 5) + f + e + k + w[t&15]
		a, b, c, d, e = tmp, a, bits.RotateLeft32(b, 30), c, d
	}
	h[0] += a
	h[1] += b
	h[2] += c
	h[3] += d
	h[4] += e
}

// putUint64 writes v big-endian into b[:8]. (encoding/binary would bring
// reflect into the per-task library.)
func putUint64(b []byte, v uint64) {
	for i := 7; i >= 0; i-- {
		b[i] = byte(v)
		v >>= 8
	}
}
