package libcarrier

import "strings"

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
	m := make(map[string]string, strings.Count(s, ",")+1)
	var warns []Warning
	for len(s) > 0 {
		entry := s
		if i := strings.IndexByte(s, ','); i >= 0 {
			entry, s = s[:i], s[i+1:]
		} else {
			s = ""
		}
		if trimBlank(entry) == "" {
			continue
		}
		eq := strings.IndexByte(entry, '=')
		if eq < 0 {
			warns = append(warns, Warning{Message: "entry " + quote(entry) + " has no '=': dropped"})
			continue
		}
		key := trimBlank(entry[:eq])
		if key == "" {
			warns = append(warns, Warning{Message: "entry " + quote(entry) + " has an empty key: dropped"})
			continue
		}
		m[key] = unescape(trimBlank(entry[eq+1:]))
	}
	return m, warns
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
	first := validEscape(s)
	if first < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) - 2) // at least one %XX shrinks to one byte
	for i := first; i >= 0; i = validEscape(s) {
		b.WriteString(s[:i])
		b.WriteByte(unhex(s[i+1])<<4 | unhex(s[i+2]))
		s = s[i+3:]
	}
	b.WriteString(s)
	return b.String()
}

// validEscape returns the index of the first '%' in s that
// starts a valid %XX, or -1.
func validEscape(s string) int {
	for i := 0; ; i++ {
		j := strings.IndexByte(s[i:], '%')
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
