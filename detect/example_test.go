package detect_test

import (
	"fmt"
	"os"

	"github.com/spank-otel/spank-otel/detect"
	"github.com/spank-otel/spank-otel/environ"
)

func ExampleLocal() {
	attrs := detect.Local(environ.Map{"CUDA_VISIBLE_DEVICES": "0,1,2,3"}, detect.Options{})
	fmt.Println(attrs["host.gpu.count"])
	fmt.Println(attrs["process.pid"] == int64(os.Getpid()))
	// Output:
	// 4
	// true
}

func ExampleKubernetes() {
	env := environ.Map{"KUBERNETES_SERVICE_HOST": "10.96.0.1", "K8S_NAMESPACE": "ml", "HOSTNAME": "trainer-0"}
	fmt.Println(detect.Kubernetes(env))
	// Output:
	// map[k8s.namespace.name:ml k8s.pod.name:trainer-0]
}
