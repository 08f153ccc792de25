package libcarrier_test

import (
	"math"
	"reflect"
	"slices"
	"testing"

	"github.com/spank-otel/spank-otel/libcarrier"
)

var integerKeys = []string{
	"nv.dl.rank", "nv.dl.world_size", "nv.dl.local_rank",
	"nv.dl.topology.size.tp", "nv.dl.topology.size.pp", "nv.dl.topology.size.dp",
	"nv.dl.training.config.global_batch_size", "nv.dl.training.config.micro_batch_size",
	"nv.dl.training.config.sequence_length", "nv.dl.training.target.train_iters",
	"nv.dl.training.target.train_samples", "nv.dl.training.target.train_tokens",
	"nv.gpu.count", "nv.gpu.index", "nv.gpu.memory_total",
	"slurm.array.count", "slurm.nnodes", "slurm.ntasks", "slurm.restart_count",
}

func TestIsIntegerKey(t *testing.T) {
	for _, k := range integerKeys {
		if !libcarrier.IsIntegerKey(k) {
			t.Errorf("IsIntegerKey(%q) = false, want true", k)
		}
	}
	for _, k := range []string{
		"", "slurm.job.id", "slurm.array.task_id", "slurm.array.job_id", "nv.dl.job.uuid",
		"nv.dl.rank ", " nv.dl.rank", "NV.DL.RANK", "nv.dl", "nv.gpu.uuids", "host.gpu.count",
		"process.pid", "slurm.torchelastic.restart_count",
	} {
		if libcarrier.IsIntegerKey(k) {
			t.Errorf("IsIntegerKey(%q) = true, want false", k)
		}
	}
}

func TestParseInteger(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"7", 7, true},
		{" +007 ", 7, true},
		{"-1", -1, true},
		{"0", 0, true},
		{"-0", 0, true},
		{"+0", 0, true},
		{"   42", 42, true},
		{"9223372036854775807", math.MaxInt64, true},
		{"-9223372036854775808", math.MinInt64, true},
		{"0009223372036854775807", math.MaxInt64, true},
		{"9223372036854775808", 0, false},
		{"-9223372036854775809", 0, false},
		{"18446744073709551616", 0, false},
		{"99999999999999999999999", 0, false},
		{"3.5", 0, false},
		{"1e3", 0, false},
		{"1_000", 0, false},
		{"--1", 0, false},
		{"+-1", 0, false},
		{"true", 0, false},
		{"seven", 0, false},
		{"", 0, false},
		{" ", 0, false},
		{"+", 0, false},
		{"-", 0, false},
		{"0x10", 0, false},
		{"1 2", 0, false},
		{"\t7", 0, false},
		{"7\n", 0, false},
		{"٧", 0, false}, // ARABIC-INDIC DIGIT SEVEN
		{"７", 0, false}, // FULLWIDTH DIGIT SEVEN
		{"1,000", 0, false},
		{"- 1", 0, false},
	}
	for _, tt := range tests {
		got, ok := libcarrier.ParseInteger(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("ParseInteger(%q) = %d, %v; want %d, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestTyped(t *testing.T) {
	tests := []struct {
		name  string
		in    map[string]string
		want  map[string]any
		warns []string
	}{
		{name: "empty", in: map[string]string{}, want: map[string]any{}},
		{name: "integer keys converted",
			in:   map[string]string{"nv.dl.rank": "3", "nv.dl.world_size": " +008 ", "slurm.nnodes": "-1"},
			want: map[string]any{"nv.dl.rank": int64(3), "nv.dl.world_size": int64(8), "slurm.nnodes": int64(-1)}},
		{name: "other keys stay strings however numeric",
			in:   map[string]string{"slurm.job.id": "007", "user.count": "12", "slurm.array.task_id": "3"},
			want: map[string]any{"slurm.job.id": "007", "user.count": "12", "slurm.array.task_id": "3"}},
		{name: "invalid non-slurm integer kept as string with warning",
			in:    map[string]string{"nv.dl.rank": "3.5", "nv.gpu.index": ""},
			want:  map[string]any{"nv.dl.rank": "3.5", "nv.gpu.index": ""},
			warns: []string{`key "nv.dl.rank": value "3.5" is not an integer: kept as a string`, `key "nv.gpu.index": value "" is not an integer: kept as a string`}},
		{name: "invalid slurm integer dropped with warning",
			in:    map[string]string{"slurm.ntasks": "seven", "slurm.restart_count": "1e3", "slurm.job.id": "1"},
			want:  map[string]any{"slurm.job.id": "1"},
			warns: []string{`key "slurm.ntasks": value "seven" is not an integer: dropped`, `key "slurm.restart_count": value "1e3" is not an integer: dropped`}},
		{name: "overflow is not an integer",
			in:    map[string]string{"nv.gpu.memory_total": "9223372036854775808"},
			want:  map[string]any{"nv.gpu.memory_total": "9223372036854775808"},
			warns: []string{`key "nv.gpu.memory_total": value "9223372036854775808" is not an integer: kept as a string`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := make(map[string]string, len(tt.in))
			for k, v := range tt.in {
				in[k] = v
			}
			got, warns := libcarrier.Typed(in)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Typed(%q) = %#v, want %#v", tt.in, got, tt.want)
			}
			if !reflect.DeepEqual(in, tt.in) {
				t.Errorf("Typed modified its input: %q", in)
			}
			if gotW := warningStrings(warns); !slices.Equal(gotW, tt.warns) {
				t.Errorf("Typed(%q) warnings:\n got %q\nwant %q", tt.in, gotW, tt.warns)
			}
		})
	}
}
