package libcarrier_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/spank-otel/spank-otel/libcarrier"
)

func TestRepair(t *testing.T) {
	long := strings.Repeat("k", 256)
	tests := []struct {
		name    string
		in      []libcarrier.KeyValue
		want    []libcarrier.KeyValue
		dropped []string // keys of the warnings, in order
	}{
		{"nothing to repair",
			[]libcarrier.KeyValue{{"a", "1"}, {"b", "x,y"}},
			[]libcarrier.KeyValue{{"a", "1"}, {"b", "x,y"}}, nil},
		{"empty",
			nil, nil, nil},
		{"invalid keys",
			[]libcarrier.KeyValue{{"good", "1"}, {"key%2Cpart", "v"}, {"semi;key", "x"}, {`q"`, "1"}, {`b\s`, "1"}, {"sp ace", "1"}, {"", "1"}, {long, "1"}, {"z", "2"}},
			[]libcarrier.KeyValue{{"good", "1"}, {"z", "2"}},
			[]string{"key%2Cpart", "semi;key", `q"`, `b\s`, "sp ace", "", long}},
		{"a value that is not UTF-8",
			[]libcarrier.KeyValue{{"a", "run-\xff"}, {"b", "é"}},
			[]libcarrier.KeyValue{{"b", "é"}},
			[]string{"a"}},
		{"a key above 0x7E",
			[]libcarrier.KeyValue{{"clé", "1"}},
			[]libcarrier.KeyValue{}, []string{"clé"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, warns := libcarrier.Repair(slices.Clone(tc.in))
			if !slices.Equal(got, tc.want) && !(len(got) == 0 && len(tc.want) == 0) {
				t.Errorf("Repair(%q) = %q, want %q", tc.in, got, tc.want)
			}
			var keys []string
			for _, w := range warns {
				keys = append(keys, w.Key)
				if !strings.HasSuffix(w.Message, ": dropped") {
					t.Errorf("warning %q does not say the entry was dropped", w)
				}
			}
			if !slices.Equal(keys, tc.dropped) {
				t.Errorf("warnings for %q, want %q", keys, tc.dropped)
			}
			// What is left is written back without loss.
			s, fw := libcarrier.FormatList(got)
			if len(fw) != 0 {
				t.Errorf("FormatList after Repair warns: %v", fw)
			}
			if back, _ := libcarrier.Parse(s); len(back) != len(got) {
				t.Errorf("FormatList after Repair wrote %q: %d entries, want %d", s, len(back), len(got))
			}
		})
	}
}

// TestRepairMatchesFormat: Repair drops exactly what FormatList drops, so
// that a repaired carrier loses nothing more when it is written.
func TestRepairMatchesFormat(t *testing.T) {
	for _, s := range []string{
		",,noequals,=novalue, ,k=v,,",
		"key%2Cpart=v,good=1,semi;key=x",
		"a=%FF,b=%C3%A9,c\x01=1,d=2",
		"x=1,\x7f=2,y=%E2%82",
	} {
		kvs, _ := libcarrier.AppendParse(nil, s)
		formatted, fw := libcarrier.FormatList(kvs)
		repaired, rw := libcarrier.Repair(slices.Clone(kvs))
		again, w := libcarrier.FormatList(repaired)
		if again != formatted || len(w) != 0 || len(rw) != len(fw) {
			t.Errorf("%q: Repair then FormatList gives %q (%v), FormatList alone %q; Repair warned %v, FormatList %v",
				s, again, w, formatted, rw, fw)
		}
	}
}
