package detect

import "github.com/spank-otel/spank-otel/environ"

// Kubernetes returns the pod's identity when the process runs in Kubernetes:
// when env sets KUBERNETES_SERVICE_HOST (to any value) or
// /var/run/secrets/kubernetes.io exists. Otherwise the result is empty.
//
// k8s.namespace.name, k8s.pod.name, k8s.pod.uid, k8s.node.name,
// k8s.container.name and k8s.job.name come from K8S_NAMESPACE, K8S_POD_NAME,
// K8S_POD_UID, K8S_NODE_NAME, K8S_CONTAINER_NAME and K8S_JOB_NAME. HOSTNAME,
// which Kubernetes sets to the pod name, replaces K8S_POD_NAME only when that
// is unset. Empty values are omitted.
func Kubernetes(env environ.Env) Attributes {
	out := Attributes{}
	if !isSet(env, "KUBERNETES_SERVICE_HOST") && !secretsDirExists() {
		return out
	}
	podName, ok := env.Lookup("K8S_POD_NAME")
	if !ok {
		podName = lookup(env, "HOSTNAME")
	}
	for _, a := range [...]struct{ key, value string }{
		{"k8s.namespace.name", lookup(env, "K8S_NAMESPACE")},
		{"k8s.pod.name", podName},
		{"k8s.pod.uid", lookup(env, "K8S_POD_UID")},
		{"k8s.node.name", lookup(env, "K8S_NODE_NAME")},
		{"k8s.container.name", lookup(env, "K8S_CONTAINER_NAME")},
		{"k8s.job.name", lookup(env, "K8S_JOB_NAME")},
	} {
		if a.value != "" {
			out[a.key] = a.value
		}
	}
	return out
}
