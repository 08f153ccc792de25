//go:build harness

package test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestFakeLibrary shows what only the fake library can: it returns, logs,
// crashes, exits, hangs or forges its answer as its environment says.
func TestFakeLibrary(t *testing.T) {
	l := newLab(t)
	runChecks(t, []runCheck{
		{name: "fake: task environment, exclude and max_env reach the library",
			run: l.onFake([]string{"SLURM_JOB_ID=99"}, "--exclude", "a,b", "--max-env", "12345"),
			want: []string{`^rc=1$`, `^value=fake.job=99$`,
				fmt.Sprintf(`^log=D exclude=a,b max_env=12345 stack=%d argc=0 argv_bytes=0 flags=0 step=0 envc=1$`, stackLimit(t))}},
		{name: "fake: without max_env the library gets the budget's inputs: the stack limit",
			run:  l.onFake([]string{"SLURM_JOB_ID=99"}),
			want: []string{fmt.Sprintf("max_env=0 stack=%d argc=0 ", stackLimit(t))}},
		{name: "fake: rc 0 passed back", run: l.onFake([]string{"FAKE_RC=0"}), want: []string{`^rc=0$`}},
		{name: "fake: rc -1 and an E log line at error level",
			run:  l.onFake([]string{"FAKE_RC=-1", "FAKE_LOG=E recovered panic: boom"}),
			want: []string{`^rc=-1$`, `msg error spank-otel: recovered panic: boom`}},
		{name: "fake: V, D and unprefixed log lines mapped",
			run: l.onFake([]string{"FAKE_LOG=V verbose line|D debug line|no prefix"}),
			want: []string{`msg verbose spank-otel: verbose line`, `msg debug spank-otel: debug line`,
				`msg verbose spank-otel: no prefix`}},
		{name: "fake: a library that aborts kills only the helper: one error line with its stderr",
			run:  l.onFake([]string{"FAKE_CRASH=1", "FAKE_STDERR=fatal error: out of everything"}),
			code: 8, want: []string{`^status=helper-died$`, `^state=same$`,
				`msg error spank-otel: the helper process was killed by signal 6 \(Aborted\) before it answered: fatal error: out of everything; OTEL_RESOURCE_ATTRIBUTES left unchanged$`},
			then: []followUp{{"fake: a crash costs one error line", func(t testing.TB, r result) {
				if n := r.count(`^msg error`); n != 1 {
					t.Errorf("%d lines", n)
					r.show(t)
				}
			}}}},
		{name: "fake: a library that exits mid-call: reported, the task runs",
			run:  l.onFake([]string{"FAKE_EXIT=3"}),
			code: 8, want: []string{`^status=helper-died$`, `the helper process exited with status 3 before it answered`,
				`^state=same$`}},
		{name: "fake: a hanging library: killed at the timeout, reaped, the task runs",
			run:  l.onFake([]string{"FAKE_HANG=1", "SLURM_JOB_ID=1"}, "--timeout", "300"),
			code: 7, want: []string{`^status=timeout$`,
				`msg error spank-otel: the helper process did not answer within 300 ms \(timeout=\); killed it`,
				`^state=same$`, `^after=threads=1 children=0 `, `!left behind`},
			then: []followUp{{"fake: the hang costs the task at most timeout= (killing and reaping included)", tookAtMost(300)}}},
		// A library that writes its answer to the socket itself and carries
		// on: the task has its value at once and does not wait for the timeout.
		{name: "fake: a helper that answered and lingers: value taken, helper killed",
			run: l.onFake([]string{"FAKE_FORGE=linger"}, "--timeout", "3000"),
			want: []string{`^status=called$`, `^value=fake.forged=1$`, `^state=same$`, `^after=threads=1 children=0 `,
				`!left behind`},
			then: []followUp{{"fake: a helper that answered and lingers costs far less than timeout=", tookAtMost(1000)}}},
		// The answer is checked: a value with a control character is a
		// protocol error (a NUL would cut it short, a newline would reach the
		// environment).
		{name: "fake: a value with an embedded NUL: rejected, the helper killed",
			run:  l.onFake([]string{"FAKE_FORGE=nul"}),
			code: 9, want: []string{`^status=bad-answer$`,
				`msg error spank-otel: the helper process answered a value with control character 0x00 at byte 3 \(the library broke the protocol\); killed it; OTEL_RESOURCE_ATTRIBUTES left unchanged$`,
				`^state=same$`, `^after=threads=1 children=0 `}},
		{name: "fake: a value with a newline: rejected",
			run:  l.onFake([]string{"FAKE_VALUE=a=1\nb=2"}),
			code: 9, want: []string{`^status=bad-answer$`, `control character 0x0a at byte 3`, `!^value=`}},
		{name: "fake: control characters of a log line reach the log as '?' (tabs kept)",
			run:  l.onFake([]string{"FAKE_LOG=I one\033[2Jtwo\rthree\ttab"}),
			want: []string{`^status=called$`, "msg info spank-otel: one\\?\\[2Jtwo\\?three\ttab$"}},
		// Larger than the socket buffers both ways: the task writes while the
		// helper reads, and reads while it writes.
		{name: "fake: a 4 MB environment in, a 300 kB value out",
			run:  l.onFake(bigEnv(), "--value-len"),
			want: []string{`^status=called$`, `^value_len=300000$`, `envc=42$`, `^state=same$`}},
	})
}

