package libcarrier

import (
	"cmp"
	"iter"
	"slices"

	"github.com/spank-otel/spank-otel/internal/strs"
)

// Parse reads a carrier such as the value of OTEL_RESOURCE_ATTRIBUTES.
//
// It never fails as a whole: entries it cannot read are dropped and
// reported as warnings, and everything else is returned. Entries are
// separated by ','; blank entries are skipped; the key is the text before
// the first '=', trimmed of spaces and tabs and not decoded; the value is
// trimmed the same way and then percent-decoded: a valid %XX becomes that
// byte, '+' stays '+', and an invalid or truncated '%' sequence is kept
// literally. When a key repeats, the last entry wins.
//
// Keys, and values without a valid %XX, share memory with s.
// The result is never nil.
func Parse(s string) (map[string]string, []Warning) {
	m := make(map[string]string, strs.Count(s, ',')+1)
	var warns warnings
	for kv, drop := range entries(s) {
		if drop.why != "" {
			warns.add(drop.warning())
			continue
		}
		m[kv.Key] = unescape(kv.Value)
	}
	return m, warns.done()
}

// AppendParse reads the carrier s by the rules of [Parse] and appends its
// entries to dst, sorted by key (bytewise ascending) with one entry per key,
// and returns the extended slice. The entries appended are exactly those of
// the map Parse returns, and the warnings are the same.
//
// It is for callers that read carriers in a hot path: with a dst of enough
// capacity, it allocates once, for all the values that hold a valid %XX
// together, or not at all ([Buffer.AppendParse] not even that). Keys, and
// values without a valid %XX, share memory with s. The entries of dst are
// not modified.
func AppendParse(dst []KeyValue, s string) ([]KeyValue, []Warning) {
	var b Buffer
	return b.AppendParse(dst, s)
}

// AppendParse is the function [AppendParse] with the decoded values written
// to b.
func (b *Buffer) AppendParse(dst []KeyValue, s string) ([]KeyValue, []Warning) {
	n := len(dst)
	dst, warns := appendEntries(dst, s)
	kept := lastOfEach(dst[n:])
	unescapeAll(&b.b, kept)
	return dst[:n+len(kept)], warns
}

// appendEntries appends the entries of s to dst in the order they appear,
// repeated keys included, with their values not yet decoded.
func appendEntries(dst []KeyValue, s string) ([]KeyValue, []Warning) {
	var warns warnings
	for kv, drop := range entries(s) {
		if drop.why != "" {
			warns.add(drop.warning())
			continue
		}
		dst = append(dst, kv)
	}
	return dst, warns.done()
}

// dropped is an entry that is dropped and why, its warning not yet built:
// past MaxWarnings none is.
type dropped struct{ entry, why string }

func (d dropped) warning() Warning {
	return Warning{Message: "entry " + Quote(d.entry) + d.why}
}

// entries yields the entries of s in order, repeated keys included, with
// their values not yet decoded. A dropped entry yields an empty KeyValue
// and why; blank entries yield nothing.
func entries(s string) iter.Seq2[KeyValue, dropped] {
	return func(yield func(KeyValue, dropped) bool) {
		for s != "" {
			var kv KeyValue
			var drop dropped
			kv, s, drop = cutEntry(s)
			if (drop.why != "" || kv.Key != "") && !yield(kv, drop) {
				return
			}
		}
	}
}

// cutEntry reads the first entry of the non-empty carrier s and returns it,
// with its value trimmed but not decoded, and the rest of s. A blank entry
// gives an empty key; an entry that is dropped gives an empty key and why.
func cutEntry(s string) (kv KeyValue, rest string, drop dropped) {
	entry := s
	if i := strs.IndexByte(s, ','); i >= 0 {
		entry, rest = s[:i], s[i+1:]
	}
	if trimBlank(entry) == "" {
		return KeyValue{}, rest, dropped{}
	}
	eq := strs.IndexByte(entry, '=')
	if eq < 0 {
		return KeyValue{}, rest, dropped{entry, " has no '=': dropped"}
	}
	key := trimBlank(entry[:eq])
	if key == "" {
		return KeyValue{}, rest, dropped{entry, " has an empty key: dropped"}
	}
	return KeyValue{Key: key, Value: trimBlank(entry[eq+1:])}, rest, dropped{}
}

// lastOfEach sorts kvs by key in place, keeps the last entry of each key,
// and returns the shortened slice. A carrier that spank-otel or any
// canonical writer produced is already sorted, so the common case is one
// pass of comparisons.
func lastOfEach(kvs []KeyValue) []KeyValue {
	if strictlySorted(kvs) {
		return kvs
	}
	// Stable, so that the entries of one key stay in the order written.
	slices.SortStableFunc(kvs, compareKeys)
	out := kvs[:0]
	for i, kv := range kvs {
		if i+1 < len(kvs) && kvs[i+1].Key == kv.Key {
			continue
		}
		out = append(out, kv)
	}
	return out
}

func compareKeys(a, b KeyValue) int {
	return cmp.Compare(a.Key, b.Key)
}

// strictlySorted reports whether the keys of kvs ascend with no repeat.
func strictlySorted(kvs []KeyValue) bool {
	for i := 1; i < len(kvs); i++ {
		if kvs[i-1].Key >= kvs[i].Key {
			return false
		}
	}
	return true
}

// trimBlank removes spaces and tabs at both ends of s. Only these two are
// trimmed: other control bytes are data, and encoded values never end in
// blanks, so the choice does not affect canonical carriers.
func trimBlank(s string) string {
	for len(s) > 0 && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for len(s) > 0 && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}

// unescape decodes every valid %XX in s and keeps everything else as it is.
// It returns s itself when there is nothing to decode.
func unescape(s string) string {
	if validEscape(s) < 0 {
		return s
	}
	var b strs.Builder
	b.Grow(len(s) - 2) // at least one %XX shrinks to one byte
	writeUnescaped(&b, s)
	return b.String()
}

// unescapeAll decodes the values of kvs as unescape does, into b: at most
// one allocation, cheaper than one per encoded value.
func unescapeAll(b *strs.Builder, kvs []KeyValue) {
	// Carriers hold few encoded values: note where they are.
	var buf [16]int
	encoded := buf[:0]
	size := 0
	for i, kv := range kvs {
		if validEscape(kv.Value) >= 0 {
			encoded = append(encoded, i)
			size += len(kv.Value) // an upper bound
		}
	}
	if size == 0 {
		return
	}
	b.Grow(size)
	for _, i := range encoded {
		start := b.Len()
		writeUnescaped(b, kvs[i].Value)
		// The bytes a Builder has written never change, and the Grow above
		// keeps them in one array, so each value is a slice of it.
		kvs[i].Value = b.String()[start:]
	}
}

// writeUnescaped writes s to b with every valid %XX decoded.
func writeUnescaped(b *strs.Builder, s string) {
	start := 0
	for i := 0; i+2 < len(s); i++ {
		if s[i] == '%' && isHex(s[i+1]) && isHex(s[i+2]) {
			b.WriteString(s[start:i])
			b.WriteByte(unhex(s[i+1])<<4 | unhex(s[i+2]))
			i += 2
			start = i + 1
		}
	}
	b.WriteString(s[start:])
}

// validEscape returns the index of the first '%' in s that
// starts a valid %XX, or -1.
func validEscape(s string) int {
	for i := 0; ; i++ {
		j := strs.IndexByte(s[i:], '%')
		if j < 0 {
			return -1
		}
		i += j
		if i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			return i
		}
	}
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	default:
		return c - 'a' + 10
	}
}
