package libcarrier

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Limits that consumers of the carrier enforce.
const (
	maxKeyBytes   = 255 // longer keys are dropped
	maxValueBytes = 255 // longer encoded values are written, with a warning
)

// entry is one map entry on its way into the carrier.
type entry struct {
	tk  string // trimmed key; "" once the entry is dropped
	key string // key as given: orders spellings that trim to the same key
	val string // value as text
	raw any    // Format only: the value as given
}

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
	es := make([]entry, 0, len(m))
	for k, v := range m {
		es = append(es, entry{tk: trimBlank(k), key: k, raw: v})
	}
	var buf [64]int32
	ord := order(es, buf[:0])
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
	return write(es, ord, warns)
}

// FormatStrings is [Format] for string values. It is the per-task fast
// path: for up to 64 keys it allocates, besides the warnings, one slice
// and the result.
func FormatStrings(m map[string]string) (string, []Warning) {
	es := make([]entry, 0, len(m))
	for k, v := range m {
		es = append(es, entry{tk: trimBlank(k), key: k, val: v})
	}
	var buf [64]int32
	ord := order(es, buf[:0])
	warns := resolve(es, ord, nil)
	for _, i := range ord {
		e := &es[i]
		if e.tk != "" && !utf8.ValidString(e.val) {
			warns = append(warns, Warning{Key: e.key, Message: "value is not valid UTF-8: dropped"})
			e.tk = ""
		}
	}
	return write(es, ord, warns)
}

// order returns the indexes of es sorted by trimmed key, then by key as
// given, appended to buf. Sorting indexes instead of entries moves no
// pointers, and a caller's small stack buffer avoids an allocation.
func order(es []entry, buf []int32) []int32 {
	ord := buf[:0]
	for i := range es {
		ord = append(ord, int32(i))
	}
	slices.SortFunc(ord, func(a, b int32) int {
		if c := strings.Compare(es[a].tk, es[b].tk); c != 0 {
			return c
		}
		return strings.Compare(es[a].key, es[b].key)
	})
	return ord
}

// resolve drops (by clearing tk) every entry with an invalid key and every
// spelling that loses to a later one with the same trimmed key, visiting
// entries in the order ord.
func resolve(es []entry, ord []int32, warns []Warning) []Warning {
	// Spellings of one trimmed key are adjacent and share its validity, so
	// a group is either dropped whole or resolved to its last member.
	for n, i := range ord {
		e := &es[i]
		if msg := checkKey(e.tk); msg != "" {
			warns = append(warns, Warning{Key: e.key, Message: msg})
			e.tk = ""
			continue
		}
		if n+1 < len(ord) && es[ord[n+1]].tk == e.tk {
			warns = append(warns, Warning{Key: e.key,
				Message: "same key as " + quote(es[ord[n+1]].key) + " after trimming, which wins: dropped"})
			e.tk = ""
		}
	}
	return warns
}

// checkKey returns why a trimmed key cannot be written, or "".
func checkKey(k string) string {
	if k == "" {
		return "empty key: dropped"
	}
	if len(k) > maxKeyBytes {
		return "key longer than 255 bytes: dropped"
	}
	for i := 0; i < len(k); i++ {
		switch c := k[i]; {
		case c < 0x21 || c > 0x7e:
			return "key contains byte " + hexByte(c) + ": dropped"
		case c == ',' || c == '=' || c == '%' || c == ';' || c == '\\' || c == '"':
			return "key contains " + strconv.QuoteRune(rune(c)) + ": dropped"
		}
	}
	return ""
}

func hexByte(c byte) string {
	return "0x" + string([]byte{upperHex[c>>4], upperHex[c&15]})
}

