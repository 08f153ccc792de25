//go:build harness

package test

import (
	"fmt"
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
			want: []string{`^task=0 status=called rc=1 value=fake.job=99$`,
				`^task=0 log=debug exclude=a,b max_env=12345 stack=8388608 argc=0 argv_bytes=0 flags=0 step=0 envc=1$`}},
		{name: "fake: rc 0 passed back", run: l.onFake([]string{"FAKE_RC=0"}), want: []string{`^task=0 status=called rc=0 `}},
		{name: "fake: rc -1 and an E log line at error level",
			run:  l.onFake([]string{"FAKE_RC=-1", "FAKE_LOG=E recovered panic: boom"}),
			want: []string{`^task=0 status=called rc=-1 `, `^task=0 log=error recovered panic: boom$`}},
		{name: "fake: V, D and unprefixed log lines mapped",
			run: l.onFake([]string{"FAKE_LOG=V verbose line|D debug line|no prefix"}),
			want: []string{`^task=0 log=verbose verbose line$`, `^task=0 log=debug debug line$`,
				`^task=0 log=verbose no prefix$`}},
		{name: "fake: a library that aborts kills only the helper: the task told, the stop names its stderr",
			run: l.onFake([]string{"FAKE_CRASH=1", "FAKE_STDERR=fatal error: out of everything"}),
			want: []string{`^task=0 status=helper-died rc=-1 value=-$`, `^task=0 state=same$`,
				`^task=0 log=error the step's helper ended before it answered .*; OTEL_RESOURCE_ATTRIBUTES left unchanged$`,
				`^error: the step's helper was killed by signal 6 \(Aborted\): fatal error: out of everything$`},
			then: []followUp{{"fake: a crash costs the task one error line", func(t testing.TB, r result) {
				if n := r.count(`^task=0 log=error`); n != 1 {
					t.Errorf("%d lines", n)
					r.show(t)
				}
			}}}},
		{name: "fake: a library that exits mid-call: reported, the task runs",
			run: l.onFake([]string{"FAKE_EXIT=3"}),
			want: []string{`^task=0 status=helper-died rc=-1 value=-$`, `^task=0 state=same$`, `^helper_end=exited:3$`,
				`^error: the step's helper exited with status 3$`}},
		{name: "fake: a hanging library: the task waits timeout=, no longer, and runs",
			run: l.onFake([]string{"FAKE_HANG=1", "SLURM_JOB_ID=1"}, "--timeout", "300"),
			want: []string{`^task=0 status=timeout rc=-1 value=-$`,
				`^task=0 log=error the step's helper did not answer within 300 ms \(timeout=\)`,
				`^task=0 state=same$`, `^helper_end=killed:14$`, `!left behind`},
			then: []followUp{{"fake: the hang costs the task at most timeout=", tookAtMost(300)}}},
		// A library that writes its answer to the socket itself and carries
		// on: the task has its value at once and does not wait for the timeout.
		{name: "fake: a helper that answered and lingers: value taken at once",
			run:  l.onFake([]string{"FAKE_FORGE=linger"}, "--timeout", "3000"),
			want: []string{`^task=0 status=called rc=1 value=fake.forged=1$`, `^task=0 state=same$`},
			then: []followUp{{"fake: a helper that answered and lingers costs far less than timeout=", tookAtMost(1000)}}},
		// The answer is checked: a value with a control character is a
		// protocol error (a NUL would cut it short, a newline would reach the
		// environment).
		{name: "fake: a value with an embedded NUL: rejected",
			run: l.onFake([]string{"FAKE_FORGE=nul"}),
			want: []string{`^task=0 status=bad-answer rc=-1 value=-$`,
				`^task=0 log=error the step's helper answered a value with control character 0x00 at byte 3 \(the library broke the protocol\); OTEL_RESOURCE_ATTRIBUTES left unchanged$`,
				`^task=0 state=same$`}},
		{name: "fake: a value with a newline: rejected",
			run:  l.onFake([]string{"FAKE_VALUE=a=1\nb=2"}),
			want: []string{`^task=0 status=bad-answer `, `control character 0x0a at byte 3`}},
		{name: "fake: control characters of a log line reach the log as '?' (tabs kept)",
			run:  l.onFake([]string{"FAKE_LOG=I one\033[2Jtwo\rthree\ttab"}),
			want: []string{`^task=0 status=called `, "^task=0 log=info one\\?\\[2Jtwo\\?three\ttab$"}},
		// Larger than the socket buffers both ways: the task writes while the
		// helper reads, and reads while it writes.
		{name: "fake: a 4 MB environment in, a 300 kB value out",
			run:  l.onFake(bigEnv()),
			want: []string{`^task=0 status=called rc=1 `, `^task=0 value_len=300000$`, `envc=42$`, `^task=0 state=same$`}},
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

