//go:build harness

// Package test tests the spank-otel shim's C code by driving its test
// binaries: spank-otel-stepdrive (a step around the step's helper,
// spank-otel-helper: the library checks, the helper's start and each
// task's call, compiled from the same sources as the plugin) and
// spank-otel-mockslurm (spank_otel.so itself in a stand-in for Slurm), with
// the fake, empty-Go, faulting and real libraries.
//
// It needs root (it changes file owners, creates cgroups and runs children
// as uid 65534) and every binary below; `make ctest` builds them and runs
//
//	go test -tags harness -count=1 ./spank/harness/test/ -stepdrive=... -stephelper=... \
//	    -mock=... -shim=... -testdata=... -go=... -fault=... -real=...
//
// A check whose prerequisite is missing fails, naming it: nothing is ever
// skipped. Each check is a subtest named for what it shows, so -run selects
// any of them ('-run TestLoader/^real:', '-run TestShim/timeout').
package test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// files are what the tests drive, by flag name: each test asks for those it
// needs (need), and fails when one is not given.
var files = map[string]*string{
	"mock":       flag.String("mock", "", "spank-otel-mockslurm (make -C spank harness)"),
	"shim":       flag.String("shim", "", "spank_otel.so, the plugin under test (make -C spank shim)"),
	"testdata":   flag.String("testdata", "", "directory with libfake.so, libfake-noabi.so, libfake-abi2.so and libevil.so (make -C spank harness)"),
	"go":         flag.String("go", "", "an empty Go c-shared library (make -C spank goempty)"),
	"fault":      flag.String("fault", "", "the Go library that crashes on request (make -C spank faultlib)"),
	"real":       flag.String("real", "", "the real libspankotel.so (make lib)"),
	"fusehang":   flag.String("fusehang", "", "test/fusehang, a file whose reads never return (make -C spank harness)"),
	"stephelper": flag.String("stephelper", "", "spank-otel-helper, the step's helper (make -C spank harness)"),
	"stepdrive":  flag.String("stepdrive", "", "spank-otel-stepdrive, a step around it (make -C spank harness)"),
}

// tally counts the checks (the leaf subtests) for the line make ctest ends
// with, "N checks passed, M failed, K skipped". Nothing here calls t.Skip:
// a skipped check would be a bug, and the line would show it.
var tally struct{ passed, failed, skipped atomic.Int32 }

func TestMain(m *testing.M) {
	os.Setenv(markerName, marker)
	code := m.Run()
	p, f, s := tally.passed.Load(), tally.failed.Load(), tally.skipped.Load()
	if p+f+s > 0 {
		fmt.Printf("harness: %d checks passed, %d failed, %d skipped\n", p, f, s)
	}
	if left := leftovers(5 * time.Second); len(left) > 0 {
		fmt.Printf("harness: FAIL: %d processes the tests started are still running (now killed):\n", len(left))
		for _, l := range left {
			fmt.Printf("harness:   %s\n", l)
		}
		code = 1
	} else {
		fmt.Println("harness: no process the tests started is still running")
	}
	os.Exit(code)
}

// markerName=marker is in the environment of every process the tests start:
// TestMain sets it in its own, which every command inherits. It is unique
// to this run, so that only processes this run started are ever killed.
// The step's helper runs with an empty environment: noneRunning finds it
// by its image.
const markerName = "SPANK_OTEL_CTEST_RUN"

var marker = fmt.Sprintf("%d.%d", os.Getpid(), time.Now().UnixNano())

// leftovers waits up to grace for every process with this run's marker to
// end (a helper killed at the end of a test may still be on its way out),
// then kills those still there, through a pidfd opened before the marker
// is read again, so a pid that was reused is never signalled. Returns one
// line for each: pid, parent, uids, name and command line.
func leftovers(grace time.Duration) []string {
	want := []byte(markerName + "=" + marker + "\x00")
	find := func() []int {
		var pids []int
		dirs, _ := os.ReadDir("/proc")
		for _, d := range dirs {
			pid, err := strconv.Atoi(d.Name())
			if err != nil || pid == os.Getpid() {
				continue
			}
			env, err := os.ReadFile(filepath.Join("/proc", d.Name(), "environ"))
			if err == nil && bytes.Contains(append([]byte{0}, env...), append([]byte{0}, want...)) {
				pids = append(pids, pid)
			}
		}
		return pids
	}
	deadline := time.Now().Add(grace)
	pids := find()
	for len(pids) > 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		pids = find()
	}
	var left []string
	for _, pid := range pids {
		status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		line := fmt.Sprintf("pid %d %s cmdline %q", pid, statusFields(string(status), "Name", "PPid", "Uid"),
			strings.TrimRight(string(bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '})), " "))
		if fd, err := unix.PidfdOpen(pid, 0); err == nil {
			if env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid)); err == nil &&
				bytes.Contains(append([]byte{0}, env...), append([]byte{0}, want...)) {
				unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
			}
			unix.Close(fd)
		}
		left = append(left, line)
	}
	return left
}

