package detect

import (
	"reflect"
	"testing"
)

func TestResource(t *testing.T) {
	opts := ResourceOptions{
		Local: LocalOptions{
			Hostname:  func() (string, error) { return "c1", nil },
			PID:       42,
			CountGPUs: func() (int, bool) { return 0, false },
		},
		Kubernetes: KubernetesOptions{SecretsDirExists: func() bool { return false }},
	}
	tests := []struct {
		name  string
		env   EnvMap
		want  Attributes
		warns []string
	}{
		{"local only", EnvMap{"TORCHELASTIC_RUN_ID": "r"}, Attributes{"host.name": "c1", "process.pid": int64(42)}, nil},
		{"local, Slurm and Kubernetes",
			EnvMap{"SLURM_JOB_ID": "7", "SLURM_CLUSTER_NAME": "c", "SLURM_NTASKS": "x", "CUDA_VISIBLE_DEVICES": "0,1",
				"KUBERNETES_SERVICE_HOST": "10.0.0.1", "K8S_POD_NAME": "p"},
			Attributes{
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
			got, warns := Resource(tt.env, opts)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Resource = %v, want %v", got, tt.want)
			}
			if keys := warningKeys(warns); !reflect.DeepEqual(keys, tt.warns) {
				t.Errorf("warnings %v, want keys %v", warns, tt.warns)
			}
		})
	}
}
