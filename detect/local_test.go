package detect

import (
	"errors"
	"os"
	"reflect"
	"testing"
)

func TestLocal(t *testing.T) {
	host := func() (string, error) { return "c1", nil }
	threeGPUs := func() (int, bool) { return 3, true }
	noGPUs := func() (int, bool) { return 0, false }
	tests := []struct {
		name string
		env  EnvMap
		opts LocalOptions
		want Attributes
	}{
		{"devices listed", EnvMap{"CUDA_VISIBLE_DEVICES": "0,1,2"}, LocalOptions{Hostname: host, PID: 42, CountGPUs: noGPUs},
			Attributes{"host.name": "c1", "process.pid": int64(42), "host.gpu.count": int64(3)}},
		{"one device", EnvMap{"CUDA_VISIBLE_DEVICES": "GPU-8c2f9b1e-0000-0000-0000-000000000000"}, LocalOptions{Hostname: host, PID: 42, CountGPUs: threeGPUs},
			Attributes{"host.name": "c1", "process.pid": int64(42), "host.gpu.count": int64(1)}},
		{"empty list is 0, not a query", EnvMap{"CUDA_VISIBLE_DEVICES": ""}, LocalOptions{Hostname: host, PID: 42, CountGPUs: threeGPUs},
			Attributes{"host.name": "c1", "process.pid": int64(42), "host.gpu.count": int64(0)}},
		{"blank entries are not devices", EnvMap{"CUDA_VISIBLE_DEVICES": "0,,1, "}, LocalOptions{Hostname: host, PID: 42, CountGPUs: threeGPUs},
			Attributes{"host.name": "c1", "process.pid": int64(42), "host.gpu.count": int64(2)}},
		{"unset list asks CountGPUs", EnvMap{}, LocalOptions{Hostname: host, PID: 42, CountGPUs: threeGPUs},
			Attributes{"host.name": "c1", "process.pid": int64(42), "host.gpu.count": int64(3)}},
		{"no count is omitted", EnvMap{}, LocalOptions{Hostname: host, PID: 42, CountGPUs: noGPUs},
			Attributes{"host.name": "c1", "process.pid": int64(42)}},
		{"hostname error is omitted", EnvMap{}, LocalOptions{Hostname: func() (string, error) { return "", errors.New("no") }, PID: 7, CountGPUs: noGPUs},
			Attributes{"process.pid": int64(7)}},
		{"empty hostname is omitted", EnvMap{}, LocalOptions{Hostname: func() (string, error) { return "", nil }, PID: 7, CountGPUs: noGPUs},
			Attributes{"process.pid": int64(7)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Local(tt.env, tt.opts); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Local = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestLocalDefaults(t *testing.T) {
	got := Local(EnvMap{"CUDA_VISIBLE_DEVICES": "0"}, LocalOptions{})
	name, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	want := Attributes{"host.name": name, "process.pid": int64(os.Getpid()), "host.gpu.count": int64(1)}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Local = %v, want %v", got, want)
	}
}

// Without a counter and without CUDA_VISIBLE_DEVICES, nothing is run and
// host.gpu.count is left out.
func TestLocalWithoutCounter(t *testing.T) {
	got := Local(EnvMap{}, LocalOptions{Hostname: func() (string, error) { return "h", nil }, PID: 1})
	if _, ok := got["host.gpu.count"]; ok {
		t.Errorf("host.gpu.count = %v, want it left out", got["host.gpu.count"])
	}
}