// TestABI: the library's ABI is checked after loading, except for the
// empty-library baseline of the benchmark.
func TestABI(t *testing.T) {
	l := newLab(t)
	// on is a step of one task on a copy of the fake library built as lib,
	// installed as KIND/lib.so.
	on := func(lib, kind string, args ...string) func(t testing.TB) result {
		return func(t testing.TB) result {
			l.mkdir(t, kind, 0o755)
			p := l.copy(t, filepath.Join(need(t, "testdata"), lib), kind+"/lib.so")
			return l.drive(t, append([]string{"--lib", p, "--env-file", l.jobEnv(t)}, args...)...)
		}
	}
	abi2 := func(args ...string) func(t testing.TB) result { return on("libfake-abi2.so", "abi2", args...) }
	noabi := func(args ...string) func(t testing.TB) result { return on("libfake-noabi.so", "noabi", args...) }
	runChecks(t, []runCheck{
		{name: "fake: wrong ABI refused after loading", run: abi2(),
			want: []string{`^task=0 status=abi-mismatch `, fmt.Sprintf(`^task=0 log=error .*library ABI %d, this plugin needs ABI %d`, contractABI(t)+1, contractABI(t))}},
		{name: "fake: library without spank_otel_abi refused", run: noabi(),
			want: []string{`^task=0 status=symbol-missing `, `does not export spank_otel_abi`}},
		{name: "fake: --no-abi-check accepts it (empty-library baseline)", run: noabi("--no-abi-check"),
			want: []string{`^task=0 status=called `}},
		{name: "fake: --bench accepts a library without spank_otel_abi", run: noabi("--no-abi-check", "--bench", "2"),
			want: []string{`^bench_us=[1-9][0-9]*$`, `!failed`}},
		{name: "fake: --bench says when a task got no value", run: abi2("--bench", "2"),
			want: []string{`^stepdrive: a task failed`}},
	})
}

// TestFaultLibrary: a crash in C code called from Go kills the helper, the
// task runs, and the report names the C function (internal/cgotraceback)
// with its library.
func TestFaultLibrary(t *testing.T) {
	l := newLab(t)
	runChecks(t, []runCheck{{
		name: "fault: a SIGSEGV in C: the report names the C function, library and offset",
		run:  l.stepRun("fault", 1, []string{"SPANK_OTEL_TEST_FAULT=segv"}),
		want: []string{`^task=0 status=helper-died `, `^task=0 state=same$`,
			`^error: the step's helper .*: SIGSEGV: segmentation violation`,
			`^debug: helper stderr: signal arrived during cgo execution$`,
			`^debug: helper stderr: spank_otel_fault_segv\+0x[0-9a-f]+ \(/.*/fault/lib\.so\+0x[0-9a-f]+\)$`,
			`^debug: helper stderr: main\._Cfunc_spank_otel_fault_segv\(\)$`},
	}})
}

// TestRealLibrary: libspankotel.so computes the example job's identity; the
// helper binds itself to one CPU, so the Go runtime starts with one P
// whatever the step parent's mask holds, and the collector is off (the
// library's own report, from inside Go).
func TestRealLibrary(t *testing.T) {
	l := newLab(t)
	cpus := strings.TrimSpace(run(nil, "nproc", "--all").out)
	ncpu, err := strconv.Atoi(cpus)
	runChecks(t, []runCheck{
		{name: "real: Slurm identity and job UUID in the value",
			run: l.stepRun("real", 1, []string{"SLURM_JOB_ID=12345", "SLURM_CLUSTER_NAME=cluster-a", "SLURM_JOB_NAME=t", "PATH=/usr/bin"}),
			want: []string{`^task=0 status=called rc=1 value=.*slurm\.job\.id=12345`,
				`nv\.dl\.job\.uuid=be34ba0f-41ed-5d53-84c1-e3f3dd25bfd7`, `^task=0 state=same$`}},
		{name: "real: GOMAXPROCS 1 and no collector in the helper (" + cpus + " CPUs in the step parent's mask)",
			run: func(t testing.TB) result {
				if err != nil || ncpu < 1 {
					t.Fatalf("nproc --all: %q", cpus)
				}
				exe := l.helper(t)
				return run(nil, "taskset", "-c", fmt.Sprintf("0-%d", ncpu-1), need(t, "stepdrive"), "--helper", exe,
					"--tasks", "1", "--lib", l.lib(t, "real"), "--env-file", l.jobEnv(t))
			},
			want: []string{`^task=0 log=debug go runtime: GOMAXPROCS=1 threads<=[0-9]+ gc=off stack=kept$`, `^task=0 state=same$`},
			then: []followUp{{"real: the helper's debug line times the load and the call", expectAlso(0,
				`^task=0 log=debug step helper: library loaded and started in [1-9][0-9]* us \(once for the step\), call [0-9]+ us$`)}}},
	})
}
