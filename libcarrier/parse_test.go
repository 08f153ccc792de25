package libcarrier_test

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/spank-otel/spank-otel/libcarrier"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		want  map[string]string
		warns []string // Warning.String() of every warning, in order
	}{
		{name: "empty", in: "", want: map[string]string{}},
		{name: "one pair", in: "a=b", want: map[string]string{"a": "b"}},
		{name: "several pairs", in: "a=1,b=2,c=3", want: map[string]string{"a": "1", "b": "2", "c": "3"}},
		{name: "blank entries skipped", in: ",a=1,, ,\t,b=2,", want: map[string]string{"a": "1", "b": "2"}},
		{name: "only commas", in: ",,,", want: map[string]string{}},
		{name: "entry without equals dropped", in: "a=1,oops,b=2", want: map[string]string{"a": "1", "b": "2"},
			warns: []string{`entry "oops" has no '=': dropped`}},
		{name: "empty key dropped", in: "=v,a=1", want: map[string]string{"a": "1"},
			warns: []string{`entry "=v" has an empty key: dropped`}},
		{name: "blank key dropped", in: " \t =v", want: map[string]string{},
			warns: []string{`entry " \t =v" has an empty key: dropped`}},
		{name: "key trimmed of spaces and tabs", in: " \ta\t =1", want: map[string]string{"a": "1"}},
		{name: "key not trimmed of other whitespace", in: "\na\r=1", want: map[string]string{"\na\r": "1"}},
		{name: "key not decoded", in: "a%2Cb=1", want: map[string]string{"a%2Cb": "1"}},
		{name: "key is text before first equals", in: "a=b=c", want: map[string]string{"a": "b=c"}},
		{name: "value trimmed", in: "a= \t x y \t ", want: map[string]string{"a": "x y"}},
		{name: "value not trimmed of newline", in: "a=\nx\n", want: map[string]string{"a": "\nx\n"}},
		{name: "trimmed before decoding", in: "a=%20x%20", want: map[string]string{"a": " x "}},
		{name: "empty value kept", in: "a=,b= ", want: map[string]string{"a": "", "b": ""}},
		{name: "valid escapes decoded", in: "a=%2C%3D%25%41%7e", want: map[string]string{"a": ",=%A~"}},
		{name: "lower-case hex decoded", in: "a=%c3%a9", want: map[string]string{"a": "é"}},
		{name: "plus stays plus", in: "a=x+y%2B", want: map[string]string{"a": "x+y+"}},
		{name: "invalid escape kept", in: "a=%zz%G1%1g", want: map[string]string{"a": "%zz%G1%1g"}},
		{name: "truncated escape kept", in: "a=%,b=%4,c=x%", want: map[string]string{"a": "%", "b": "%4", "c": "x%"}},
		{name: "mixed valid and invalid", in: "a=%%41%4%41%", want: map[string]string{"a": "%A%4A%"}},
		{name: "decoded bytes need not be UTF-8", in: "a=%FF", want: map[string]string{"a": "\xff"}},
		{name: "duplicate keys last wins", in: "a=1,b=2,a=3", want: map[string]string{"a": "3", "b": "2"}},
		{name: "duplicate after trimming last wins", in: "a=1, a =2", want: map[string]string{"a": "2"}},
		{name: "several warnings in order", in: "x,=y,z", want: map[string]string{},
			warns: []string{`entry "x" has no '=': dropped`, `entry "=y" has an empty key: dropped`, `entry "z" has no '=': dropped`}},
		{name: "long entry clipped in warning", in: strings.Repeat("x", 100), want: map[string]string{},
			warns: []string{`entry "` + strings.Repeat("x", 64) + `"... has no '=': dropped`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, warns := libcarrier.Parse(tt.in)
			if got == nil {
				t.Fatal("Parse returned a nil map")
			}
			if !maps.Equal(got, tt.want) {
				t.Errorf("Parse(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if gotW := warningStrings(warns); !slices.Equal(gotW, tt.warns) {
				t.Errorf("Parse(%q) warnings = %q, want %q", tt.in, gotW, tt.warns)
			}
			for _, w := range warns {
				if w.Key != "" {
					t.Errorf("Parse warning %q has a key; entries without a usable key have none", w)
				}
			}
		})
	}
}

// TestParseAllocations checks the allocation promise: Parse allocates the
// map and one string per value that holds a valid %XX, nothing else.
func TestParseAllocations(t *testing.T) {
	tests := []struct {
		in      string
		escaped int
	}{
		{"slurm.job.id=42,slurm.nnodes=2,user.key=plain-value,odd=%zz+", 0},
		{"a=x%2Cy,b=plain,c=%C3%A9", 2},
		{strings.Repeat("slurm.job.name=train%20run,nv.dl.rank=3,", 20), 20},
	}
	for _, tt := range tests {
		n := strings.Count(tt.in, ",") + 1
		var sink map[string]string
		base := testing.AllocsPerRun(100, func() { sink = make(map[string]string, n); sink["k"] = "v" })
		got := testing.AllocsPerRun(100, func() { sink, _ = libcarrier.Parse(tt.in) })
		if want := base + float64(tt.escaped); got != want {
			t.Errorf("Parse(%.40q...): %v allocations, want %v (map %v + escaped values %d)", tt.in, got, want, base, tt.escaped)
		}
	}
}

func TestWarningString(t *testing.T) {
	tests := []struct {
		w    libcarrier.Warning
		want string
	}{
		{libcarrier.Warning{Message: "m"}, "m"},
		{libcarrier.Warning{Key: "k", Message: "m"}, `key "k": m`},
		{libcarrier.Warning{Key: "a\tb", Message: "m"}, `key "a\tb": m`},
		{libcarrier.Warning{Key: strings.Repeat("k", 65), Message: "m"}, `key "` + strings.Repeat("k", 64) + `"...: m`},
	}
	for _, tt := range tests {
		if got := tt.w.String(); got != tt.want {
			t.Errorf("%#v.String() = %q, want %q", tt.w, got, tt.want)
		}
	}
}

func warningStrings(ws []libcarrier.Warning) []string {
	var out []string
	for _, w := range ws {
		out = append(out, w.String())
	}
	return out
}

// TestParseKeepsAtMostMaxWarnings: a carrier of many bad entries costs
// MaxWarnings warnings and one that counts the rest, whatever its size
// (the plugin's helper runs without a garbage collector).
func TestParseKeepsAtMostMaxWarnings(t *testing.T) {
	bad := strings.Repeat("x,", 1000) + "k=v"
	for name, warns := range map[string][]libcarrier.Warning{
		"Parse":       second(libcarrier.Parse(bad)),
		"AppendParse": second(libcarrier.AppendParse(nil, bad)),
	} {
		if len(warns) != libcarrier.MaxWarnings+1 || warns[0].Message != `entry "x" has no '=': dropped` ||
			warns[libcarrier.MaxWarnings].Message != "936 more warnings like these, not kept" {
			t.Errorf("%s: %d warnings, first %v, last %v", name, len(warns), warns[0], warns[len(warns)-1])
		}
	}
	kvs := make([]libcarrier.KeyValue, 0, 200)
	for i := range 200 {
		kvs = append(kvs, libcarrier.KeyValue{Key: "k" + strconv.Itoa(i), Value: "\xff"})
	}
	if _, warns := libcarrier.Repair(kvs); len(warns) != libcarrier.MaxWarnings+1 || warns[libcarrier.MaxWarnings].Message != "136 more warnings like these, not kept" {
		t.Errorf("Repair: %d warnings, last %v", len(warns), warns[len(warns)-1])
	}
}

func second[A, B any](_ A, b B) B { return b }
