package detect_test

import (
	"errors"
	"os"
	"reflect"
	"testing"

	"github.com/spank-otel/spank-otel/detect"
	"github.com/spank-otel/spank-otel/environ"
)

func TestLocal(t *testing.T) {
	threeGPUs := func() (int, bool) { return 3, true }
	noGPUs := func() (int, bool) { return 0, false }
	tests := []struct {
		name    string
		host    string
		hostErr error
		env     environ.Map
		opts    detect.Options
		want    detect.Attributes
	}{
		{"devices listed", "c1", nil, environ.Map{"CUDA_VISIBLE_DEVICES": "0,1,2"}, detect.Options{CountGPUs: noGPUs},
			detect.Attributes{"host.name": "c1", "process.pid": int64(42), "host.gpu.count": int64(3)}},
		{"one device", "c1", nil, environ.Map{"CUDA_VISIBLE_DEVICES": "GPU-8c2f9b1e-0000-0000-0000-000000000000"}, detect.Options{CountGPUs: threeGPUs},
			detect.Attributes{"host.name": "c1", "process.pid": int64(42), "host.gpu.count": int64(1)}},
		{"empty list is 0, not a query", "c1", nil, environ.Map{"CUDA_VISIBLE_DEVICES": ""}, detect.Options{CountGPUs: threeGPUs},
			detect.Attributes{"host.name": "c1", "process.pid": int64(42), "host.gpu.count": int64(0)}},
		{"blank entries are not devices", "c1", nil, environ.Map{"CUDA_VISIBLE_DEVICES": "0,,1, "}, detect.Options{CountGPUs: threeGPUs},
			detect.Attributes{"host.name": "c1", "process.pid": int64(42), "host.gpu.count": int64(2)}},
		{"unset list asks CountGPUs", "c1", nil, environ.Map{}, detect.Options{CountGPUs: threeGPUs},
			detect.Attributes{"host.name": "c1", "process.pid": int64(42), "host.gpu.count": int64(3)}},
		{"no count is omitted", "c1", nil, environ.Map{}, detect.Options{CountGPUs: noGPUs},
			detect.Attributes{"host.name": "c1", "process.pid": int64(42)}},
		{"without a counter nothing is run and the count is omitted", "c1", nil, environ.Map{}, detect.Options{},
			detect.Attributes{"host.name": "c1", "process.pid": int64(42)}},
		{"hostname error is omitted", "", errors.New("no"), environ.Map{}, detect.Options{CountGPUs: noGPUs},
			detect.Attributes{"process.pid": int64(42)}},
		{"empty hostname is omitted", "", nil, environ.Map{}, detect.Options{CountGPUs: noGPUs},
			detect.Attributes{"process.pid": int64(42)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			detect.SetSystem(t, tt.host, tt.hostErr, 42, false)
			if got := detect.Local(tt.env, tt.opts); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Local = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestLocalSystem: without SetSystem, Local asks the real system.
func TestLocalSystem(t *testing.T) {
	got := detect.Local(environ.Map{"CUDA_VISIBLE_DEVICES": "0"}, detect.Options{})
	name, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	want := detect.Attributes{"host.name": name, "process.pid": int64(os.Getpid()), "host.gpu.count": int64(1)}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Local = %v, want %v", got, want)
	}
}
