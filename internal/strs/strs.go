// Package strs holds the few functions of package strings that the
// per-task library needs. Package strings imports unicode, whose
// initialisation builds maps in every process that links it, the helper
// process of every Slurm task included (docs/performance.md). The
// packages on the task path use these instead, and cgo/deps_test.go keeps
// strings and unicode off it.
package strs

import (
	"unicode/utf8"
	"unsafe"
)

// IndexByte returns the index of the first c in s, or -1.
func IndexByte(s string, c byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return i
		}
	}
	return -1
}

// Count returns how many times c occurs in s.
func Count(s string, c byte) int {
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			n++
		}
	}
	return n
}

// HasPrefix reports whether s begins with prefix.
func HasPrefix(s, prefix string) bool {
	return len(s) >= len(prefix) && s[:len(prefix)] == prefix
}

// Trim returns s without the leading and trailing bytes that are in
// cutset, which holds ASCII bytes only.
func Trim(s, cutset string) string {
	for s != "" && IndexByte(cutset, s[0]) >= 0 {
		s = s[1:]
	}
	for s != "" && IndexByte(cutset, s[len(s)-1]) >= 0 {
		s = s[:len(s)-1]
	}
	return s
}

// A Builder builds a string as strings.Builder does: String returns the
// bytes written so far without copying them, and later writes never change
// them. The zero value is ready to use; a Builder must not be copied once
// written to.
type Builder struct {
	buf []byte
}

// Use makes b write into the spare capacity of buf, buf[len(buf):cap(buf)],
// until that is full; then it allocates as usual. It is for building
// several strings in one buffer that the caller allocated once. Nothing
// else may write to that capacity afterwards: the strings b returns are
// views of it.
func (b *Builder) Use(buf []byte) { b.buf = buf[len(buf):len(buf):cap(buf)] }

// Grow makes room for at least n more bytes, in one allocation. Not with
// slices.Grow: the compiler folds its append of a make into one allocation
// only when it does not instrument the code, so under -race it made two,
// and the allocation tests of the per-task path failed there.
func (b *Builder) Grow(n int) {
	if cap(b.buf)-len(b.buf) >= n {
		return
	}
	buf := make([]byte, len(b.buf), 2*cap(b.buf)+n)
	copy(buf, b.buf)
	b.buf = buf
}

// Len returns the number of bytes written.
func (b *Builder) Len() int { return len(b.buf) }

// WriteString appends s.
func (b *Builder) WriteString(s string) { b.buf = append(b.buf, s...) }

// WriteByte appends c. Its error, always nil, is there for io.ByteWriter.
func (b *Builder) WriteByte(c byte) error {
	b.buf = append(b.buf, c)
	return nil
}

// WriteRune appends the UTF-8 encoding of r.
func (b *Builder) WriteRune(r rune) { b.buf = utf8.AppendRune(b.buf, r) }

// String returns the bytes written as a string, without a copy: appends
// after it go past them or into a new array, never over them.
func (b *Builder) String() string {
	return unsafe.String(unsafe.SliceData(b.buf), len(b.buf))
}
