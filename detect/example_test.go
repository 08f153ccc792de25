package detect_test

import (
	"fmt"
	"os"

	"github.com/spank-otel/spank-otel/detect"
)

func ExampleLocal() {
	attrs := detect.Local(detect.EnvMap{"CUDA_VISIBLE_DEVICES": "0,1,2,3"}, detect.Options{})
	fmt.Println(attrs["host.gpu.count"])
	fmt.Println(attrs["process.pid"] == int64(os.Getpid()))
	// Output:
	// 4
	// true
}

func ExampleKubernetes() {
	env := detect.EnvMap{"KUBERNETES_SERVICE_HOST": "10.96.0.1", "K8S_NAMESPACE": "ml", "HOSTNAME": "trainer-0"}
	fmt.Println(detect.Kubernetes(env))
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
