// Package environ is the environment that the detectors read: an [Env]
// is given to them, and they never read the process environment, so that
// a launcher, the spank-otel command or the SPANK plugin can hand them
// the environment of one Slurm task.
//
// It is the one definition of an environment for every package of the
// module (detect, detect/slurm, uuidderive), and imports none of them.
// The per-task library links it, so it imports neither strings nor os
// (cgo/deps_test.go).
package environ

import "github.com/spank-otel/spank-otel/internal/strs"

// Env is an environment. Lookup reports the value of a variable and
// whether it is set at all; a variable set to "" is set.
type Env interface {
	Lookup(key string) (string, bool)
}

// Map is an Env held in a map: a key that is absent is unset.
type Map map[string]string

// Lookup returns m[key] and whether key is present.
func (m Map) Lookup(key string) (string, bool) {
	v, ok := m[key]
	return v, ok
}

// List returns the environment of "NAME=value" entries, such as
// os.Environ or the envp of execve. An entry without '=' is ignored. When
// a name occurs more than once the first occurrence wins, as it does for
// getenv(3) and for Slurm's getenvp, so a detector sees what the task's
// own getenv would see. Names and values share memory with kv.
func List(kv []string) Map {
	m := make(Map, len(kv))
	for _, entry := range kv {
		eq := strs.IndexByte(entry, '=')
		if eq < 0 {
			continue
		}
		name := entry[:eq]
		if _, seen := m[name]; !seen {
			m[name] = entry[eq+1:]
		}
	}
	return m
}
