//go:build harness

package test

import (
	"os"
	"path/filepath"
	"testing"
)

// TestPlatformRefused: the helper's raw clone relies on glibc's internals
// and on each architecture's clone argument order, so any other C library
// or architecture stops the build with a sentence saying so (helper.c),
// never a plugin that deadlocks at a task's start. A build without either
// stands in: the compiler told the C library is uClibc (which defines
// __GLIBC__ too), or told it targets neither x86_64 nor aarch64.
func TestPlatformRefused(t *testing.T) {
	src, err := filepath.Abs("../../helper.c")
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
		{name: "platform: glibc on x86_64 or aarch64 builds", run: compile(), want: []string{`!error`}},
		{name: "platform: another C library stops the build with the reason", run: compile("-D__UCLIBC__"), code: 1,
			want: []string{`#error "spank-otel needs glibc 2\.25 or later: its helper is started with a raw clone that relies on glibc's fork-time internals \(musl and other C libraries are not supported\)"`}},
		{name: "platform: another architecture stops the build with the reason", run: compile("-U__x86_64__", "-U__aarch64__"), code: 1,
			want: []string{`#error "spank-otel supports x86_64 and aarch64 only: the raw clone of its helper`}},
	})
}