// statusFields is the named fields of a /proc/PID/status text, "Name=x PPid=y ...".
func statusFields(status string, names ...string) string {
	var out []string
	for _, l := range strings.Split(status, "\n") {
		name, value, ok := strings.Cut(l, ":")
		if ok && slices.Contains(names, name) {
			out = append(out, name+"="+strings.Join(strings.Fields(value), " "))
		}
	}
	return strings.Join(out, " ")
}

// check runs one named check as a subtest and counts its outcome.
func check(t *testing.T, name string, f func(t *testing.T)) {
	t.Helper()
	t.Run(name, func(t *testing.T) {
		t.Cleanup(func() {
			switch {
			case t.Skipped():
				tally.skipped.Add(1)
			case t.Failed():
				tally.failed.Add(1)
			default:
				tally.passed.Add(1)
			}
		})
		f(t)
	})
}

// need returns the path given by the flag called name, and fails the test
// when it is missing: the check cannot run without it.
func need(t testing.TB, name string) string {
	t.Helper()
	path := *files[name]
	if path == "" {
		t.Fatalf("-%s is not given: %s; make ctest passes it", name, flag.Lookup(name).Usage)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("-%s: %v", name, err)
	}
	return path
}

// result is what one run of a command left: its exit code (128+N when a
// signal killed it, -1 when it could not start or ran too long) and its
// standard output and error, interleaved.
type result struct {
	code int
	out  string
}

// runTimeout bounds every command: a hang is a failure, not a stuck test.
const runTimeout = 60 * time.Second

// run runs a command with extra environment variables (NAME=VALUE).
func run(env []string, name string, args ...string) result {
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	// A helper left behind dies with its task; do not wait on its pipe forever.
	cmd.WaitDelay = 10 * time.Second
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return result{0, out.String()}
	case ctx.Err() != nil:
		return result{-1, fmt.Sprintf("%s%s: killed after %v", out.String(), name, runTimeout)}
	case errors.As(err, &exit):
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return result{128 + int(ws.Signal()), out.String()}
		}
		return result{exit.ExitCode(), out.String()}
	default:
		return result{-1, fmt.Sprintf("%s%s: %v", out.String(), name, err)}
	}
}

// lines is the output a line each, as grep reads it.
func (r result) lines() []string {
	return strings.Split(strings.TrimRight(r.out, "\n"), "\n")
}

// count is the number of output lines that match pattern.
func (r result) count(pattern string) int {
	re := regexp.MustCompile(pattern)
	n := 0
	for _, l := range r.lines() {
		if re.MatchString(l) {
			n++
		}
	}
	return n
}

// value is the first submatch of pattern in the output, line by line.
func (r result) value(pattern string) (string, bool) {
	re := regexp.MustCompile(pattern)
	for _, l := range r.lines() {
		if m := re.FindStringSubmatch(l); m != nil {
			return m[1], true
		}
	}
	return "", false
}

// expect checks the exit code and that every pattern (a regular
// expression) matches a line of the output; a pattern starting with !
// must match none.
func (r result) expect(t testing.TB, code int, patterns ...string) {
	t.Helper()
	if r.code != code {
		t.Errorf("exit code %d, want %d", r.code, code)
	}
	for _, p := range patterns {
		neg := strings.HasPrefix(p, "!")
		n := r.count(strings.TrimPrefix(p, "!"))
		switch {
		case neg && n > 0:
			t.Errorf("output matches /%s/", p[1:])
		case !neg && n == 0:
			t.Errorf("output lacks /%s/", p)
		}
	}
	if t.Failed() {
		r.show(t)
	}
}

