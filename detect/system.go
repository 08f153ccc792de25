package detect

import "os"

// The queries of the system that Local and Kubernetes make. They are
// variables so that tests can replace them (export_test.go); nothing else
// changes them.
var (
	hostname         = os.Hostname
	getpid           = os.Getpid
	secretsDirExists = func() bool {
		_, err := os.Stat(serviceAccountDir)
		return err == nil
	}
)

// serviceAccountDir exists in every pod that mounts Kubernetes secrets.
const serviceAccountDir = "/var/run/secrets/kubernetes.io"
