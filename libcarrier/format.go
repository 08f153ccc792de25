package libcarrier

import (
	"cmp"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/spank-otel/spank-otel/internal/strs"
)

// MaxValueBytes is the longest encoded value every consumer reads: the
// OpenTelemetry Collector's environment detector and the JavaScript SDK
// reject a longer one, and the JavaScript SDK then discards the whole
// variable. Format writes a longer value of the user's, with a warning; a
// value the project composes must never be longer.
const MaxValueBytes = 255

// maxKeyBytes is the longest key written; a longer one is dropped.
const maxKeyBytes = 255

// entry is one map entry on its way into the carrier.
type entry struct {
	tk  string // trimmed key; "" once the entry is dropped
	key string // key as given: orders spellings that trim to the same key
	val string // value as text
	raw any    // Format only: the value as given
}

// entryBuf is how many entries a format keeps on the stack; more still
// work, they just allocate.
const entryBuf = 64

// Format writes m in the canonical carrier form described in the package
// documentation, with keys sorted bytewise ascending.
//
// Values may be:
//   - string, written as it is (dropped with a warning unless valid UTF-8);
//     the empty string gives "key=";
//   - bool, written true or false;
//   - int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64
//     and uintptr, written in base 10 (so a byte or rune is a number);
//   - float32 and float64, written with the fewest digits that read back as
//     the same number: plain decimals when 1e-6 <= |x| < 1e21 or x is zero,
//     otherwise exponent notation without '+' or leading zeros (1e21,
//     -2.5e-7); NaN and infinities are dropped with a warning, as no
//     consumer reads them as numbers;
//   - nil, which omits the key.
//
// Any other type, including named types such as time.Duration, is dropped
// with a warning naming the key and the type: convert such values first.
func Format(m map[string]any) (string, []Warning) {
	var buf [entryBuf]entry
	es := buf[:0]
	for k, v := range m {
		es = append(es, entry{tk: trimBlank(k), key: k, raw: v})
	}
	var obuf [entryBuf]int32
	ord := order(es, obuf[:0])
	warns := resolve(es, ord, nil)
	for _, i := range ord {
		e := &es[i]
		if e.tk == "" {
			continue
		}
		s, msg := text(e.raw)
		if msg != "" {
			warns = append(warns, Warning{Key: e.key, Message: msg})
			e.tk = ""
			continue
		}
		if e.raw == nil {
			e.tk = ""
			continue
		}
		e.val = s
	}
	var wbuf [entryBuf]KeyValue
	var gbuf [entryBuf]string
	kvs, given := winners(es, ord, wbuf[:0], gbuf[:0])
	var b strs.Builder
	s, warns, _ := write(&b, kvs, given, warns) // values are valid
	return s, warns
}

// FormatStrings is [Format] for string values. It is a fast path: for up
// to 64 keys and a result of up to 2 KiB it allocates nothing but the
// result and the warnings.
func FormatStrings(m map[string]string) (string, []Warning) {
	var buf [entryBuf]KeyValue
	kvs := buf[:0]
	for k, v := range m {
		kvs = append(kvs, KeyValue{Key: k, Value: v})
	}
	// Sorted, the entries of a map with valid keys and values take
	// FormatList's fast path; the keys are distinct, so nothing else
	// changes.
	slices.SortFunc(kvs, compareKeys)
	return FormatList(kvs)
}

// FormatList is [FormatStrings] for entries held in a slice. It returns
// what FormatStrings returns for the map that assigning the entries of kvs
// in order would build: when a key occurs more than once, the last entry
// replaces the others without a warning. kvs is not modified.
//
// It is the fast path of a caller that holds entries, such as the SPANK
// plugin in every task. Entries sorted by key with distinct keys, as
// [AppendParse] returns them, are not sorted again, and for up to 64
// entries and a result of up to 2 KiB nothing is allocated but the result
// and the warnings ([Buffer.FormatList] not even the result).
func FormatList(kvs []KeyValue) (string, []Warning) {
	var b Buffer
	return b.FormatList(kvs)
}

// FormatList is the function [FormatList] with the result written to b.
func (b *Buffer) FormatList(kvs []KeyValue) (string, []Warning) {
	if plain(kvs) {
		if s, warns, ok := write(&b.b, kvs, nil, nil); ok {
			return s, warns
		}
	}
	return formatList(&b.b, kvs)
}

