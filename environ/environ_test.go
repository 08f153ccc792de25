package environ_test

import (
	"reflect"
	"testing"

	"github.com/spank-otel/spank-otel/detect/slurm/slurmtest"
	"github.com/spank-otel/spank-otel/environ"
)

func TestList(t *testing.T) {
	tests := []struct {
		name string
		kv   []string
		want environ.Map
	}{
		{"nil", nil, environ.Map{}},
		{"simple", []string{"A=1", "B=2"}, environ.Map{"A": "1", "B": "2"}},
		{"first occurrence wins", []string{"A=1", "B=2", "A=3"}, environ.Map{"A": "1", "B": "2"}},
		{"first occurrence wins even when empty", []string{"A=", "A=3"}, environ.Map{"A": ""}},
		{"entries without '=' are ignored", []string{"A", "B=2", "A=1"}, environ.Map{"A": "1", "B": "2"}},
		{"value keeps later '='", []string{"OTEL_RESOURCE_ATTRIBUTES=a=1,b=2"}, environ.Map{"OTEL_RESOURCE_ATTRIBUTES": "a=1,b=2"}},
		{"empty value is set", []string{"CUDA_VISIBLE_DEVICES="}, environ.Map{"CUDA_VISIBLE_DEVICES": ""}},
		{"empty name", []string{"=x", "=y"}, environ.Map{"": "x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := environ.List(tt.kv)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("List = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestMapLookup(t *testing.T) {
	m := environ.Map{"SET": "v", "EMPTY": ""}
	for _, tt := range []struct {
		key   string
		value string
		ok    bool
	}{{"SET", "v", true}, {"EMPTY", "", true}, {"UNSET", "", false}} {
		if v, ok := m.Lookup(tt.key); v != tt.value || ok != tt.ok {
			t.Errorf("Lookup(%q) = %q, %v; want %q, %v", tt.key, v, ok, tt.value, tt.ok)
		}
	}
}

func TestTestdataTaskEnv(t *testing.T) {
	kv := slurmtest.TaskEnv(t)
	if n := len(kv); n < 55 || n > 70 {
		t.Errorf("task-env.txt has %d variables, want about 60", n)
	}
	if m := environ.List(kv); len(m) != len(kv) {
		t.Errorf("task-env.txt has %d lines but %d distinct names", len(kv), len(m))
	}
}

func BenchmarkList(b *testing.B) {
	kv := slurmtest.TaskEnv(b)
	b.ReportAllocs()
	for b.Loop() {
		_ = environ.List(kv)
	}
}
