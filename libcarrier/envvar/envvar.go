// Package envvar stores a formatted carrier in the process environment:
// [Set] for good, [Publish] until a restore. The format itself is package
// libcarrier's, which touches no environment.
package envvar

import (
	"errors"
	"sync"
	"syscall"

	"github.com/spank-otel/spank-otel/internal/strs"
	"github.com/spank-otel/spank-otel/libcarrier"
)

// The environment functions are package syscall's, which package os's
// wrap: the same process environment, including the C library's when cgo
// is linked, without linking os into the SPANK plugin's library.

// Set formats m (see [libcarrier.Format]) and stores the result in the environment
// variable name ("" means [libcarrier.EnvVar]), replacing its old value without merging.
// When nothing is left to write the variable is unset rather than set to
// "", which every SDK reads the same way and which keeps the environment
// of child processes clean.
//
// The process environment is shared by all goroutines; callers that change
// it concurrently must serialise.
func Set(name string, m map[string]any) ([]libcarrier.Warning, error) {
	name, err := varName(name)
	if err != nil {
		return nil, err
	}
	s, warns := libcarrier.Format(m)
	return warns, store(name, s, s != "")
}

// Publish is [Set] for a limited time: it returns a function that puts back
// the exact state the variable had before, unset included.
//
// Publications nest when restored in reverse order (defer does that). The
// restore function does its work once; later calls do nothing. The process
// environment is global, so concurrent publishers must serialise: two
// overlapping publications from different goroutines can restore each
// other's values.
//
// On error the variable is unchanged and restore is a no-op, never nil.
func Publish(name string, m map[string]any) (restore func(), warnings []libcarrier.Warning, err error) {
	name, err = varName(name)
	if err != nil {
		return func() {}, nil, err
	}
	old, had := syscall.Getenv(name)
	s, warns := libcarrier.Format(m)
	if err := store(name, s, s != ""); err != nil {
		return func() {}, warns, err
	}
	return sync.OnceFunc(func() { _ = store(name, old, had) }), warns, nil
}

// varName applies the default and rejects names that setenv would refuse,
// checked here so that unsetting fails the same way setting does.
func varName(name string) (string, error) {
	if name == "" {
		return libcarrier.EnvVar, nil
	}
	if strs.IndexByte(name, '=') >= 0 || strs.IndexByte(name, 0) >= 0 {
		return "", errors.New("envvar: invalid environment variable name " + libcarrier.Quote(name))
	}
	return name, nil
}

// store sets name to value when set is true and unsets it otherwise.
func store(name, value string, set bool) error {
	if set {
		return syscall.Setenv(name, value)
	}
	return syscall.Unsetenv(name)
}