// formatList is FormatList for entries that need sorting, trimming or
// dropping.
func formatList(b *strs.Builder, kvs []KeyValue) (string, []Warning) {
	var buf [entryBuf]entry
	es := buf[:0]
	for _, kv := range kvs {
		es = append(es, entry{tk: trimBlank(kv.Key), key: kv.Key, val: kv.Value})
	}
	var obuf [entryBuf]int32
	ord := order(es, obuf[:0])
	warns := resolve(es, ord, nil)
	for _, i := range ord {
		e := &es[i]
		if e.tk != "" && !utf8.ValidString(e.val) {
			warns = append(warns, Warning{Key: e.key, Message: msgInvalidUTF8})
			e.tk = ""
		}
	}
	var wbuf [entryBuf]KeyValue
	var gbuf [entryBuf]string
	kvs, given := winners(es, ord, wbuf[:0], gbuf[:0])
	s, warns, _ := write(b, kvs, given, warns) // values are valid
	return s, warns
}

// plain reports whether the keys of kvs are strictly ascending and valid.
// Such entries need neither sorting nor trimming (a valid key holds no
// blank), and unless a value is not valid UTF-8 nothing in them is dropped.
func plain(kvs []KeyValue) bool {
	for i, kv := range kvs {
		if i > 0 && kvs[i-1].Key >= kv.Key || !validKey(kv.Key) {
			return false
		}
	}
	return true
}

// winners appends to kvs the entries of es that were not dropped, in the
// order ord, under their trimmed keys, and to given their keys as given.
func winners(es []entry, ord []int32, kvs []KeyValue, given []string) ([]KeyValue, []string) {
	for _, i := range ord {
		if e := &es[i]; e.tk != "" {
			kvs = append(kvs, KeyValue{Key: e.tk, Value: e.val})
			given = append(given, e.key)
		}
	}
	return kvs, given
}