// text returns v as carrier text, or a reason to drop it.
func text(v any) (string, string) {
	switch v := v.(type) {
	case nil:
		return "", ""
	case string:
		if !utf8.ValidString(v) {
			return "", "value is not valid UTF-8: dropped"
		}
		return v, ""
	case bool:
		return strconv.FormatBool(v), ""
	case int:
		return strconv.FormatInt(int64(v), 10), ""
	case int8:
		return strconv.FormatInt(int64(v), 10), ""
	case int16:
		return strconv.FormatInt(int64(v), 10), ""
	case int32:
		return strconv.FormatInt(int64(v), 10), ""
	case int64:
		return strconv.FormatInt(v, 10), ""
	case uint:
		return strconv.FormatUint(uint64(v), 10), ""
	case uint8:
		return strconv.FormatUint(uint64(v), 10), ""
	case uint16:
		return strconv.FormatUint(uint64(v), 10), ""
	case uint32:
		return strconv.FormatUint(uint64(v), 10), ""
	case uint64:
		return strconv.FormatUint(v, 10), ""
	case uintptr:
		return strconv.FormatUint(uint64(v), 10), ""
	case float32:
		return formatFloat(float64(v), 32)
	case float64:
		return formatFloat(v, 64)
	}
	return "", "value of type " + fmt.Sprintf("%T", v) + " is not supported: dropped"
}

// formatFloat writes the shortest text that parses back to f at the given
// bit size, in the notation JavaScript uses for numbers.
func formatFloat(f float64, bits int) (string, string) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "", "value " + strconv.FormatFloat(f, 'g', -1, 64) + " is not a finite number: dropped"
	}
	abs := math.Abs(f)
	if abs == 0 || 1e-6 <= abs && abs < 1e21 {
		return strconv.FormatFloat(f, 'f', -1, bits), ""
	}
	b := strconv.AppendFloat(make([]byte, 0, 32), f, 'e', -1, bits)
	// Turn e+21 into e21 and e-07 into e-7: fewer bytes to encode, and
	// every number parser accepts both.
	i := slices.Index(b, 'e') + 1
	if b[i] == '+' {
		b = append(b[:i], b[i+1:]...)
	} else {
		i++
	}
	for i < len(b)-1 && b[i] == '0' {
		b = append(b[:i], b[i+1:]...)
	}
	return string(b), ""
}

const upperHex = "0123456789ABCDEF"

// unreserved reports whether c is written as it is; every other byte is
// percent-encoded.
func unreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~'
}

// encodedLen returns the length of s once percent-encoded.
func encodedLen(s string) int {
	n := len(s)
	for i := 0; i < len(s); i++ {
		if !unreserved(s[i]) {
			n += 2
		}
	}
	return n
}

// write joins the entries that were not dropped. It computes the exact
// length first so that the result is built in a single allocation.
func write(es []entry, ord []int32, warns []Warning) (string, []Warning) {
	size := 0
	for _, i := range ord {
		e := &es[i]
		if e.tk == "" {
			continue
		}
		n := encodedLen(e.val)
		if n > maxValueBytes {
			warns = append(warns, Warning{Key: e.key,
				Message: "value encodes to " + strconv.Itoa(n) + " bytes (over 255): written, but the Collector and the JavaScript SDK reject it"})
		}
		if size > 0 {
			size++
		}
		size += len(e.tk) + 1 + n
	}
	if size == 0 {
		return "", warns
	}
	var b strings.Builder
	b.Grow(size)
	for _, i := range ord {
		e := &es[i]
		if e.tk == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(e.tk)
		b.WriteByte('=')
		writeEncoded(&b, e.val)
	}
	return b.String(), warns
}

// writeEncoded writes s percent-encoded, copying runs of unreserved bytes
// in one call.
func writeEncoded(b *strings.Builder, s string) {
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if unreserved(c) {
			continue
		}
		b.WriteString(s[start:i])
		b.WriteByte('%')
		b.WriteByte(upperHex[c>>4])
		b.WriteByte(upperHex[c&15])
		start = i + 1
	}
	b.WriteString(s[start:])
}
