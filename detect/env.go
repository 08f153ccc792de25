package detect

import "strings"

// Env is the environment a detector reads. Lookup reports the value of a
// variable and whether it is set at all; a variable set to "" is set.
// An Env is also a slurm.Env and a uuidderive.Env.
type Env interface {
	Lookup(key string) (string, bool)
}

// EnvMap is an Env held in a map: a key that is absent is unset.
type EnvMap map[string]string

// Lookup returns m[key] and whether key is present.
func (m EnvMap) Lookup(key string) (string, bool) {
	v, ok := m[key]
	return v, ok
}

// EnvList returns the environment of "NAME=value" entries, such as os.Environ
// or the envp of execve. An entry without '=' is ignored. When a name occurs
// more than once the first occurrence wins, as it does for getenv(3) and for
// Slurm's getenvp, so a detector sees what the task's own getenv would see.
// Names and values share memory with kv.
func EnvList(kv []string) EnvMap {
	m := make(EnvMap, len(kv))
	for _, entry := range kv {
		name, value, ok := strings.Cut(entry, "=")
		if !ok {
			continue
		}
		if _, seen := m[name]; !seen {
			m[name] = value
		}
	}
	return m
}

// Attributes are typed resource attributes: every value is a string or an
// int64.
type Attributes map[string]any

// lookup returns the value of name, "" when it is unset.
func lookup(env Env, name string) string {
	v, _ := env.Lookup(name)
	return v
}

// isSet reports whether name is set, even to "".
func isSet(env Env, name string) bool {
	_, ok := env.Lookup(name)
	return ok
}
