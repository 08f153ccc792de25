//go:build harness

package test

import (
	"os"
	"path/filepath"
	"testing"
)

// TestPlatformRefused: the raw clones that start the step's helper and the
// node-file reader pass clone's arguments in each architecture's order, so
// any other architecture stops the build with a sentence saying so
// (rawclone.h), never a plugin that fails at a step's start. A build told
// it targets neither x86_64 nor aarch64 stands in.
func TestPlatformRefused(t *testing.T) {
	src, err := filepath.Abs("../../stephelper.c")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(src); err != nil {
		t.Fatalf("the shim's source: %v", err)
	}
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc"
	}
	compile := func(flags ...string) func(t testing.TB) result {
		return func(t testing.TB) result {
			return run(nil, cc, append(append([]string{"-std=gnu11", "-fsyntax-only"}, flags...), src)...)
		}
	}
	runChecks(t, []runCheck{
		{name: "platform: x86_64 or aarch64 builds", run: compile(), want: []string{`!error`}},
		{name: "platform: another architecture stops the build with the reason", run: compile("-U__x86_64__", "-U__aarch64__"), code: 1,
			want: []string{`#error "spank-otel supports x86_64 and aarch64 only: the raw clones that start its step's helper and its node-file reader`}},
	})
}
