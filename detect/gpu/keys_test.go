package gpu

import (
	"strconv"
	"testing"

	"github.com/spank-otel/spank-otel/internal/keys"
	"github.com/spank-otel/spank-otel/libcarrier"
)

// TestIsKey: the GPU keys, an ordinal of any number of digits included,
// and keys that only look like one.
func TestIsKey(t *testing.T) {
	tests := []struct {
		key  string
		want bool
	}{
		{"nv.gpu.count", true},
		{"nv.gpu.uuid", true},
		{"nv.gpu.uuids", true},
		{"nv.gpu.0.uuid", true},
		{"nv.gpu.15.uuid", true},
		{"nv.gpu.007.uuid", true},
		{"nv.gpu.index", false},
		{"nv.gpu.memory_total", false},
		{"nv.gpu.", false},
		{"nv.gpu..uuid", false},
		{"nv.gpu.x.uuid", false},
		{"nv.gpu.1.uuids", false},
		{"nv.gpu.1.2.uuid", false},
		{"host.gpu.count", false},
		{"slurm.job.id", false},
		{"", false},
	}
	for _, tt := range tests {
		if got := IsKey(tt.key); got != tt.want {
			t.Errorf("IsKey(%q) = %v, want %v", tt.key, got, tt.want)
		}
	}
}

// TestKeysInTable checks the keys the detector writes against the key
// table: each is a GPU key, and an integer key's value is an integer.
func TestKeysInTable(t *testing.T) {
	for _, n := range []int{1, 2, MaxGPUs} {
		uuids := make([]string, n)
		for i := range uuids {
			uuids[i] = "GPU-" + strconv.Itoa(i)
		}
		for _, kv := range Keys(uuids) {
			if keys.WriterOf(kv.Key) != keys.GPU {
				t.Errorf("%d GPUs: %s is not a GPU key of the table", n, kv.Key)
			}
			if _, ok := libcarrier.ParseInteger(kv.Value); ok != keys.IsInteger(kv.Key) {
				t.Errorf("%d GPUs: %s=%s, an integer: %v; the table's integer key: %v", n, kv.Key, kv.Value, ok, keys.IsInteger(kv.Key))
			}
		}
	}
}