// order returns the indexes of es sorted by trimmed key, then by key as
// given, then by position, appended to buf. Sorting indexes instead of
// entries moves no strings, and a caller's small stack buffer avoids an
// allocation.
func order(es []entry, buf []int32) []int32 {
	ord := buf[:0]
	for i := range es {
		ord = append(ord, int32(i))
	}
	slices.SortFunc(ord, func(a, b int32) int {
		if c := compareEntries(&es[a], &es[b]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	return ord
}

// compareEntries orders entries by trimmed key, then by key as given.
func compareEntries(a, b *entry) int {
	if c := cmp.Compare(a.tk, b.tk); c != 0 {
		return c
	}
	return cmp.Compare(a.key, b.key)
}

// resolve drops (by clearing tk) every entry with an invalid key and every
// spelling that loses to a later one with the same trimmed key, visiting
// entries in the order ord.
func resolve(es []entry, ord []int32, warns []Warning) []Warning {
	// Spellings of one trimmed key are adjacent and share its validity, so
	// a group is either dropped whole or resolved to its last member.
	for n, i := range ord {
		e := &es[i]
		var next *entry
		if n+1 < len(ord) {
			next = &es[ord[n+1]]
		}
		if next != nil && next.key == e.key {
			// Only FormatList sees a key twice; as in a map, the later
			// entry replaces this one.
			e.tk = ""
			continue
		}
		if msg := checkKey(e.tk); msg != "" {
			warns = append(warns, Warning{Key: e.key, Message: msg})
			e.tk = ""
			continue
		}
		if next != nil && next.tk == e.tk {
			warns = append(warns, Warning{Key: e.key,
				Message: "same key as " + Quote(next.key) + " after trimming, which wins: dropped"})
			e.tk = ""
		}
	}
	return warns
}

// msgInvalidUTF8 is the warning of every entry dropped for its value: Format,
// FormatList and Repair drop the same entries, with the same words.
const msgInvalidUTF8 = "value is not valid UTF-8: dropped"

// checkKey returns why a trimmed key cannot be written, or "".
func checkKey(k string) string {
	if validKey(k) {
		return ""
	}
	if k == "" {
		return "empty key: dropped"
	}
	if len(k) > maxKeyBytes {
		return "key longer than 255 bytes: dropped"
	}
	c := k[span(k, keyByte)]
	if c < 0x21 || c > 0x7e {
		return "key contains byte " + hexByte(c) + ": dropped"
	}
	return "key contains " + strconv.QuoteRune(rune(c)) + ": dropped"
}

// validKey reports whether k can be written as a key.
func validKey(k string) bool {
	return k != "" && len(k) <= maxKeyBytes && span(k, keyByte) == len(k)
}

// The classes of a byte: the bits of byteClasses[c] (byteclasses_gen.go).
const (
	keyByte        uint8 = 1 << iota // a key may hold it: isKeyByte
	unreservedByte                   // a value holds it as it is: isUnreservedByte
)

// span returns the length of the longest prefix of s whose bytes are all
// of class. It tests four bytes per branch, about twice as fast as one:
// keys and values are mostly made of such bytes.
func span(s string, class uint8) int {
	i := 0
	for ; i+4 <= len(s); i += 4 {
		w := s[i : i+4]
		if byteClasses[w[0]]&byteClasses[w[1]]&byteClasses[w[2]]&byteClasses[w[3]]&class == 0 {
			break
		}
	}
	for i < len(s) && byteClasses[s[i]]&class != 0 {
		i++
	}
	return i
}

// The byte classes of the format. The rules are these two functions; the
// table that the scanners read is generated from them into
// byteclasses_gen.go, so that no task spends its start building it.
//
//go:generate go test -run TestByteClassesGenerated -update .

// isKeyByte reports whether a key may hold c: 0x21-0x7E except , = % ; \ ".
func isKeyByte(c byte) bool {
	return 0x21 <= c && c <= 0x7e && strs.IndexByte(`,=%;\"`, c) < 0
}

// isUnreservedByte reports whether c is written in a value as it is;
// every other byte of a value is percent-encoded.
func isUnreservedByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~'
}

func hexByte(c byte) string {
	return "0x" + string([]byte{upperHex[c>>4], upperHex[c&15]})
}

const upperHex = "0123456789ABCDEF"

// write joins kvs, whose keys are valid, in order, with values
// percent-encoded, and adds a warning to warns for every value too long
// for some consumers. A warning names the key as the caller was given it:
// given[i] for kvs[i], or kvs[i].Key when given is nil. The result is
// false when a value is not valid UTF-8; what was written to b by then
// is not part of any result.
func write(b *strs.Builder, kvs []KeyValue, given []string, warns []Warning) (string, []Warning, bool) {
	// Built in place, with room made once for the exact size, and returned
	// without a copy.
	start := b.Len()
	size := 0
	for _, kv := range kvs {
		size += len(kv.Key) + 1 + encodedLen(kv.Value) + 1
	}
	b.Grow(size)
	for i, kv := range kvs {
		if b.Len() > start {
			b.WriteByte(',')
		}
		b.WriteString(kv.Key)
		b.WriteByte('=')
		valueStart := b.Len()
		// Only a value with a byte above 0x7F needs a closer look.
		if ascii := writeEncoded(b, kv.Value); !ascii && !utf8.ValidString(kv.Value) {
			return "", warns, false
		}
		if n := b.Len() - valueStart; n > MaxValueBytes {
			key := kv.Key
			if given != nil {
				key = given[i]
			}
			warns = append(warns, Warning{Key: key,
				Message: "value encodes to " + strconv.Itoa(n) + " bytes (over 255): written, but the Collector and the JavaScript SDK reject it"})
		}
	}
	return b.String()[start:], warns, true
}

// encodedLen returns the length of s percent-encoded.
func encodedLen(s string) int {
	n := len(s)
	for i := 0; i < len(s); i++ {
		n += 2 - int(byteClasses[s[i]]&unreservedByte) // 2 more for %XX
	}
	return n
}

// writeEncoded writes s percent-encoded to b, copying runs of unreserved
// bytes at once, and reports whether s is all ASCII.
func writeEncoded(b *strs.Builder, s string) (ascii bool) {
	ascii = true
	for {
		n := span(s, unreservedByte)
		b.WriteString(s[:n])
		if n == len(s) {
			return ascii
		}
		c := s[n]
		ascii = ascii && c < utf8.RuneSelf
		b.WriteByte('%')
		b.WriteByte(upperHex[c>>4])
		b.WriteByte(upperHex[c&15])
		s = s[n+1:]
	}
}
