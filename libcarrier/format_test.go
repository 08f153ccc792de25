package libcarrier_test

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spank-otel/spank-otel/libcarrier"
)

// stringCases hold string values only, so they run through both Format and
// FormatStrings: the two must apply the same rules.
var stringCases = []struct {
	name  string
	in    map[string]string
	want  string
	warns []string
}{
	{name: "nil map", in: nil, want: ""},
	{name: "empty map", in: map[string]string{}, want: ""},
	{name: "sorted bytewise", in: map[string]string{"b": "2", "a": "1", "B": "3", "a.b": "4", "a_": "5"},
		want: "B=3,a=1,a.b=4,a_=5,b=2"},
	{name: "empty value kept", in: map[string]string{"a": "", "b": "x"}, want: "a=,b=x"},
	{name: "key trimmed", in: map[string]string{" \ta\t ": "1"}, want: "a=1"},
	{name: "order uses trimmed key", in: map[string]string{" z": "1", "a": "2"}, want: "a=2,z=1"},
	{name: "key with allowed punctuation", in: map[string]string{"a:b/c@d+e!f#g$h&i'j(k)l*m<n>o?p[q]r^s`t{u|v}w~": "1"},
		want: "a:b/c@d+e!f#g$h&i'j(k)l*m<n>o?p[q]r^s`t{u|v}w~=1"},
	{name: "empty key dropped", in: map[string]string{"": "x", "a": "1"}, want: "a=1",
		warns: []string{`empty key: dropped`}},
	{name: "blank key dropped", in: map[string]string{" \t": "x"}, want: "",
		warns: []string{`key " \t": empty key: dropped`}},
	{name: "key of 255 bytes kept", in: map[string]string{strings.Repeat("k", 255): "1"}, want: strings.Repeat("k", 255) + "=1"},
	{name: "key of 256 bytes dropped", in: map[string]string{strings.Repeat("k", 256): "1", "a": "2"}, want: "a=2",
		warns: []string{`key "` + strings.Repeat("k", 64) + `"...: key longer than 255 bytes: dropped`}},
	{name: "key with inner space dropped", in: map[string]string{"a b": "1"}, want: "",
		warns: []string{`key "a b": key contains byte 0x20: dropped`}},
	{name: "key with control byte dropped", in: map[string]string{"a\x01": "1", "a\n": "2"}, want: "",
		warns: []string{`key "a\x01": key contains byte 0x01: dropped`, `key "a\n": key contains byte 0x0A: dropped`}},
	{name: "key with DEL dropped", in: map[string]string{"a\x7f": "1"}, want: "",
		warns: []string{`key "a\x7f": key contains byte 0x7F: dropped`}},
	{name: "key with non-ASCII dropped", in: map[string]string{"é": "1"}, want: "",
		warns: []string{`key "é": key contains byte 0xC3: dropped`}},
	{name: "key with separator characters dropped",
		in:   map[string]string{"a,": "1", "b=": "2", "c%": "3", "d;": "4", `e\`: "5", `f"`: "6", "ok": "7"},
		want: "ok=7",
		warns: []string{
			`key "a,": key contains ',': dropped`, `key "b=": key contains '=': dropped`,
			`key "c%": key contains '%': dropped`, `key "d;": key contains ';': dropped`,
			`key "e\\": key contains '\\': dropped`, `key "f\"": key contains '"': dropped`,
		}},
	{name: "invalid UTF-8 value dropped", in: map[string]string{"a": "ok", "b": "\xff", "c": "x\xc3"}, want: "a=ok",
		warns: []string{`key "b": value is not valid UTF-8: dropped`, `key "c": value is not valid UTF-8: dropped`}},
	{name: "unreserved bytes kept", in: map[string]string{"a": "AZaz09-._~"}, want: "a=AZaz09-._~"},
	{name: "reserved bytes encoded uppercase",
		in:   map[string]string{"a": ` !"#$%&'()*+,/:;<=>?@[\]^{|}` + "`"},
		want: "a=%20%21%22%23%24%25%26%27%28%29%2A%2B%2C%2F%3A%3B%3C%3D%3E%3F%40%5B%5C%5D%5E%7B%7C%7D%60"},
	{name: "control bytes encoded", in: map[string]string{"a": "\x00\t\n\r\x1f\x7f"}, want: "a=%00%09%0A%0D%1F%7F"},
	{name: "non-ASCII encoded bytewise", in: map[string]string{"a": "é日😀"},
		want: "a=%C3%A9%E6%97%A5%F0%9F%98%80"},
	{name: "value spaces at both ends kept", in: map[string]string{"a": " x "}, want: "a=%20x%20"},
	{name: "duplicate after trimming: last spelling wins",
		in:   map[string]string{"k": "plain", " k": "lead", "k\t": "tab", "k ": "space"},
		want: "k=space",
		warns: []string{
			`key " k": same key as "k" after trimming, which wins: dropped`,
			`key "k": same key as "k\t" after trimming, which wins: dropped`,
			`key "k\t": same key as "k " after trimming, which wins: dropped`,
		}},
	{name: "duplicate winner with invalid value drops the key",
		in:   map[string]string{"k": "ok", "k ": "\xff"},
		want: "",
		warns: []string{
			`key "k": same key as "k " after trimming, which wins: dropped`,
			`key "k ": value is not valid UTF-8: dropped`,
		}},
	{name: "encoded value of 255 bytes", in: map[string]string{"a": strings.Repeat("é", 42) + "xxx"},
		want: "a=" + strings.Repeat("%C3%A9", 42) + "xxx"},
	{name: "encoded value over 255 bytes written with warning", in: map[string]string{"a": strings.Repeat("é", 42) + "xxxx"},
		want:  "a=" + strings.Repeat("%C3%A9", 42) + "xxxx",
		warns: []string{`key "a": value encodes to 256 bytes (over 255): written, but the Collector and the JavaScript SDK reject it`}},
	{name: "long value of a trimmed key is reported under the key as given", in: map[string]string{" a": strings.Repeat("x", 256)},
		want:  "a=" + strings.Repeat("x", 256),
		warns: []string{`key " a": value encodes to 256 bytes (over 255): written, but the Collector and the JavaScript SDK reject it`}},
	{name: "keys sharing a prefix", in: map[string]string{"slurm.job.id": "1", "slurm.job.id.raw": "2", "slurm.job": "3", "slurm.jo": "4"},
		want: "slurm.jo=4,slurm.job=3,slurm.job.id=1,slurm.job.id.raw=2"},
}

func TestFormatStrings(t *testing.T) {
	for _, tt := range stringCases {
		t.Run(tt.name, func(t *testing.T) {
			got, warns := libcarrier.FormatStrings(tt.in)
			if got != tt.want {
				t.Errorf("FormatStrings(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if gotW := warningStrings(warns); !slices.Equal(gotW, tt.warns) {
				t.Errorf("FormatStrings(%q) warnings:\n got %q\nwant %q", tt.in, gotW, tt.warns)
			}
		})
	}
}

func TestFormatStringValues(t *testing.T) {
	for _, tt := range stringCases {
		t.Run(tt.name, func(t *testing.T) {
			var in map[string]any
			if tt.in != nil {
				in = make(map[string]any, len(tt.in))
				for k, v := range tt.in {
					in[k] = v
				}
			}
			got, warns := libcarrier.Format(in)
			if got != tt.want {
				t.Errorf("Format(%q) = %q, want %q", in, got, tt.want)
			}
			if gotW := warningStrings(warns); !slices.Equal(gotW, tt.warns) {
				t.Errorf("Format(%q) warnings:\n got %q\nwant %q", in, gotW, tt.warns)
			}
		})
	}
}

func TestFormatEveryByte(t *testing.T) {
	for c := 0; c < 0x80; c++ {
		in := string(rune(c))
		got, _ := libcarrier.FormatStrings(map[string]string{"k": in})
		unreserved := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.ContainsRune("-._~", rune(c))
		want := "k=" + in
		if !unreserved {
			want = fmt.Sprintf("k=%%%02X", c)
		}
		if got != want {
			t.Errorf("byte 0x%02X: got %q, want %q", c, got, want)
		}
	}
}

type myString string

func TestFormatValues(t *testing.T) {
	var nilPtr *int
	tests := []struct {
		name  string
		in    map[string]any
		want  string
		warns []string
	}{
		{name: "bool", in: map[string]any{"t": true, "f": false}, want: "f=false,t=true"},
		{name: "signed integers", in: map[string]any{"a": int(-1), "b": int8(-128), "c": int16(32767), "d": int32(-7), "e": int64(math.MinInt64)},
			want: "a=-1,b=-128,c=32767,d=-7,e=-9223372036854775808"},
		{name: "unsigned integers", in: map[string]any{"a": uint(1), "b": uint8(255), "c": uint16(65535), "d": uint32(7), "e": uint64(math.MaxUint64), "f": uintptr(9)},
			want: "a=1,b=255,c=65535,d=7,e=18446744073709551615,f=9"},
		{name: "nil omits the key", in: map[string]any{"a": nil, "b": "x"}, want: "b=x"},
		{name: "only nil", in: map[string]any{"a": nil}, want: ""},
		{name: "nil winner removes the key", in: map[string]any{"k": "x", "k ": nil}, want: "",
			warns: []string{`key "k": same key as "k " after trimming, which wins: dropped`}},
		{name: "nil loser is dropped", in: map[string]any{"k": "x", " k": nil}, want: "k=x",
			warns: []string{`key " k": same key as "k" after trimming, which wins: dropped`}},
		{name: "unsupported types dropped with their type",
			in:   map[string]any{"a": []byte("x"), "b": struct{}{}, "c": time.Second, "d": myString("s"), "e": nilPtr, "f": complex(1, 2), "ok": 1},
			want: "ok=1",
			warns: []string{
				`key "a": value of type []uint8 is not supported: dropped`,
				`key "b": value of type struct {} is not supported: dropped`,
				`key "c": value of type time.Duration is not supported: dropped`,
				`key "d": value of type libcarrier_test.myString is not supported: dropped`,
				`key "e": value of type *int is not supported: dropped`,
				`key "f": value of type complex128 is not supported: dropped`,
			}},
		{name: "non-finite floats dropped", in: map[string]any{"a": math.NaN(), "b": math.Inf(1), "c": float32(math.Inf(-1)), "d": 1.5},
			want: "d=1.5",
			warns: []string{
				`key "a": value NaN is not a finite number: dropped`,
				`key "b": value +Inf is not a finite number: dropped`,
				`key "c": value -Inf is not a finite number: dropped`,
			}},
		{name: "integers encoded only where needed", in: map[string]any{"a": -5}, want: "a=-5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, warns := libcarrier.Format(tt.in)
			if got != tt.want {
				t.Errorf("Format(%v) = %q, want %q", tt.in, got, tt.want)
			}
			if gotW := warningStrings(warns); !slices.Equal(gotW, tt.warns) {
				t.Errorf("Format(%v) warnings:\n got %q\nwant %q", tt.in, gotW, tt.warns)
			}
		})
	}
}

func TestFormatFloats(t *testing.T) {
	tests := []struct {
		in   any
		want string
	}{
		{0.0, "0"},
		{math.Copysign(0, -1), "-0"},
		{1.0, "1"},
		{1.5, "1.5"},
		{0.1, "0.1"},
		{-123456789.0, "-123456789"},
		{1e20, "100000000000000000000"},
		{1e21, "1e21"},
		{1.5e300, "1.5e300"},
		{1e-6, "0.000001"},
		{1e-7, "1e-7"},
		{-2.5e-7, "-2.5e-7"},
		{math.MaxFloat64, "1.7976931348623157e308"},
		{math.SmallestNonzeroFloat64, "5e-324"},
		{float32(0.1), "0.1"},
		{float32(16777216), "16777216"},
		{float32(1e21), "1e21"},
		{float32(1e-7), "1e-7"},
		{float32(math.MaxFloat32), "3.4028235e38"},
	}
	for _, tt := range tests {
		got, warns := libcarrier.Format(map[string]any{"f": tt.in})
		if got != "f="+tt.want || warns != nil {
			t.Errorf("Format(%T %v) = %q %v, want %q", tt.in, tt.in, got, warns, "f="+tt.want)
			continue
		}
		bits := 64
		want := tt.in
		if f, ok := tt.in.(float32); ok {
			bits, want = 32, float64(f)
		}
		back, err := strconv.ParseFloat(tt.want, bits)
		if err != nil || math.Float64bits(back) != math.Float64bits(want.(float64)) {
			t.Errorf("%q reads back as %v (%v), want %v", tt.want, back, err, want)
		}
	}
}

// TestFormatStringsAllocations checks the hot-path promise: one slice for
// sorting and one for the result.
func TestFormatStringsAllocations(t *testing.T) {
	m := map[string]string{
		"slurm.job.id": "42", "slurm.job.name": "train run #1", "nv.dl.rank": "3",
		"user.note": "a,b=c", "service.name": "nemo",
	}
	if got := testing.AllocsPerRun(100, func() { libcarrier.FormatStrings(m) }); got > 2 {
		t.Errorf("FormatStrings: %v allocations, want at most 2", got)
	}
}
