package detect

import "testing"

// SetSystem makes Local and Kubernetes see, until t ends, a host named host
// (or the error hostErr), a process of id pid, and the Kubernetes secrets
// directory when secrets is true.
func SetSystem(t testing.TB, host string, hostErr error, pid int, secrets bool) {
	oldHostname, oldGetpid, oldSecrets := hostname, getpid, secretsDirExists
	t.Cleanup(func() { hostname, getpid, secretsDirExists = oldHostname, oldGetpid, oldSecrets })
	hostname = func() (string, error) { return host, hostErr }
	getpid = func() int { return pid }
	secretsDirExists = func() bool { return secrets }
}
