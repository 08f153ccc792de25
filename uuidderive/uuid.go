package uuidderive

import "github.com/spank-otel/spank-otel/internal/sha1"

// UUID is a version 5 UUID, in the byte order of RFC 9562. It is the
// same array as github.com/google/uuid's UUID: uuid.UUID(u) converts it.
type UUID [16]byte

// namespaceURL returns the URL namespace of RFC 9562,
// 6ba7b811-9dad-11d1-80b4-00c04fd430c8.
func namespaceURL() UUID {
	return UUID{0x6b, 0xa7, 0xb8, 0x11, 0x9d, 0xad, 0x11, 0xd1, 0x80, 0xb4, 0x00, 0xc0, 0x4f, 0xd4, 0x30, 0xc8}
}

// sum returns the version 5 UUID of namespace||name, given already
// concatenated in b. The internal sha1 keeps everything on the stack.
func sum(b []byte) UUID {
	digest := sha1.Sum(b)
	var u UUID
	copy(u[:], digest[:16])
	u[6] = (u[6] & 0x0f) | 0x50 // version 5
	u[8] = (u[8] & 0x3f) | 0x80 // RFC 4122 variant
	return u
}

// String returns u in the canonical form xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx,
// lower-case.
func (u UUID) String() string {
	const hex = "0123456789abcdef"
	var b [36]byte
	j := 0
	for i, c := range u {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			b[j] = '-'
			j++
		}
		b[j], b[j+1] = hex[c>>4], hex[c&15]
		j += 2
	}
	return string(b[:])
}
