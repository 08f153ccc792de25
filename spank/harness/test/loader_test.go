//go:build harness

package test

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// loaderCase is a check that holds for any library: the harness loads the
// path setup returns (the library itself when setup is nil) with args.
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
// task's state and resource limits, for the library of a kind installed at
// KIND/lib.so in l.
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
	return []loaderCase{
		{name: "loads from a safe path; the task is left as it was",
			want: []string{`^status=called$`, `^state=same$`, `^after=threads=1 children=0 `}},
		{name: "SIGPIPE ignored before stays ignored, mask and altstack kept",
			args: []string{"--ignore", "PIPE", "--block", "USR1", "--block", "TERM"},
			want: []string{`^status=called$`, `^state=same$`, `^ignored=.*PIPE`}},
		{name: "open and check in the task works too", args: []string{"--open-in-child"},
			want: []string{`^status=called$`, `^state=same$`}},
		{name: "descriptor reused for another file before loading: refused", args: []string{"--reuse-fd"},
			code: 2, want: []string{`^status=open-failed$`, `its descriptor was closed or reused`, `^state=same$`}},
		{name: "helper and task running as another user", args: []string{"--as-user", "65534", "--ignore", "PIPE"},
			want: []string{`^status=called$`, `^state=same$`}},
		{name: "missing library: one error, not loaded",
			setup: func(testing.TB, string) string { return filepath.Join(d, "missing.so") },
			code:  2, want: []string{`^status=open-failed$`, `msg error spank-otel: cannot open .*missing.so: No such file`}},
		{name: "zero-byte file: dlopen error logged", setup: cut("empty.so", func(int) int { return 0 }),
			code: 4, want: []string{`^status=load-failed$`,
				`msg error spank-otel: cannot load .*empty.so: .*(too short|invalid ELF)`, `^state=same$`}},
		{name: "truncated copy: refused before dlopen (which would SIGBUS)",
			setup: cut("trunc.so", func(n int) int { return n / 2 }),
			code:  4, want: []string{`^status=load-failed$`, `msg error spank-otel: cannot load .*trunc.so: truncated ELF file`}},
		{name: "copy cut inside the program headers: refused", setup: cut("trunc2.so", func(int) int { return 100 }),
			code: 4, want: []string{`^status=load-failed$`, `cannot load .*trunc2.so: damaged ELF file`}},
		{name: "copy missing its last byte: loaded or refused, the task unharmed",
			setup: cut("trunc3.so", func(n int) int { return n - 1 }),
			want:  []string{`^status=(called|load-failed|helper-died)$`, `^state=same$`}},
		{name: "not an ELF file: dlopen error logged",
			setup: func(t testing.TB, _ string) string {
				return l.write(t, in("text.so"),
					fmt.Appendf(nil, "not an ELF file, but long enough to hold an ELF header: %080d\n", 0))
			},
			code: 4, want: []string{`^status=load-failed$`, `msg error spank-otel: cannot load .*text.so: .*invalid ELF header`}},
		{name: "a different ELF library (" + filepath.Base(other) + "): symbols missing",
			setup: func(t testing.TB, _ string) string { return l.copy(t, other, in("other.so")) },
			code:  5, want: []string{`^status=symbol-missing$`,
				`msg error spank-otel: cannot use .*other.so: it does not export spank_otel_`}},
		{name: "world-writable file refused", setup: variant("ww.so", 0o666),
			code: 1, want: []string{`^status=refused$`, `refusing to load .*ww.so: writable by group or others \(mode 0666\)`}},
		{name: "group-writable file refused", setup: variant("gw.so", 0o664),
			code: 1, want: []string{`^status=refused$`, `writable by group or others`}},
		{name: "file owned by a user refused", setup: userFile,
			code: 1, want: []string{`^status=refused$`, `refusing to load .*user.so: owned by uid 1000 and writable by it`}},
		{name: "file owned by the trusted (SlurmUser) uid accepted", setup: userFile,
			args: []string{"--trusted-uid", "1000"}, want: []string{`^status=called$`}},
		{name: "file in a world-writable directory refused", setup: inDir("open", 0o777, 0),
			code: 1, want: []string{`^status=refused$`, `directory .*/open is writable by group or others \(mode 0777\)`}},
		{name: "file below a world-writable directory refused",
			setup: func(t testing.TB, lib string) string {
				l.mkdir(t, in("open"), 0o777)
				return inDir("open/sub", 0o755, 0)(t, lib)
			},
			code: 1, want: []string{`^status=refused$`, `directory .*/open is writable`}},
		{name: "file in a user-owned directory refused", setup: inDir("userdir", 0o755, 1000),
			code: 1, want: []string{`^status=refused$`, `directory .*/userdir is owned by uid 1000`}},
		{name: "symbolic link to a safe file followed",
			setup: func(t testing.TB, lib string) string { return l.link(t, lib, in("link.so")) },
			want:  []string{`^status=called$`}},
		// A link is only as safe as the directory it lives in: a user who can
		// write there can point it at another file before the next step.
		{name: "link in a world-writable directory to a safe file: refused",
			setup: func(t testing.TB, lib string) string {
				l.mkdir(t, in("open"), 0o777)
				return l.link(t, lib, in("open/link.so"))
			},
			code: 1, want: []string{`^status=refused$`,
				`refusing to load .*/open/link.so: directory .*/open is writable by group or others`}},
		{name: "safe link to an unsafe directory holding a relative link: refused",
			setup: func(t testing.TB, lib string) string {
				l.mkdir(t, in("open"), 0o777)
				l.mkdir(t, in("safe"), 0o755)
				l.link(t, filepath.Join(d, "open"), in("safe/openlink"))
				l.link(t, "../../lib.so", in("open/rel.so"))
				return filepath.Join(d, "safe/openlink/rel.so")
			},
			code: 1, want: []string{`^status=refused$`, `directory .*/open is writable`}},
		{name: "a chain of links, relative and absolute, in safe directories: loaded",
			setup: func(t testing.TB, lib string) string {
				l.mkdir(t, in("safe"), 0o755)
				l.mkdir(t, in("safe/sub"), 0o755)
				l.link(t, "..", in("safe/sub/up"))
				// Not filepath.Join: it would fold the "..".
				return l.link(t, d+"/safe/sub/up/../lib.so", in("safe/chain.so"))
			},
			want: []string{`^status=called$`}},
		{name: "link in a user-owned directory to a safe file: refused",
			setup: func(t testing.TB, lib string) string {
				l.mkdir(t, in("userdir2"), 0o755)
				l.chown(t, in("userdir2"), 1000)
				return l.link(t, lib, in("userdir2/link.so"))
			},
			code: 1, want: []string{`^status=refused$`, `directory .*/userdir2 is owned by uid 1000`}},
		{name: "link to a file in an unsafe directory refused",
			setup: func(t testing.TB, lib string) string {
				return l.link(t, inDir("open", 0o777, 0)(t, lib), in("badlink.so"))
			},
			code: 1, want: []string{`^status=refused$`, `directory .*/open is writable`}},
		{name: "relative path refused", setup: func(testing.TB, string) string { return "relative/lib.so" },
			code: 1, want: []string{`^status=refused$`, `not an absolute path`}},
		{name: "FIFO refused without hanging",
			setup: func(t testing.TB, _ string) string {
				p := filepath.Join(d, "fifo.so")
				os.Remove(p)
				if err := syscall.Mkfifo(p, 0o644); err != nil {
					t.Fatal(err)
				}
				return p
			},
			code: 1, want: []string{`^status=refused$`, `not a regular file`}},
		{name: "directory refused", setup: func(testing.TB, string) string { return d },
			code: 1, want: []string{`^status=refused$`, `not a regular file`}},

		// Limits: the helper raises its own soft limits; whatever the hard
		// limits do to it, the task keeps its own limits and runs.
		{name: "low RLIMIT_AS soft limit: the helper raises its own", args: []string{"--setrlimit", "AS=512M:unlimited"},
			want: []string{`^status=called$`, `^state=same$`}},
		{name: "small RLIMIT_STACK", args: []string{"--setrlimit", "STACK=256K:unlimited"},
			want: []string{`^status=called$`, `^state=same$`}},
		{name: "tight RLIMIT_NPROC soft limit", args: []string{"--as-user", "65534", "--setrlimit", "NPROC=4:4096"},
			want: []string{`^status=called$`, `^state=same$`}},
		{name: "RLIMIT_AS hard limit too low: Go aborts in the helper, the task runs", only: "go",
			args: []string{"--setrlimit", "AS=512M:512M"},
			code: 8, want: []string{`^status=helper-died$`, `^state=same$`,
				`msg error spank-otel: the helper process (exited with status 2|was killed by signal 6 \(Aborted\)) before it answered: (fatal error|runtime)`}},
		// The runtime's start maps 42 MiB, 32 of them its heap-arena index
		// (spank/membound.h); 64 MiB, too low before the helper made its
		// threads' stacks small, is enough now.
		{name: "RLIMIT_DATA hard limit too low: the helper dies, the task runs", only: "go",
			args: []string{"--setrlimit", "DATA=32M:32M"},
			code: 8, want: []string{`^status=helper-died$`, `^state=same$`}},
		{name: "RLIMIT_DATA hard limit of 64 MiB: enough for the runtime's start and the call", only: "go",
			args: []string{"--setrlimit", "DATA=64M:64M"},
			want: []string{`^status=called$`, `^state=same$`}},
		{name: "RLIMIT_NPROC exhausted: a thread cannot start, the task runs", only: "go",
			args: []string{"--as-user", "65534", "--setrlimit", "NPROC=4:4"},
			code: 8, want: []string{`^status=helper-died$`, `^state=same$`, `pthread_create failed`}},
		{name: "RLIMIT_AS hard limit 512M is enough for a C library", only: "c",
			args: []string{"--setrlimit", "AS=512M:512M"},
			want: []string{`^status=called$`, `^state=same$`}},

		// A refusal names the rule that failed and the path, in --bench too
		// (make bench once stopped on ".../ours.0.so: refused" alone); a
		// checkout under /tmp fails the directory rule on /tmp itself.
		{name: "--bench: a refusal names the rule and the path", setup: inDir("open", 0o777, 0),
			args: []string{"--bench", "3"},
			code: 1, want: []string{`^spank-otel-harness: refusing to load ` + q(d+"/open/lib.so") + `: directory ` +
				q(d+"/open") + ` is writable by group or others \(mode 0777\)$`, `!^[0-9]`}},
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
			code: 1, want: []string{`^spank-otel-harness: refusing to load ` + q(inTmp+"/lib.so") +
				`: directory /tmp is writable by group or others \(mode 1777\)$`}},
	}
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
				l.run(args...).expect(t, c.code, c.want...)
			})
		}
		check(t, k.kind+": --bench 3 prints 3 timings and page fault counts", func(t *testing.T) {
			r := l.run("--bench", "3", "--lib", l.lib(t, k.kind), "--env-file", l.jobEnv(t))
			r.expect(t, 0)
			if n := r.count(`^[1-9][0-9]* [1-9][0-9]*$`); n != 3 {
				t.Errorf("%d timings", n)
				r.show(t)
			}
		})
	}
}
