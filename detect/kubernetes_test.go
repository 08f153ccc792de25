package detect_test

import (
	"reflect"
	"testing"

	"github.com/spank-otel/spank-otel/detect"
	"github.com/spank-otel/spank-otel/environ"
)

func TestKubernetes(t *testing.T) {
	const yes, no = true, false // the secrets directory exists
	all := environ.Map{
		"K8S_NAMESPACE": "ns", "K8S_POD_NAME": "pod-1", "K8S_POD_UID": "uid", "K8S_NODE_NAME": "node",
		"K8S_CONTAINER_NAME": "trainer", "K8S_JOB_NAME": "job", "HOSTNAME": "host-1",
	}
	allWant := detect.Attributes{
		"k8s.namespace.name": "ns", "k8s.pod.name": "pod-1", "k8s.pod.uid": "uid", "k8s.node.name": "node",
		"k8s.container.name": "trainer", "k8s.job.name": "job",
	}
	tests := []struct {
		name    string
		env     environ.Map
		secrets bool
		want    detect.Attributes
	}{
		{"inactive", all, no, detect.Attributes{}},
		{"active by service host", with(all, "KUBERNETES_SERVICE_HOST", "10.96.0.1"), no, allWant},
		{"active by empty service host", with(all, "KUBERNETES_SERVICE_HOST", ""), no, allWant},
		{"active by secrets directory", all, yes, allWant},
		{"pod name falls back to HOSTNAME", with(all, "K8S_POD_NAME", deleted), yes, withAttr(allWant, "k8s.pod.name", "host-1")},
		{"empty pod name does not fall back", with(all, "K8S_POD_NAME", ""), yes, withAttr(allWant, "k8s.pod.name", nil)},
		{"empty values omitted", with(all, "K8S_NAMESPACE", "", "K8S_JOB_NAME", ""), yes,
			withAttr(withAttr(allWant, "k8s.namespace.name", nil), "k8s.job.name", nil)},
		{"nothing set", environ.Map{}, yes, detect.Attributes{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			detect.SetSystem(t, "h", nil, 1, tt.secrets)
			if got := detect.Kubernetes(tt.env); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Kubernetes = %v, want %v", got, tt.want)
			}
		})
	}
}

// withAttr returns a copy of a with key set to value, or removed when value
// is nil.
func withAttr(a detect.Attributes, key string, value any) detect.Attributes {
	out := detect.Attributes{}
	for k, v := range a {
		out[k] = v
	}
	if value == nil {
		delete(out, key)
	} else {
		out[key] = value
	}
	return out
}
