package detect

import "github.com/spank-otel/spank-otel/environ"

// Attributes are typed resource attributes: every value is a string or an
// int64.
type Attributes map[string]any

// lookup returns the value of name, "" when it is unset.
func lookup(env environ.Env, name string) string {
	v, _ := env.Lookup(name)
	return v
}

// isSet reports whether name is set, even to "".
func isSet(env environ.Env, name string) bool {
	_, ok := env.Lookup(name)
	return ok
}
