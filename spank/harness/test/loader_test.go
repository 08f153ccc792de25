//go:build harness

package test

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// loaderCase is a check that holds for any library: a step of one task
// (stepdrive) on the path setup returns (the library itself when setup is
// nil) with args.
type loaderCase struct {
	name  string
	only  string // "go" or "c": a check for one kind of runtime only
	setup func(t testing.TB, lib string) string
	args  []string
	code  int
	want  []string
}

// otherLibrary is an ELF shared library that is not ours.
func otherLibrary() string {
	for _, p := range []string{"/lib/x86_64-linux-gnu/libz.so.1", "/usr/lib/x86_64-linux-gnu/libz.so.1",
		"/lib/x86_64-linux-gnu/libgcc_s.so.1"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return "libz.so.1 or libgcc_s.so.1 (none found)"
}

// loaderCases are the checks of the file checks (missing, empty,
// truncated, foreign ELF, unsafe owner, mode or directory, links), the
// task's state and the step parent's resource limits, for the library of a
// kind installed at KIND/lib.so in l.
func loaderCases(l *lab, kind string) []loaderCase {
	in := func(name string) string { return filepath.Join(kind, name) }
	d := l.path(kind)
	// variant copies the library to name with mode.
	variant := func(name string, mode os.FileMode) func(testing.TB, string) string {
		return func(t testing.TB, lib string) string {
			p := l.copy(t, lib, in(name))
			l.chmod(t, in(name), mode)
			return p
		}
	}
	// cut writes the first n(size) bytes of the library to name.
	cut := func(name string, n func(size int) int) func(testing.TB, string) string {
		return func(t testing.TB, lib string) string {
			data, err := os.ReadFile(lib)
			if err != nil {
				t.Fatal(err)
			}
			return l.write(t, in(name), data[:n(len(data))])
		}
	}
	// inDir copies the library into the directory dir of mode, owned by uid.
	inDir := func(dir string, mode os.FileMode, uid int) func(testing.TB, string) string {
		return func(t testing.TB, lib string) string {
			l.mkdir(t, in(dir), mode)
			l.chown(t, in(dir), uid)
			return l.copy(t, lib, in(dir+"/lib.so"))
		}
	}
	userFile := func(t testing.TB, lib string) string {
		p := l.copy(t, lib, in("user.so"))
		l.chown(t, in("user.so"), 1000)
		return p
	}
	other := otherLibrary()
	// Outside the lab, in world-writable /tmp.
	inTmp := fmt.Sprintf("/tmp/spank-otel-test.%d.%s", os.Getpid(), kind)
	// refused is a library the step parent refuses before any helper
	// starts: stepdrive exits with the status and logs why.
	refused := func(status string, code int, why string) ([]string, int) {
		return []string{`^lib_status=` + status + `$`, `^error: ` + why, `!^task=`}, code
	}
	// inHelper is a library the step's helper cannot use: the task is told.
	inHelper := func(status, why string) []string {
		return []string{`^task=0 status=` + status + ` rc=-1 value=-$`, `^task=0 log=error ` + why, `^task=0 state=same$`}
	}
	c := func(name string, setup func(testing.TB, string) string, args []string, want []string, code int) loaderCase {
		return loaderCase{name: name, setup: setup, args: args, want: want, code: code}
	}
	ref := func(name string, setup func(testing.TB, string) string, args []string, status string, code int, why string) loaderCase {
		want, code := refused(status, code, why)
		return c(name, setup, args, want, code)
	}
	called := []string{`^task=0 status=called `, `^task=0 state=same$`}
	cases := []loaderCase{
		c("loads from a safe path; the task is left as it was", nil, nil, called, 0),
		c("helper running as another user", nil, []string{"--as-user", "65534"}, called, 0),
		ref("missing library: one error, not loaded", func(testing.TB, string) string { return filepath.Join(d, "missing.so") },
			nil, "open-failed", 2, `cannot open .*missing.so: No such file`),
		c("zero-byte file: dlopen error logged", cut("empty.so", func(int) int { return 0 }), nil,
			inHelper("load-failed", `cannot load .*empty.so: .*(too short|invalid ELF)`), 0),
		ref("truncated copy: refused before dlopen (which would SIGBUS)", cut("trunc.so", func(n int) int { return n / 2 }),
			nil, "load-failed", 4, `cannot load .*trunc.so: truncated ELF file`),
		ref("copy cut inside the program headers: refused", cut("trunc2.so", func(int) int { return 100 }),
			nil, "load-failed", 4, `cannot load .*trunc2.so: damaged ELF file`),
		{name: "copy missing its last byte: loaded or refused, the task unharmed",
			setup: cut("trunc3.so", func(n int) int { return n - 1 }),
			want:  []string{`^(task=0 status=(called|load-failed|helper-died) |lib_status=load-failed$)`, `!^task=0 state=changed`}},
		c("not an ELF file: dlopen error logged",
			func(t testing.TB, _ string) string {
				return l.write(t, in("text.so"),
					fmt.Appendf(nil, "not an ELF file, but long enough to hold an ELF header: %080d\n", 0))
			}, nil, inHelper("load-failed", `cannot load .*text.so: .*invalid ELF header`), 0),
		c("a different ELF library ("+filepath.Base(other)+"): symbols missing",
			func(t testing.TB, _ string) string { return l.copy(t, other, in("other.so")) }, nil,
			inHelper("symbol-missing", `cannot use .*other.so: it does not export spank_otel_`), 0),
		ref("world-writable file refused", variant("ww.so", 0o666), nil, "refused", 1,
			`refusing to load .*ww.so: writable by group or others \(mode 0666\)`),
		ref("group-writable file refused", variant("gw.so", 0o664), nil, "refused", 1, `.*writable by group or others`),
		ref("file owned by a user refused", userFile, nil, "refused", 1, `refusing to load .*user.so: owned by uid 1000 and writable by it`),
		c("file owned by the trusted (SlurmUser) uid accepted", userFile, []string{"--trusted-uid", "1000"}, called, 0),
		ref("file in a world-writable directory refused", inDir("open", 0o777, 0), nil, "refused", 1,
			`.*directory .*/open is writable by group or others \(mode 0777\)`),
		ref("file below a world-writable directory refused",
			func(t testing.TB, lib string) string {
				l.mkdir(t, in("open"), 0o777)
				return inDir("open/sub", 0o755, 0)(t, lib)
			}, nil, "refused", 1, `.*directory .*/open is writable`),
		ref("file in a user-owned directory refused", inDir("userdir", 0o755, 1000), nil, "refused", 1,
			`.*directory .*/userdir is owned by uid 1000`),
		c("symbolic link to a safe file followed",
			func(t testing.TB, lib string) string { return l.link(t, lib, in("link.so")) }, nil, called, 0),
		// A link is only as safe as the directory it lives in: a user who can
		// write there can point it at another file before the next step.
		ref("link in a world-writable directory to a safe file: refused",
			func(t testing.TB, lib string) string {
				l.mkdir(t, in("open"), 0o777)
				return l.link(t, lib, in("open/link.so"))
			}, nil, "refused", 1, `refusing to load .*/open/link.so: directory .*/open is writable by group or others`),
		ref("safe link to an unsafe directory holding a relative link: refused",
			func(t testing.TB, lib string) string {
				l.mkdir(t, in("open"), 0o777)
				l.mkdir(t, in("safe"), 0o755)
				l.link(t, filepath.Join(d, "open"), in("safe/openlink"))
				l.link(t, "../../lib.so", in("open/rel.so"))
				return filepath.Join(d, "safe/openlink/rel.so")
			}, nil, "refused", 1, `.*directory .*/open is writable`),
		c("a chain of links, relative and absolute, in safe directories: loaded",
			func(t testing.TB, lib string) string {
				l.mkdir(t, in("safe"), 0o755)
				l.mkdir(t, in("safe/sub"), 0o755)
				l.link(t, "..", in("safe/sub/up"))
				// Not filepath.Join: it would fold the "..".
				return l.link(t, d+"/safe/sub/up/../lib.so", in("safe/chain.so"))
			}, nil, called, 0),
		ref("link in a user-owned directory to a safe file: refused",
			func(t testing.TB, lib string) string {
				l.mkdir(t, in("userdir2"), 0o755)
				l.chown(t, in("userdir2"), 1000)
				return l.link(t, lib, in("userdir2/link.so"))
			}, nil, "refused", 1, `.*directory .*/userdir2 is owned by uid 1000`),
		ref("link to a file in an unsafe directory refused",
			func(t testing.TB, lib string) string {
				return l.link(t, inDir("open", 0o777, 0)(t, lib), in("badlink.so"))
			}, nil, "refused", 1, `.*directory .*/open is writable`),
		ref("relative path refused", func(testing.TB, string) string { return "relative/lib.so" }, nil, "refused", 1,
			`.*not an absolute path`),
		ref("FIFO refused without hanging",
			func(t testing.TB, _ string) string {
				p := filepath.Join(d, "fifo.so")
				os.Remove(p)
				if err := syscall.Mkfifo(p, 0o644); err != nil {
					t.Fatal(err)
				}
				return p
			}, nil, "refused", 1, `.*not a regular file`),
		ref("directory refused", func(testing.TB, string) string { return d }, nil, "refused", 1, `.*not a regular file`),

		// Limits: the step parent's, which the helper inherits; it raises
		// its own soft limits to the hard ones; whatever the hard limits do
		// to it, the tasks keep their own and run.
		c("low RLIMIT_AS soft limit: the helper raises its own", nil, []string{"--setrlimit", "AS=512M:unlimited"}, called, 0),
		c("small RLIMIT_STACK", nil, []string{"--setrlimit", "STACK=256K:unlimited"}, called, 0),
		c("tight RLIMIT_NPROC soft limit", nil, []string{"--as-user", "65534", "--setrlimit", "NPROC=4:4096"}, called, 0),
		{name: "RLIMIT_AS hard limit too low: Go aborts in the helper, the task runs", only: "go",
			args: []string{"--setrlimit", "AS=512M:512M"},
			want: []string{`^task=0 status=helper-died `, `^task=0 state=same$`,
				`^error: the step's helper (exited with status 2|was killed by signal 6 \(Aborted\)): (fatal error|runtime)`}},
		// The runtime's start maps 42 MiB, 32 of them its heap-arena index
		// (spank/membound.h); 64 MiB, too low before the helper made its
		// threads' stacks small, is enough now.
		{name: "RLIMIT_DATA hard limit too low: the helper dies, the task runs", only: "go",
			args: []string{"--setrlimit", "DATA=32M:32M"},
			want: []string{`^task=0 status=helper-died `, `^task=0 state=same$`}},
		{name: "RLIMIT_DATA hard limit of 64 MiB: enough for the runtime's start and the call", only: "go",
			args: []string{"--setrlimit", "DATA=64M:64M"}, want: called},
		{name: "RLIMIT_NPROC exhausted: a thread cannot start, the task runs", only: "go",
			args: []string{"--as-user", "65534", "--setrlimit", "NPROC=4:4"},
			want: []string{`^task=0 status=helper-died `, `^task=0 state=same$`, `pthread_create failed`}},
		{name: "RLIMIT_AS hard limit 512M is enough for a C library", only: "c",
			args: []string{"--setrlimit", "AS=512M:512M"}, want: called},

		// A refusal names the rule that failed and the path, in --bench too
		// (make bench once stopped on ".../ours.0.so: refused" alone); a
		// checkout under /tmp fails the directory rule on /tmp itself.
		{name: "--bench: a refusal names the rule and the path", setup: inDir("open", 0o777, 0),
			args: []string{"--bench", "3"},
			code: 1, want: []string{`^error: refusing to load ` + q(d+"/open/lib.so") + `: directory ` +
				q(d+"/open") + ` is writable by group or others \(mode 0777\)$`, `!^bench_us=`}},
		{name: "--bench: a library under /tmp is refused, naming /tmp and its mode",
			setup: func(t testing.TB, lib string) string {
				if err := os.Mkdir(inTmp, 0o755); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { os.RemoveAll(inTmp) })
				data, err := os.ReadFile(lib)
				if err == nil {
					err = os.WriteFile(inTmp+"/lib.so", data, 0o644)
				}
				if err != nil {
					t.Fatal(err)
				}
				return inTmp + "/lib.so"
			},
			args: []string{"--bench", "3"},
			code: 1, want: []string{`^error: refusing to load ` + q(inTmp+"/lib.so") +
				`: directory /tmp is writable by group or others \(mode 1777\)$`}},
	}
	return cases
}

// TestLoader runs the loader checks on each kind of library: the fake C
// library, an empty Go library (-go) and the real one (-real). Each check
// is named "KIND: what it shows".
func TestLoader(t *testing.T) {
	l := newLab(t)
	for _, k := range []struct{ kind, runtime string }{{"fake", "c"}, {"go", "go"}, {"real", "go"}} {
		for _, c := range loaderCases(l, k.kind) {
			if c.only != "" && c.only != k.runtime {
				continue
			}
			check(t, k.kind+": "+c.name, func(t *testing.T) {
				lib := l.lib(t, k.kind)
				if c.setup != nil {
					lib = c.setup(t, lib)
				}
				args := append([]string{"--env-file", l.jobEnv(t), "--lib", lib}, c.args...)
				l.drive(t, args...).expect(t, c.code, c.want...)
			})
		}
		check(t, k.kind+": --bench 3 prints 3 timings", func(t *testing.T) {
			r := l.drive(t, "--bench", "3", "--lib", l.lib(t, k.kind), "--env-file", l.jobEnv(t))
			r.expect(t, 0, `!failed`)
			if n := r.count(`^bench_us=[1-9][0-9]*$`); n != 3 {
				t.Errorf("%d timings", n)
				r.show(t)
			}
		})
	}
}