// bigEnv is a task environment of 4 MB that asks for a value of 300 kB.
func bigEnv() []string {
	env := []string{"SLURM_JOB_ID=7", "FAKE_VALUE_LEN=300000"}
	for i := 1; i <= 40; i++ {
		env = append(env, fmt.Sprintf("FILL_%d=%s", i, strings.Repeat("x", 100000)))
	}
	return env
}

// TestForgedProc: a container plugin between the two callbacks owns /proc;
// the helper has loaded the checked file already, and never looks at that
// /proc. The control shows the forged /proc is a real attack on loading in
// the task.
func TestForgedProc(t *testing.T) {
	l := newLab(t)
	evil := func(t testing.TB) string {
		return l.copy(t, filepath.Join(need(t, "testdata"), "libevil.so"), "evil.so")
	}
	marker := filepath.Join(l.path("markers"), "evil-ran")
	// overlay runs the fake library in a task that forged /proc, with the
	// evil library leaving marker behind if it ever runs.
	overlay := func(args ...string) func(t testing.TB) result {
		return func(t testing.TB) result {
			l.mkdir(t, "markers", 0o777|os.ModeSticky)
			os.Remove(marker)
			args := append([]string{"--lib", l.lib(t, "fake"), "--env-file", l.taskEnv(t, "fenv", "SLURM_JOB_ID=5"),
				"--as-user", "65534", "--proc-overlay", evil(t)}, args...)
			return run([]string{"SPANK_OTEL_EVIL_MARKER=" + marker}, l.harness, args...)
		}
	}
	ran := func(want bool) func(t testing.TB, r result) {
		return func(t testing.TB, r result) {
			if _, err := os.Stat(marker); (err == nil) != want {
				t.Errorf("%s exists: %v, want %v", marker, err == nil, want)
			}
		}
	}
	runChecks(t, []runCheck{
		{name: "fake: /proc forged in the task's own user and mount namespace: the checked library answers",
			run: overlay(), want: []string{`^status=called$`, `^value=fake.job=5$`},
			then: []followUp{{"fake: the forged /proc never ran the other library", ran(false)}}},
		{name: "fake: control: loading through /proc/self/fd in the task runs the other library",
			run: overlay("--load-in-task"), want: []string{`^load_in_task=loaded$`},
			then: []followUp{{"fake: control: the forged /proc is a real attack on in-task loading", ran(true)}}},
	})
}

