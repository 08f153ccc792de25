package detect_test

import (
	"reflect"
	"testing"

	"github.com/spank-otel/spank-otel/detect"
)

func TestEnvList(t *testing.T) {
	tests := []struct {
		name string
		kv   []string
		want detect.EnvMap
	}{
		{"nil", nil, detect.EnvMap{}},
		{"simple", []string{"A=1", "B=2"}, detect.EnvMap{"A": "1", "B": "2"}},
		{"first occurrence wins", []string{"A=1", "B=2", "A=3"}, detect.EnvMap{"A": "1", "B": "2"}},
		{"first occurrence wins even when empty", []string{"A=", "A=3"}, detect.EnvMap{"A": ""}},
		{"entries without '=' are ignored", []string{"A", "B=2", "A=1"}, detect.EnvMap{"A": "1", "B": "2"}},
		{"value keeps later '='", []string{"OTEL_RESOURCE_ATTRIBUTES=a=1,b=2"}, detect.EnvMap{"OTEL_RESOURCE_ATTRIBUTES": "a=1,b=2"}},
		{"empty value is set", []string{"CUDA_VISIBLE_DEVICES="}, detect.EnvMap{"CUDA_VISIBLE_DEVICES": ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := detect.EnvList(tt.kv)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("EnvList = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestEnvMapLookup(t *testing.T) {
	m := detect.EnvMap{"SET": "v", "EMPTY": ""}
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
	kv := taskEnv(t)
	if n := len(kv); n < 55 || n > 70 {
		t.Errorf("task-env.txt has %d variables, want about 60", n)
	}
	if m := detect.EnvList(kv); len(m) != len(kv) {
		t.Errorf("task-env.txt has %d lines but %d distinct names", len(kv), len(m))
	}
}

func BenchmarkEnvList(b *testing.B) {
	kv := taskEnv(b)
	b.ReportAllocs()
	for b.Loop() {
		_ = detect.EnvList(kv)
	}
}