// show logs the first 40 lines of the output.
func (r result) show(t testing.TB) {
	t.Helper()
	l := r.lines()
	if len(l) > 40 {
		l = append(l[:40], "...")
	}
	t.Logf("output:\n\t| %s", strings.Join(l, "\n\t| "))
}

// runCheck is one run of a command and the checks of its output: the
// first, called name, checks its exit code and patterns (result.expect);
// then are further checks of the same run. The command runs when the first
// check selected by -run asks for it, and only once.
type runCheck struct {
	name string
	run  func(t testing.TB) result
	code int
	want []string
	then []followUp
}

// followUp is a further named check of a runCheck's run.
type followUp struct {
	name  string
	check func(t testing.TB, r result)
}

// runChecks runs each case's checks in turn.
func runChecks(t *testing.T, cases []runCheck) {
	t.Helper()
	for _, c := range cases {
		r := shared(c.run)
		check(t, c.name, func(t *testing.T) { r(t).expect(t, c.code, c.want...) })
		for _, f := range c.then {
			check(t, f.name, func(t *testing.T) { f.check(t, r(t)) })
		}
	}
}

// shared runs f the first time its result is asked for, in the test that
// asks; when that run fails to complete, so does every check that reads it.
func shared(f func(t testing.TB) result) func(t testing.TB) result {
	var (
		once  sync.Once
		r     result
		done  bool
		first string
	)
	return func(t testing.TB) result {
		t.Helper()
		once.Do(func() {
			first = t.Name()
			r = f(t)
			done = true
		})
		if !done {
			t.Fatalf("the run this check reads did not complete (see %s)", first)
		}
		return r
	}
}

// expectAlso is a follow-up check of more patterns in the same output.
func expectAlso(code int, want ...string) func(t testing.TB, r result) {
	return func(t testing.TB, r result) { r.expect(t, code, want...) }
}

// tookAtMost is a follow-up check that the task's own figure for the whole
// call (the line "step helper STATUS in N us") is at most ms, with as much
// again as slack: under twice ms. That slack is large enough that a
// loaded machine's scheduling cannot break the check, and small enough
// that it still tells one wait of ms from two, or from a wait for a
// timeout several times ms.
func tookAtMost(ms int) func(t testing.TB, r result) {
	return func(t testing.TB, r result) {
		us, ok := r.value(`^task=0 log=debug step helper [a-z-]* in ([0-9]*) us$`)
		n, err := strconv.Atoi(us)
		if !ok || err != nil || n >= 2*ms*1000 {
			t.Errorf("the call took %q us, want at most %d ms (under %d ms with the slack)", us, ms, 2*ms)
			r.show(t)
		}
	}
}

// lab is one test's scratch directory: root-owned and not writable by
// group or others all the way up, as the loader demands of a library's
// path (/tmp will not do), removed at the end of the test.
type lab struct {
	dir  string
	libs map[string]string
}

// base is where labs are made: /run, else beside the test libraries.
func base(testdata string) string {
	if fi, err := os.Stat("/run"); err == nil && fi.Mode().Perm()&0o022 == 0 {
		return "/run"
	}
	return filepath.Dir(testdata)
}

func newLab(t *testing.T) *lab {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("the harness tests need root: they change file owners, create cgroups and run children as uid 65534")
	}
	l := &lab{libs: map[string]string{}}
	dir, err := os.MkdirTemp(base(need(t, "testdata")), "spank-otel-test.")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	l.dir = dir
	l.mkdir(t, "", 0o755)
	return l
}

// path is name inside the lab.
func (l *lab) path(name string) string { return filepath.Join(l.dir, name) }

// mkdir makes the lab's directory name (and its parents) with mode.
func (l *lab) mkdir(t testing.TB, name string, mode os.FileMode) string {
	t.Helper()
	p := l.path(name)
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
	return p
}

