package otelresource

import (
	"context"
	"errors"
	"maps"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/spank-otel/spank-otel/detect"
	"github.com/spank-otel/spank-otel/detect/slurm/slurmtest"
	"github.com/spank-otel/spank-otel/environ"
	"github.com/spank-otel/spank-otel/libcarrier"
)

// values returns the key-values as a map of Go values (string, int64, bool,
// float64), so that a comparison checks types as well as values.
func values(kvs []attribute.KeyValue) map[string]any {
	m := make(map[string]any, len(kvs))
	for _, kv := range kvs {
		m[string(kv.Key)] = kv.Value.AsInterface()
	}
	return m
}

// options count 8 GPUs, so that results do not depend on nvidia-smi.
var options = detect.Options{CountGPUs: func() (int, bool) { return 8, true }}

// local returns want with the host's name and this process's id added, as
// the local detector finds them.
func local(t testing.TB, want map[string]any) map[string]any {
	t.Helper()
	name, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	out := maps.Clone(want)
	out["host.name"] = name
	out["process.pid"] = int64(os.Getpid())
	return out
}

// taskWant is what the detector finds in the shared task environment.
// The host name and process id are added by local.
var taskWant = map[string]any{
	"host.gpu.count":              int64(2), // CUDA_VISIBLE_DEVICES=0,1
	"slurm.job.id":                "4242",
	"slurm.job.id.raw":            "4242",
	"slurm.array.job_id":          "4242",
	"slurm.array.task_id":         "0",
	"slurm.array.count":           int64(1),
	"slurm.restart_count":         int64(0),
	"slurm.cluster.name":          "cluster-a",
	"slurm.job.name":              "train.sbatch",
	"slurm.job.user":              "alice",
	"slurm.job.account":           "research",
	"slurm.job.qos":               "normal",
	"slurm.partition":             "gpu",
	"slurm.nnodes":                int64(2),
	"slurm.ntasks":                int64(4),
	"slurm.node.name":             "c1",
	"slurm.step.id":               int64(0),
	"slurm.step.ntasks":           int64(4),
	"slurm.task.id":               int64(1),
	"slurm.task.local_id":         int64(1),
	"slurm.topology.addr":         "c1",
	"slurm.topology.addr_pattern": "node",
	"nv.dl.job.uuid":              slurmtest.JobUUID("cluster-a", "4242"),
}

func TestDetectorWithSDK(t *testing.T) {
	ctx := context.Background()
	withHead := maps.Clone(taskWant)
	withHead["slurm.head_node.name"] = "c1"
	tests := []struct {
		name  string
		env   environ.Env
		want  map[string]any
		warns []string
	}{
		{"task", environ.List(slurmtest.TaskEnv(t)), taskWant, nil},
		{"task with inherited carrier", environ.List(slurmtest.TaskEnvWithCarrier(t)), withHead, nil},
		{"nil environment", nil, map[string]any{"host.gpu.count": int64(8)}, nil},
		{"kubernetes", environ.Map{"KUBERNETES_SERVICE_HOST": "10.96.0.1", "K8S_POD_NAME": "p", "CUDA_VISIBLE_DEVICES": ""},
			map[string]any{"host.gpu.count": int64(0), "k8s.pod.name": "p"}, nil},
		{"partial", environ.Map{"SLURM_JOB_ID": "7", "SLURM_NTASKS": "many", libcarrier.EnvVar: "slurm.nnodes=x,nv.dl.run.uuid=R"},
			map[string]any{"host.gpu.count": int64(8),
				"slurm.job.id": "7", "slurm.job.id.raw": "7", "slurm.array.job_id": "7", "slurm.array.task_id": "0",
				"slurm.array.count": int64(1), "slurm.restart_count": int64(0), "nv.dl.run.uuid": "R",
				"nv.dl.job.uuid": slurmtest.JobUUID("nocluster", "7")},
			[]string{"slurm.nnodes", "slurm.ntasks"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := NewDetector(tt.env, WithDetectOptions(options))
			res, err := resource.New(ctx, resource.WithDetectors(d))
			if got, want := values(res.Attributes()), local(t, tt.want); !reflect.DeepEqual(got, want) {
				t.Errorf("resource =\n%v\nwant\n%v", got, want)
			}
			if res.SchemaURL() != "" {
				t.Errorf("schema URL %q, want none", res.SchemaURL())
			}
			if tt.warns == nil {
				if err != nil {
					t.Errorf("resource.New: %v", err)
				}
				return
			}
			if !errors.Is(err, resource.ErrPartialResource) {
				t.Fatalf("error %v does not match ErrPartialResource", err)
			}
			var pe *PartialError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v is not a *PartialError", err)
			}
			var keys []string
			for _, w := range pe.Warnings {
				keys = append(keys, w.Key)
			}
			if !slices.Equal(keys, tt.warns) {
				t.Errorf("warnings %v, want keys %v", pe.Warnings, tt.warns)
			}
		})
	}
}

