package libcarrier_test

import (
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/spank-otel/spank-otel/libcarrier"
	"github.com/spank-otel/spank-otel/libcarrier/carriertest"
)

func FuzzParse(f *testing.F) {
	for _, s := range carriertest.Hostile {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, _ := libcarrier.Parse(s)
		if m == nil {
			t.Fatal("Parse returned a nil map")
		}
		for k := range m {
			if k == "" || strings.Trim(k, " \t") != k || strings.ContainsAny(k, ",=") {
				t.Fatalf("Parse(%q) produced key %q", s, k)
			}
		}
		canon, _ := libcarrier.FormatStrings(m)
		checkCanonical(t, canon)

		// The canonical form reads back to the representable part of m...
		back, warns := libcarrier.Parse(canon)
		if warns != nil {
			t.Fatalf("Parse(canonical %q) warned: %v", canon, warns)
		}
		if want := representable(m); !maps.Equal(back, want) {
			t.Fatalf("Parse(FormatStrings(Parse(%q))) = %q, want %q", s, back, want)
		}
		// ...and is a fixed point.
		again, warns := libcarrier.FormatStrings(back)
		if again != canon {
			t.Fatalf("not idempotent: %q then %q", canon, again)
		}
		for _, w := range warns {
			if !strings.Contains(w.Message, "bytes (over 255)") {
				t.Fatalf("formatting a canonical parse dropped something: %v", w)
			}
		}
	})
}

func FuzzFormat(f *testing.F) {
	// Keys are split on '\n' and values on '\x00', so that each byte can
	// appear in one of the two.
	f.Add("a\nb\nc", "1\x002\x003")
	f.Add(" k\nk\nk \n\tk", "lead\x00plain\x00trail\x00tab")
	f.Add("a,b\na=b\na%b\na;b\na\\b\na\"b\na b\n\x00\né", "1\x002\x003\x004\x005\x006\x007\x008\x009")
	f.Add("v", "\xff")
	f.Add("v\nw\nx", " é日😀 \x00+%2C,=;\\\"\t\x00"+strings.Repeat("é", 200))
	f.Add(strings.Repeat("k", 255)+"\n"+strings.Repeat("k", 256), "x\x00y")
	f.Add("\n ", "empty\x00blank")
	for _, s := range carriertest.Hostile {
		f.Add("k", s)
	}
	f.Fuzz(func(t *testing.T, keys, values string) {
		ks, vs := strings.Split(keys, "\n"), strings.Split(values, "\x00")
		m := make(map[string]string)
		for i := range min(len(ks), len(vs)) {
			m[ks[i]] = vs[i]
		}
		out, warns := libcarrier.FormatStrings(m)
		checkCanonical(t, out)
		back, pw := libcarrier.Parse(out)
		if pw != nil {
			t.Fatalf("Parse(%q) warned: %v", out, pw)
		}
		want := representable(m)
		if !maps.Equal(back, want) {
			t.Fatalf("Parse(FormatStrings(%q)) = %q, want %q", m, back, want)
		}
		// Every key given whose value is not written was warned about.
		// (Linear checks: the fuzzer tries inputs with many keys.)
		winners := winners(m)
		warned := make(map[string]bool, len(warns))
		for _, w := range warns {
			warned[w.Key] = true
		}
		for k := range m {
			tk := strings.Trim(k, " \t")
			if _, ok := want[tk]; ok && winners[tk] == k {
				continue
			}
			if !warned[k] {
				t.Fatalf("key %q was not written and not warned about (warnings %v)", k, warns)
			}
		}
		// Format applies the same rules to the same values.
		boxed := make(map[string]any, len(m))
		for k, v := range m {
			boxed[k] = v
		}
		if out2, warns2 := libcarrier.Format(boxed); out2 != out || !slices.Equal(warns2, warns) {
			t.Fatalf("Format = %q %v, FormatStrings = %q %v", out2, warns2, out, warns)
		}
	})
}

