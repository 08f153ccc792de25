package detect_test

import (
	"reflect"
	"testing"

	"github.com/spank-otel/spank-otel/detect"
	"github.com/spank-otel/spank-otel/environ"
)

func TestResource(t *testing.T) {
	detect.SetSystem(t, "c1", nil, 42, false)
	opts := detect.Options{CountGPUs: func() (int, bool) { return 0, false }}
	tests := []struct {
		name  string
		env   environ.Map
		want  detect.Attributes
		warns []string
	}{
		{"local only", environ.Map{"TORCHELASTIC_RUN_ID": "r"}, detect.Attributes{"host.name": "c1", "process.pid": int64(42)}, nil},
		{"local, Slurm and Kubernetes",
			environ.Map{"SLURM_JOB_ID": "7", "SLURM_CLUSTER_NAME": "c", "SLURM_NTASKS": "x", "CUDA_VISIBLE_DEVICES": "0,1",
				"KUBERNETES_SERVICE_HOST": "10.0.0.1", "K8S_POD_NAME": "p"},
			detect.Attributes{
				"host.name": "c1", "process.pid": int64(42), "host.gpu.count": int64(2),
				"slurm.job.id": "7", "slurm.job.id.raw": "7", "slurm.array.job_id": "7", "slurm.array.task_id": "0",
				"slurm.array.count": int64(1), "slurm.restart_count": int64(0), "slurm.cluster.name": "c",
				"nv.dl.job.uuid": jobUUID("c", "7"),
				"k8s.pod.name":   "p",
			},
			[]string{"slurm.ntasks"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, warns := detect.Resource(tt.env, opts)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Resource = %v, want %v", got, tt.want)
			}
			if keys := warningKeys(warns); !reflect.DeepEqual(keys, tt.warns) {
				t.Errorf("warnings %v, want keys %v", warns, tt.warns)
			}
		})
	}
}