// write writes the lab's file name with mode 0644.
func (l *lab) write(t testing.TB, name string, data []byte) string {
	t.Helper()
	p := l.path(name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// copy copies the file src (links followed) to the lab's name, mode 0644.
func (l *lab) copy(t testing.TB, src, name string) string {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	return l.write(t, name, data)
}

// link makes the lab's name a symbolic link to target, replacing it.
func (l *lab) link(t testing.TB, target, name string) string {
	t.Helper()
	p := l.path(name)
	os.Remove(p)
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
	return p
}

// chmod sets the mode of the lab's name.
func (l *lab) chmod(t testing.TB, name string, mode os.FileMode) {
	t.Helper()
	if err := os.Chmod(l.path(name), mode); err != nil {
		t.Fatal(err)
	}
}

// chown gives the lab's name to uid.
func (l *lab) chown(t testing.TB, name string, uid int) {
	t.Helper()
	if err := os.Lchown(l.path(name), uid, -1); err != nil {
		t.Fatal(err)
	}
}

// taskEnv writes a task environment (NUL-separated, as stepdrive's
// --env-file reads it) to the lab's file name.
func (l *lab) taskEnv(t testing.TB, name string, env ...string) string {
	t.Helper()
	var b bytes.Buffer
	for _, e := range env {
		b.WriteString(e)
		b.WriteByte(0)
	}
	return l.write(t, name, b.Bytes())
}

// jobEnv is the task environment of the example job of SPEC section 4.
func (l *lab) jobEnv(t testing.TB) string {
	return l.taskEnv(t, "env", "SLURM_JOB_ID=12345", "SLURM_CLUSTER_NAME=cluster-a", "SLURM_JOB_NAME=t", "PATH=/usr/bin")
}

// lib installs the library of a kind as KIND/lib.so in the lab (once),
// spank-otel-helper beside it, and returns its path. The kinds are fake
// (the C library of -testdata) and those named by their flag: go, real and
// fault. The test fails when the flag is missing.
func (l *lab) lib(t testing.TB, kind string) string {
	t.Helper()
	if p, ok := l.libs[kind]; ok {
		return p
	}
	src := filepath.Join(need(t, "testdata"), "libfake.so")
	if kind != "fake" {
		src = need(t, kind)
	}
	l.mkdir(t, kind, 0o755)
	p := l.copy(t, src, filepath.Join(kind, "lib.so"))
	// Where the shim finds the step's helper (helper=step, the default).
	l.copy(t, need(t, "stephelper"), filepath.Join(kind, "spank-otel-helper"))
	l.chmod(t, filepath.Join(kind, "spank-otel-helper"), 0o755)
	l.libs[kind] = p
	return p
}

// helper is the lab's copy of spank-otel-helper, which every run of
// stepdrive starts (noneRunning looks for it by this path).
func (l *lab) helper(t testing.TB) string {
	t.Helper()
	exe := l.copy(t, need(t, "stephelper"), "helper/spank-otel-helper")
	l.chmod(t, "helper/spank-otel-helper", 0o755)
	return exe
}

// drive runs spank-otel-stepdrive with args: a step of one task (unless
// args say --tasks) around the lab's copy of spank-otel-helper.
func (l *lab) drive(t testing.TB, args ...string) result {
	t.Helper()
	return run(nil, need(t, "stepdrive"), append([]string{"--helper", l.helper(t), "--tasks", "1"}, args...)...)
}

// onFake is a step of one task on the fake library (which does what its
// task's environment says) with a task environment.
func (l *lab) onFake(env []string, args ...string) func(t testing.TB) result {
	return func(t testing.TB) result {
		fenv := l.taskEnv(t, "fenv", env...)
		return l.drive(t, append([]string{"--lib", l.lib(t, "fake"), "--env-file", fenv}, args...)...)
	}
}

// stackLimit is this process's RLIMIT_STACK soft limit, which the harness
// and the mock Slurm inherit: what the shim sends as the budget's stack
// limit (RLIM_INFINITY as ^uint64(0)).
func stackLimit(t testing.TB) uint64 {
	t.Helper()
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_STACK, &lim); err != nil {
		t.Fatal(err)
	}
	return lim.Cur
}

// contractABI is SO_ABI_VERSION, read from the one copy, cgo/contract.h.
func contractABI(t testing.TB) int {
	t.Helper()
	data, err := os.ReadFile("../../../cgo/contract.h")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^#define SO_ABI_VERSION (\d+)$`).FindSubmatch(data)
	if m == nil {
		t.Fatal("contract.h defines no SO_ABI_VERSION")
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}
