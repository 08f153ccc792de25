package detect_test

import (
	"fmt"
	"maps"
	"slices"

	"github.com/spank-otel/spank-otel/detect"
)

func ExampleSlurmStrings() {
	// The environment of one task of step 0 of job 12345, given explicitly.
	env := detect.EnvList([]string{
		"SLURM_JOB_ID=12345",
		"SLURM_CLUSTER_NAME=cluster-a",
		"SLURM_JOB_NUM_NODES=2",
		"SLURM_NTASKS=+08",
		"SLURM_STEP_ID=0",
		"SLURMD_NODENAME=c1", // not the head node: this is a step
		"OTEL_RESOURCE_ATTRIBUTES=slurm.job.name=pretrain%2C%20v2,service.name=ignored",
	})
	attrs, warnings := detect.SlurmStrings(env)
	for _, k := range slices.Sorted(maps.Keys(attrs)) {
		fmt.Printf("%s=%s\n", k, attrs[k])
	}
	fmt.Println(len(warnings), "warnings")
	// Output:
	// nv.dl.job.uuid=be34ba0f-41ed-5d53-84c1-e3f3dd25bfd7
	// slurm.array.count=1
	// slurm.array.job_id=12345
	// slurm.array.task_id=0
	// slurm.cluster.name=cluster-a
	// slurm.job.id=12345
	// slurm.job.id.raw=12345
	// slurm.job.name=pretrain, v2
	// slurm.nnodes=2
	// slurm.ntasks=8
	// slurm.restart_count=0
	// 0 warnings
}

func ExampleSlurm() {
	env := detect.EnvMap{
		"SLURM_JOB_ID":           "103",
		"SLURM_ARRAY_JOB_ID":     "100",
		"SLURM_ARRAY_TASK_ID":    "3",
		"SLURM_ARRAY_TASK_COUNT": "4",
		"SLURM_NNODES":           "many",
	}
	attrs, warnings := detect.Slurm(env)
	fmt.Printf("%v %T\n", attrs["slurm.job.id"], attrs["slurm.job.id"])
	fmt.Printf("%v %T\n", attrs["slurm.array.count"], attrs["slurm.array.count"])
	fmt.Println(warnings)
	// Output:
	// 100_3 string
	// 4 int64
	// [key "slurm.nnodes": SLURM_NNODES="many" is not an integer: omitted]
}

func ExampleIsSlurmKey() {
	for _, k := range []string{"slurm.job.id", "nv.dl.run.uuid", "slurm.nodelist", "nv.dl.rank"} {
		fmt.Println(k, detect.IsSlurmKey(k))
	}
	// Output:
	// slurm.job.id true
	// nv.dl.run.uuid true
	// slurm.nodelist false
	// nv.dl.rank false
}

func ExampleLocal() {
	attrs := detect.Local(detect.EnvMap{"CUDA_VISIBLE_DEVICES": "0,1,2,3"}, detect.LocalOptions{
		Hostname: func() (string, error) { return "c1", nil },
		PID:      4711,
	})
	fmt.Println(attrs)
	// Output:
	// map[host.gpu.count:4 host.name:c1 process.pid:4711]
}

func ExampleKubernetes() {
	env := detect.EnvMap{"KUBERNETES_SERVICE_HOST": "10.96.0.1", "K8S_NAMESPACE": "ml", "HOSTNAME": "trainer-0"}
	fmt.Println(detect.Kubernetes(env, detect.KubernetesOptions{}))
	// Output:
	// map[k8s.namespace.name:ml k8s.pod.name:trainer-0]
}

func ExampleEnvList() {
	// As for getenv, the first occurrence of a name wins.
	env := detect.EnvList([]string{"A=1", "not-a-variable", "A=2"})
	fmt.Println(env)
	// Output:
	// map[A:1]
}