func TestDetectorMergesWithSDKDetectors(t *testing.T) {
	d := NewDetector(environ.Map{"SLURM_JOB_ID": "7", "SLURM_CLUSTER_NAME": "c"}, WithDetectOptions(options))
	res, err := resource.New(context.Background(), resource.WithTelemetrySDK(), resource.WithDetectors(d))
	if err != nil {
		t.Fatal(err)
	}
	got := values(res.Attributes())
	if got["telemetry.sdk.language"] != "go" || got["slurm.job.id"] != "7" || got["slurm.nnodes"] != nil {
		t.Errorf("merged resource %v", got)
	}
	if got, ok := res.Set().Value("slurm.array.count"); !ok || got.Type() != attribute.INT64 {
		t.Errorf("slurm.array.count = %v (%v), want an INT64", got, got.Type())
	}
}

func TestDetectorCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := NewDetector(environ.Map{}, WithDetectOptions(options)).Detect(ctx)
	if res != nil || !errors.Is(err, context.Canceled) {
		t.Errorf("Detect = %v, %v; want nil, context.Canceled", res, err)
	}
}

func TestPartialErrorText(t *testing.T) {
	err := &PartialError{Warnings: []libcarrier.Warning{{Key: "a", Message: "m1"}, {Message: "m2"}}}
	if got, want := err.Error(), `partial resource: key "a": m1; m2`; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

func TestKeyValues(t *testing.T) {
	got := KeyValues(detect.Attributes{
		"s": "x", "i": int64(-3), "n": 7, "u8": uint8(8), "b": true, "f": 1.5,
		"big": uint64(1 << 63), "slice": []string{"no"},
	})
	want := map[string]any{"s": "x", "i": int64(-3), "n": int64(7), "u8": int64(8), "b": true, "f": 1.5}
	if !reflect.DeepEqual(values(got), want) {
		t.Errorf("KeyValues = %v, want %v", values(got), want)
	}
	if !slices.IsSortedFunc(got, func(a, b attribute.KeyValue) int { return strings.Compare(string(a.Key), string(b.Key)) }) {
		t.Errorf("KeyValues not sorted: %v", got)
	}
}

// TestDetectorCountsGPUsUnderItsContext: nvidia-smi runs under the context
// given to Detect, so the caller's deadline bounds it.
func TestDetectorCountsGPUsUnderItsContext(t *testing.T) {
	type key struct{}
	d := NewDetector(environ.Map{})
	var seen any
	d.countGPUs = func(ctx context.Context) (int, bool) {
		seen = ctx.Value(key{})
		return 4, true
	}
	res, err := d.Detect(context.WithValue(context.Background(), key{}, "caller"))
	if err != nil {
		t.Fatal(err)
	}
	if seen != "caller" {
		t.Errorf("nvidia-smi counted under another context (value %v)", seen)
	}
	if v, ok := res.Set().Value("host.gpu.count"); !ok || v.AsInt64() != 4 {
		t.Errorf("host.gpu.count = %v, %v", v, ok)
	}
	// A counter of the caller's own replaces nvidia-smi.
	d = NewDetector(environ.Map{}, WithDetectOptions(detect.Options{CountGPUs: func() (int, bool) { return 1, true }}))
	if d.countGPUs != nil {
		t.Error("nvidia-smi would still be asked")
	}
}
