package detect_test

import (
	"fmt"

	"github.com/spank-otel/spank-otel/detect"
)

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
