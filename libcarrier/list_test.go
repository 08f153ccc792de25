package libcarrier_test

import (
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/spank-otel/spank-otel/libcarrier"
	"github.com/spank-otel/spank-otel/libcarrier/carriertest"
)

// assigned is the map that assigning kvs in order builds: the reference
// for the list functions.
func assigned(kvs []libcarrier.KeyValue) map[string]string {
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		m[kv.Key] = kv.Value
	}
	return m
}

func TestAppendParse(t *testing.T) {
	tests := []struct {
		in    string
		want  []libcarrier.KeyValue
		warns []string
	}{
		{in: "", want: nil},
		{in: "b=2,a=1,c=3", want: []libcarrier.KeyValue{{Key: "a", Value: "1"}, {Key: "b", Value: "2"}, {Key: "c", Value: "3"}}},
		{in: "a=1,b=2,a=3", want: []libcarrier.KeyValue{{Key: "a", Value: "3"}, {Key: "b", Value: "2"}}},
		{in: "a=1, a =2,a=3 , a=4", want: []libcarrier.KeyValue{{Key: "a", Value: "4"}}},
		{in: "x=%2C,y=plain,z=%zz%41", want: []libcarrier.KeyValue{{Key: "x", Value: ","}, {Key: "y", Value: "plain"}, {Key: "z", Value: "%zzA"}}},
		{in: "a=1,oops,=v", want: []libcarrier.KeyValue{{Key: "a", Value: "1"}},
			warns: []string{`entry "oops" has no '=': dropped`, `entry "=v" has an empty key: dropped`}},
	}
	for _, tt := range tests {
		prefix := []libcarrier.KeyValue{{Key: "z", Value: "kept"}, {Key: "a", Value: "kept"}}
		got, warns := libcarrier.AppendParse(slices.Clip(slices.Clone(prefix)), tt.in)
		if !slices.Equal(got[:2], prefix) {
			t.Errorf("AppendParse(%q) changed dst to %q", tt.in, got[:2])
		}
		if got := got[2:]; !slices.Equal(got, tt.want) {
			t.Errorf("AppendParse(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if gotW := warningStrings(warns); !slices.Equal(gotW, tt.warns) {
			t.Errorf("AppendParse(%q) warnings = %q, want %q", tt.in, gotW, tt.warns)
		}
	}
}

// checkAppendParse checks AppendParse against Parse: the same entries,
// sorted by key with distinct keys, and the same warnings.
func checkAppendParse(t *testing.T, s string) {
	t.Helper()
	m, warns := libcarrier.Parse(s)
	kvs, aw := libcarrier.AppendParse(nil, s)
	for i := 1; i < len(kvs); i++ {
		if kvs[i-1].Key >= kvs[i].Key {
			t.Fatalf("AppendParse(%q): keys not strictly ascending: %q", s, kvs)
		}
	}
	if got := assigned(kvs); !maps.Equal(got, m) {
		t.Fatalf("AppendParse(%q) = %q, Parse = %q", s, kvs, m)
	}
	if !slices.Equal(aw, warns) {
		t.Fatalf("AppendParse(%q) warnings %v, Parse %v", s, aw, warns)
	}
}

func TestAppendParseMatchesParse(t *testing.T) {
	for _, s := range carriertest.Hostile {
		checkAppendParse(t, s)
	}
	checkAppendParse(t, "c=3,b=%41,a=1,b=2,a=%2C%2c,c=")
}

func FuzzAppendParse(f *testing.F) {
	for _, s := range carriertest.Hostile {
		f.Add(s)
	}
	f.Add("c=3,b=%41,a=1,b=2,a=%2C%2c,c=")
	f.Fuzz(checkAppendParse)
}

// TestAppendParseAllocations checks the hot-path promise: with room in
// dst, the values that hold a valid %XX share one allocation, and nothing
// else allocates.
func TestAppendParseAllocations(t *testing.T) {
	tests := []struct {
		in     string
		allocs float64
	}{
		{"slurm.job.id=42,slurm.nnodes=2,user.key=plain-value,odd=%zz+", 0},
		{"b=2,a=1,c=3,a=4", 0},
		{"a=x%2Cy,b=plain,c=%C3%A9", 1},
		{strings.Repeat("slurm.job.name=train%20run,nv.dl.rank=3,", 20), 1},
	}
	for _, tt := range tests {
		buf := make([]libcarrier.KeyValue, 0, 64)
		got := testing.AllocsPerRun(100, func() { libcarrier.AppendParse(buf, tt.in) })
		if got != tt.allocs {
			t.Errorf("AppendParse(%.40q...): %v allocations, want %v", tt.in, got, tt.allocs)
		}
	}
}

func TestFormatList(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	for _, tt := range stringCases {
		t.Run(tt.name, func(t *testing.T) {
			var kvs []libcarrier.KeyValue
			for k, v := range tt.in {
				kvs = append(kvs, libcarrier.KeyValue{Key: k, Value: v})
			}
			sorted := slices.SortedFunc(slices.Values(kvs), func(a, b libcarrier.KeyValue) int { return strings.Compare(a.Key, b.Key) })
			shuffled := slices.Clone(sorted)
			rnd.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
			for _, in := range [][]libcarrier.KeyValue{sorted, shuffled} {
				before := slices.Clone(in)
				got, warns := libcarrier.FormatList(in)
				if got != tt.want {
					t.Errorf("FormatList(%q) = %q, want %q", in, got, tt.want)
				}
				if gotW := warningStrings(warns); !slices.Equal(gotW, tt.warns) {
					t.Errorf("FormatList(%q) warnings:\n got %q\nwant %q", in, gotW, tt.warns)
				}
				if !slices.Equal(in, before) {
					t.Errorf("FormatList modified its input: %q", in)
				}
			}
		})
	}
}

func TestFormatListRepeatedKeys(t *testing.T) {
	tests := []struct {
		in    []libcarrier.KeyValue
		want  string
		warns []string
	}{
		{in: []libcarrier.KeyValue{{Key: "a", Value: "1"}, {Key: "a", Value: "2"}}, want: "a=2"},
		{in: []libcarrier.KeyValue{{Key: "b", Value: "x"}, {Key: "a", Value: "1"}, {Key: "b", Value: "y"}, {Key: "a", Value: "2"}}, want: "a=2,b=y"},
		{in: []libcarrier.KeyValue{{Key: "a", Value: "\xff"}, {Key: "a", Value: "ok"}}, want: "a=ok"},
		{in: []libcarrier.KeyValue{{Key: "a", Value: "ok"}, {Key: "a", Value: "\xff"}}, want: "",
			warns: []string{`key "a": value is not valid UTF-8: dropped`}},
		{in: []libcarrier.KeyValue{{Key: "a b", Value: "1"}, {Key: "a b", Value: "2"}}, want: "",
			warns: []string{`key "a b": key contains byte 0x20: dropped`}},
		{in: []libcarrier.KeyValue{{Key: " k", Value: "1"}, {Key: "k", Value: "2"}, {Key: " k", Value: "3"}}, want: "k=2",
			warns: []string{`key " k": same key as "k" after trimming, which wins: dropped`}},
	}
	for _, tt := range tests {
		got, warns := libcarrier.FormatList(tt.in)
		if got != tt.want {
			t.Errorf("FormatList(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if gotW := warningStrings(warns); !slices.Equal(gotW, tt.warns) {
			t.Errorf("FormatList(%q) warnings:\n got %q\nwant %q", tt.in, gotW, tt.warns)
		}
		// The contract: what FormatStrings does with the map built in order.
		ms, mw := libcarrier.FormatStrings(assigned(tt.in))
		if ms != got || !slices.Equal(mw, warns) {
			t.Errorf("FormatList(%q) = %q %v; FormatStrings of its map = %q %v", tt.in, got, warns, ms, mw)
		}
	}
}

// FuzzFormatList checks FormatList against its definition, FormatStrings
// of the map that assigning the entries in order builds, for entries in
// the order given (repeated keys included) and sorted.
func FuzzFormatList(f *testing.F) {
	f.Add("a\nb\nc", "1\x002\x003")
	f.Add("b\na\nb\na", "1\x002\x003\x004")
	f.Add(" k\nk\nk \n\tk\n k", "lead\x00plain\x00trail\x00tab\x00again")
	f.Add("a,b\na=b\na%b\n\x00\né\nok", "1\x002\x003\x004\x005\x006")
	f.Add("v\nv\nw", "\xff\x00ok\x00"+strings.Repeat("é", 200))
	for _, s := range carriertest.Hostile {
		f.Add("k", s)
	}
	f.Fuzz(func(t *testing.T, keys, values string) {
		ks, vs := strings.Split(keys, "\n"), strings.Split(values, "\x00")
		var kvs []libcarrier.KeyValue
		for i := range min(len(ks), len(vs)) {
			kvs = append(kvs, libcarrier.KeyValue{Key: ks[i], Value: vs[i]})
		}
		want, wantW := libcarrier.FormatStrings(assigned(kvs))
		sorted := slices.Clone(kvs)
		slices.SortStableFunc(sorted, func(a, b libcarrier.KeyValue) int { return strings.Compare(a.Key, b.Key) })
		for _, in := range [][]libcarrier.KeyValue{kvs, sorted} {
			got, warns := libcarrier.FormatList(in)
			if got != want || !slices.Equal(warns, wantW) {
				t.Fatalf("FormatList(%q) = %q %v, want %q %v", in, got, warns, want, wantW)
			}
		}
	})
}

// TestFormatListAllocations checks the hot-path promise: sorted entries
// with valid keys and values allocate the result only.
func TestFormatListAllocations(t *testing.T) {
	kvs, _ := libcarrier.AppendParse(nil, "a=1,b=x%2Cy,c=%C3%A9,slurm.job.name=train%20run")
	if got := testing.AllocsPerRun(100, func() { libcarrier.FormatList(kvs) }); got != 1 {
		t.Errorf("FormatList: %v allocations, want 1", got)
	}
}

// TestBufferIsShared checks Buffer.AppendParse and Buffer.FormatList on
// one Buffer, as the per-task path uses them: each gives what its
// allocating form gives, whether the buffer has room for both, for one or
// for neither, and what one wrote stays as it was after the other writes.
func TestBufferIsShared(t *testing.T) {
	for _, tt := range stringCases {
		var kvs []libcarrier.KeyValue
		for k, v := range tt.in {
			kvs = append(kvs, libcarrier.KeyValue{Key: k, Value: v})
		}
		for _, room := range []int{0, 16, 4096} {
			buf := make([]byte, 3, 3+room)
			copy(buf, "abc")
			var b libcarrier.Buffer
			b.Use(buf)

			wantKVs, wantParseW := libcarrier.AppendParse(nil, tt.want)
			gotKVs, gotParseW := b.AppendParse(nil, tt.want)
			decoded := slices.Clone(gotKVs)
			if !slices.Equal(gotKVs, wantKVs) || !slices.Equal(gotParseW, wantParseW) {
				t.Errorf("%s, room %d: Buffer.AppendParse = %q %v, AppendParse = %q %v", tt.name, room, gotKVs, gotParseW, wantKVs, wantParseW)
			}
			want, wantW := libcarrier.FormatList(kvs)
			got, gotW := b.FormatList(kvs)
			if got != want || !slices.Equal(gotW, wantW) {
				t.Errorf("%s, room %d: Buffer.FormatList = %q %v, FormatList = %q %v", tt.name, room, got, gotW, want, wantW)
			}
			if !slices.Equal(gotKVs, decoded) {
				t.Errorf("%s, room %d: formatting changed the decoded values: %q, were %q", tt.name, room, gotKVs, decoded)
			}
			if string(buf) != "abc" {
				t.Errorf("%s, room %d: the bytes before the room changed: %q", tt.name, room, buf)
			}
		}
	}
}