// TestABI: the library's ABI is checked after loading, except for the
// empty-library baseline of the benchmark.
func TestABI(t *testing.T) {
	l := newLab(t)
	// on is a run of the harness on a copy of the fake library built as
	// lib, called name.
	on := func(lib, name string, args ...string) func(t testing.TB) result {
		return func(t testing.TB) result {
			p := l.copy(t, filepath.Join(need(t, "testdata"), lib), name)
			return l.run(append(args, "--lib", p)...)
		}
	}
	abi2 := func(args ...string) func(t testing.TB) result { return on("libfake-abi2.so", "abi2.so", args...) }
	noabi := func(args ...string) func(t testing.TB) result { return on("libfake-noabi.so", "noabi.so", args...) }
	runChecks(t, []runCheck{
		{name: "fake: wrong ABI refused after loading", run: abi2(),
			code: 6, want: []string{`^status=abi-mismatch$`, fmt.Sprintf(`library ABI %d, this plugin needs ABI %d`, contractABI(t)+1, contractABI(t))}},
		{name: "fake: library without spank_otel_abi refused", run: noabi(),
			code: 5, want: []string{`^status=symbol-missing$`, `does not export spank_otel_abi`}},
		{name: "fake: --no-abi-check accepts it (empty-library baseline)", run: noabi("--no-abi-check"),
			want: []string{`^status=called$`}},
		{name: "fake: --bench accepts a library without spank_otel_abi", run: noabi("--bench", "2"),
			want: []string{`^[0-9]+ [0-9]+$`}},
		{name: "fake: --bench says why each task got no value", run: abi2("--bench", "2"),
			code: 1, want: []string{`^spank-otel-harness: cannot use .*/abi2\.so: library ABI [0-9]+, this plugin needs ABI [0-9]+`,
				`^spank-otel-harness: 2 of 2 tasks got no value$`}},
	})
}

// TestFaultLibrary: a crash in C code called from Go kills the helper, the
// task runs, and the report names the C function (internal/cgotraceback)
// with its library.
func TestFaultLibrary(t *testing.T) {
	l := newLab(t)
	runChecks(t, []runCheck{{
		name: "fault: a SIGSEGV in C: the report names the C function, library and offset",
		run: func(t testing.TB) result {
			return l.run("--lib", l.lib(t, "fault"), "--env-file", l.taskEnv(t, "fenv", "SPANK_OTEL_TEST_FAULT=segv"))
		},
		code: 8, want: []string{`^status=helper-died$`, `^state=same$`,
			`msg error spank-otel: the helper process .* before it answered: SIGSEGV: segmentation violation;`,
			`msg debug spank-otel: helper stderr: signal arrived during cgo execution$`,
			`msg debug spank-otel: helper stderr: spank_otel_fault_segv\+0x[0-9a-f]+ \(/.*/fault/lib\.so\+0x[0-9a-f]+\)$`,
			`msg debug spank-otel: helper stderr: main\._Cfunc_spank_otel_fault_segv\(\)$`},
	}})
}

// TestRealLibrary: libspankotel.so computes the example job's identity; the
// helper binds itself to one CPU of the task's mask, so the Go runtime
// starts with one P whatever the mask holds, and the collector is off (the
// library's own report, from inside Go).
func TestRealLibrary(t *testing.T) {
	l := newLab(t)
	cpus := strings.TrimSpace(run(nil, "nproc", "--all").out)
	ncpu, err := strconv.Atoi(cpus)
	runChecks(t, []runCheck{
		{name: "real: Slurm identity and job UUID in the value",
			run: func(t testing.TB) result { return l.run("--lib", l.lib(t, "real"), "--env-file", l.jobEnv(t)) },
			want: []string{`^rc=1$`, `^value=.*slurm\.job\.id=12345`,
				`nv\.dl\.job\.uuid=be34ba0f-41ed-5d53-84c1-e3f3dd25bfd7`}},
		{name: "real: GOMAXPROCS 1 and no collector in the helper (" + cpus + " CPUs in the task's mask)",
			run: func(t testing.TB) result {
				if err != nil || ncpu < 1 {
					t.Fatalf("nproc --all: %q", cpus)
				}
				return run(nil, "taskset", "-c", fmt.Sprintf("0-%d", ncpu-1), l.harness,
					"--lib", l.lib(t, "real"), "--env-file", l.jobEnv(t), "--task-index", "1")
			},
			want: []string{`msg debug spank-otel: go runtime: GOMAXPROCS=1 threads<=[0-9]+ gc=off stack=kept$`, `^state=same$`},
			then: []followUp{{"real: the helper's debug line times the load and the call", expectAlso(0,
				`msg debug spank-otel: helper: placed in [0-9]+ us, library loaded and started in [1-9][0-9]* us, call [0-9]+ us$`)}}},
	})
}