func FuzzFormatNumbers(f *testing.F) {
	f.Add(int64(0), uint64(0), 0.0, float32(0))
	f.Add(int64(math.MinInt64), uint64(math.MaxUint64), math.MaxFloat64, float32(math.MaxFloat32))
	f.Add(int64(-1), uint64(1), math.SmallestNonzeroFloat64, float32(math.SmallestNonzeroFloat32))
	f.Add(int64(7), uint64(7), 1e21, float32(1e-7))
	f.Add(int64(7), uint64(7), math.NaN(), float32(math.Inf(1)))
	f.Add(int64(7), uint64(7), math.Copysign(0, -1), float32(-0.1))
	f.Fuzz(func(t *testing.T, i int64, u uint64, d float64, s float32) {
		out, _ := libcarrier.Format(map[string]any{"i": i, "u": u, "d": d, "s": s})
		back, _ := libcarrier.Parse(out)
		if got, err := strconv.ParseInt(back["i"], 10, 64); err != nil || got != i {
			t.Fatalf("int64 %d came back as %q", i, back["i"])
		}
		if got, err := strconv.ParseUint(back["u"], 10, 64); err != nil || got != u {
			t.Fatalf("uint64 %d came back as %q", u, back["u"])
		}
		checkFloat(t, "d", d, 64, back)
		checkFloat(t, "s", float64(s), 32, back)
	})
}

func checkFloat(t *testing.T, key string, f float64, bits int, m map[string]string) {
	t.Helper()
	text, ok := m[key]
	if math.IsNaN(f) || math.IsInf(f, 0) {
		if ok {
			t.Fatalf("non-finite %v written as %q", f, text)
		}
		return
	}
	got, err := strconv.ParseFloat(text, bits)
	if !ok || err != nil || math.Float64bits(got) != math.Float64bits(f) {
		t.Fatalf("float%d %v came back as %q (%v)", bits, f, text, err)
	}
	// Shortest: the significant digits are those of strconv's shortest
	// exponent form.
	if digits(text) != digits(strconv.FormatFloat(f, 'e', -1, bits)) {
		t.Fatalf("float%d %v written as %q, not with the shortest digits %s", bits, f, text, strconv.FormatFloat(f, 'e', -1, bits))
	}
}

// digits returns the significant digits of a formatted number.
func digits(s string) string {
	s, _, _ = strings.Cut(s, "e")
	s = strings.NewReplacer("-", "", ".", "").Replace(s)
	return strings.TrimRight(strings.TrimLeft(s, "0"), "0")
}

// representable is what Parse(FormatStrings(m)) must give, computed
// independently of the package: per trimmed key the spelling that sorts
// last wins, then keys and values that cannot be written are left out.
func representable(m map[string]string) map[string]string {
	want := make(map[string]string)
	for tk, k := range winners(m) {
		if validKey(tk) && utf8.ValidString(m[k]) {
			want[tk] = m[k]
		}
	}
	return want
}

// winners maps each trimmed key of m to its spelling that sorts last.
func winners(m map[string]string) map[string]string {
	winner := make(map[string]string)
	for k := range m {
		tk := strings.Trim(k, " \t")
		if w, ok := winner[tk]; !ok || k > w {
			winner[tk] = k
		}
	}
	return winner
}

func validKey(k string) bool {
	if k == "" || len(k) > 255 {
		return false
	}
	for _, c := range []byte(k) {
		if c < 0x21 || c > 0x7e || strings.IndexByte(`,=%;\"`, c) >= 0 {
			return false
		}
	}
	return true
}

// checkCanonical checks the shape of a formatted carrier: sorted unique
// valid keys, values of unreserved bytes and uppercase %XX only.
func checkCanonical(t *testing.T, s string) {
	t.Helper()
	if s == "" {
		return
	}
	prev := ""
	for i, e := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(e, "=")
		if !ok || !validKey(k) {
			t.Fatalf("carrier %q: bad entry %q", s, e)
		}
		if i > 0 && k <= prev {
			t.Fatalf("carrier %q: key %q not after %q", s, k, prev)
		}
		prev = k
		for j := 0; j < len(v); j++ {
			c := v[j]
			switch {
			case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', strings.IndexByte("-._~", c) >= 0:
			case c == '%' && j+2 < len(v) && strings.IndexByte("0123456789ABCDEF", v[j+1]) >= 0 && strings.IndexByte("0123456789ABCDEF", v[j+2]) >= 0:
				j += 2
			default:
				t.Fatalf("carrier %q: value %q has unencoded byte %q", s, v, c)
			}
		}
	}
}
