package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"gotest.tools/v3/assert"

	"github.com/spank-otel/spank-otel/cgo/nodefiles"
	"github.com/spank-otel/spank-otel/detect/slurm"
	"github.com/spank-otel/spank-otel/detect/slurm/slurmtest"
	"github.com/spank-otel/spank-otel/libcarrier"
	"github.com/spank-otel/spank-otel/taskenv"
)

var stepEnv = []string{
	"SLURM_JOB_ID=77", "SLURM_CLUSTER_NAME=spank", "SLURM_STEP_ID=0", "SLURM_NTASKS=2",
	"SLURMD_NODENAME=c1", "SLURM_TOPOLOGY_ADDR=c1",
}

func TestTaskEnvExport(t *testing.T) {
	tests := []struct {
		name     string
		env      []string
		exclude  string
		maxEnv   int
		rc       int
		valueHas string
		logHas   string
	}{
		{name: "writes", env: stepEnv, rc: 1, valueHas: "slurm.job.id=77"},
		{name: "exclude list", env: stepEnv, exclude: " slurm.job.id ,slurm.ntasks", rc: 1, valueHas: "slurm.job.id.raw=77"},
		{name: "nothing to do", env: []string{"HOME=/"}, rc: 0},
		{name: "empty environment", env: nil, rc: 0},
		{name: "a malformed carrier is repaired, each entry dropped at info level", env: append([]string{"OTEL_RESOURCE_ATTRIBUTES=x,u=1"}, stepEnv...),
			rc: 1, valueHas: "u=1", logHas: "I entry \"x\" has no '=': dropped\n"},
		{name: "an empty result unsets", env: []string{"OTEL_RESOURCE_ATTRIBUTES=slurm.topology.addr=c1"}, rc: 2},
		{name: "budget exceeded", env: stepEnv, maxEnv: 100, rc: 0, logHas: "E the task environment would be"},
		{name: "control characters cannot forge log lines", env: append([]string{"OTEL_RESOURCE_ATTRIBUTES=a\nE forged,b\rE forged"}, stepEnv...),
			rc: 1, logHas: "I entry \"a\\nE forged\" has no '='"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rc, value, log := callTaskEnv(tc.env, tc.exclude, tc.maxEnv)
			assert.Equal(t, rc, tc.rc, "value %q log %q", value, log)
			if tc.rc != 1 {
				// Unchanged, unset and failed all come without a value.
				assert.Equal(t, value, "")
			}
			assert.Assert(t, strings.Contains(value, tc.valueHas), "value %q", value)
			assert.Assert(t, strings.Contains(log, tc.logHas), "log %q", log)
			for _, line := range strings.Split(strings.TrimSuffix(log, "\n"), "\n") {
				if line != "" {
					assert.Assert(t, strings.IndexByte("EIVD", line[0]) >= 0 && line[1] == ' ', "log line %q", line)
					assert.Assert(t, !strings.HasPrefix(line, "E forged"), "forged log line in %q", log)
				}
			}
		})
	}
	_, value, _ := callTaskEnv(stepEnv, "slurm.job.id", 0)
	assert.Assert(t, !strings.Contains(value, "slurm.job.id=77,"), value)
}

func TestABI(t *testing.T) {
	assert.Equal(t, int(spank_otel_abi()), abiVersion)
}

// TestCollect: spank_otel_collect collects although the library's init
// switched the collector off, and what a call left is given back: the
// step's helper calls it between tasks to stay within its memory bound.
func TestCollect(t *testing.T) {
	var before, after runtime.MemStats
	for i := 0; i < 8; i++ {
		callTaskEnv(stepEnv, "", 0)
	}
	runtime.ReadMemStats(&before)
	spank_otel_collect()
	runtime.ReadMemStats(&after)
	assert.Assert(t, after.NumGC > before.NumGC, "no collection: NumGC %d, then %d", before.NumGC, after.NumGC)
	assert.Assert(t, after.HeapAlloc < before.HeapAlloc, "heap %d bytes, then %d", before.HeapAlloc, after.HeapAlloc)
}

// FuzzTaskEnv feeds the export hostile task environments. It must never
// panic, and every value it writes must read back, in our parser, as the
// user's attributes plus the Slurm identity. That the OpenTelemetry Go SDK
// reads what our parser reads is test/sdkinterop's to check, in a module of
// its own: this one does not depend on the SDK.
func FuzzTaskEnv(f *testing.F) {
	// The library's init switches the collector off: it makes one call
	// per process. A fuzz worker makes thousands a second, and without a
	// collector its heap grows until the runtime dies of it.
	defer setGCPercent(setGCPercent(100))
	slurmtest.AddTaskSeeds(f)
	f.Fuzz(func(t *testing.T, inherited, jobID, node, stepID string) {
		// An environment string ends at its first NUL, as C sees it.
		inherited, jobID, node, stepID = cstr(inherited), cstr(jobID), cstr(node), cstr(stepID)
		env := slurmtest.TaskFuzzEnv(inherited, jobID, node, stepID)
		rc, value, log := callTaskEnv(env, "", 0)
		if rc == -1 {
			t.Fatalf("internal error: %s", log)
		}
		if rc == 0 || rc == 2 {
			assert.Equal(t, value, "")
			return
		}
		got, warnings := libcarrier.Parse(value)
		assert.Equal(t, len(warnings), 0, "written value %q does not parse cleanly: %v", value, warnings)
		again, _ := libcarrier.FormatStrings(got)
		assert.Equal(t, again, value, "written value is not canonical")

		// Every user attribute that the repair keeps arrives unchanged.
		user, _ := libcarrier.AppendParse(nil, inherited)
		user, _ = libcarrier.Repair(user)
		for _, kv := range user {
			if slurm.IsKey(kv.Key) {
				continue
			}
			assert.Equal(t, got[kv.Key], kv.Value, "user attribute %q", kv.Key)
		}
	})
}

func cstr(s string) string {
	if i := strings.IndexByte(s, 0); i >= 0 {
		return s[:i]
	}
	return s
}

func TestRuntimeLine(t *testing.T) {
	if raceEnabled { // the race detector's frames do not fit (TestTaskPathStack)
		runWithoutRace(t, "TestRuntimeLine")
		return
	}
	// On a 4 KB stack as a call from C gets it, and on one with almost
	// all of it in use, which the call must outgrow.
	for _, tc := range []struct {
		pad   int
		stack string
	}{{0, "kept"}, {2048, "moved"}} {
		var log string
		onStack(tc.pad, func() { _, _, log = callTaskEnv(stepEnv, "", 0) })
		first, _, _ := strings.Cut(log, "\n")
		assert.Assert(t, strings.HasPrefix(first, "D go runtime: GOMAXPROCS="), "log %q", log)
		// init switched the collector off, and the line says where the
		// call's stack was at its end.
		suffix := " gc=off stack=" + tc.stack
		assert.Assert(t, strings.HasSuffix(first, suffix), "line %q", first)
		// The bound counts at least the C thread of this call and the
		// one the runtime itself started on.
		_, bound, ok := strings.Cut(first, " threads<=")
		assert.Assert(t, ok, "line %q", first)
		n, err := strconv.Atoi(strings.TrimSuffix(bound, suffix))
		assert.NilError(t, err, "line %q", first)
		assert.Assert(t, n >= 2, "line %q", first)
	}
}

// TestPanicCostsOnlyTheAttributes drives the recovery seam of the export,
// recoverInto, with a function that panics half-way: the failure replaces
// the result (replyToShim hands out the failure alone), in one error line and
// one debug line with the stack.
func TestPanicCostsOnlyTheAttributes(t *testing.T) {
	panicking := func() (failure string) {
		defer recoverInto(&failure)
		panic("boom\nE forged")
	}
	failure := panicking()
	lines := strings.Split(strings.TrimSuffix(failure, "\n"), "\n")
	assert.Equal(t, len(lines), 2, "failure %q", failure)
	assert.Equal(t, lines[0], "E internal error, attributes not written: boom?E forged")
	assert.Assert(t, strings.HasPrefix(lines[1], "D "), "line %q", lines[1])
	assert.Assert(t, strings.Contains(lines[1], "TestPanicCostsOnlyTheAttributes"), "no stack in %q", lines[1])

	returning := func() (failure string) {
		defer recoverInto(&failure)
		return ""
	}
	assert.Equal(t, returning(), "")
}

func TestLogLinesCap(t *testing.T) {
	warns := func(n int) []libcarrier.Warning {
		var ws []libcarrier.Warning
		for i := range n {
			ws = append(ws, libcarrier.Warning{Key: "k" + strconv.Itoa(i), Message: "dropped"})
		}
		return ws
	}
	tests := []struct {
		dropped, warnings int
		want              []string // the lines, without their text
	}{
		{0, 0, nil},
		{maxWarningLines, 0, repeat("I", maxWarningLines)},
		{maxWarningLines + 1, 0, append(repeat("I", maxWarningLines), "I 1 more entries dropped not shown")},
		{0, maxWarningLines + 5, append(repeat("V", maxWarningLines), "V 5 more warnings not shown")},
		{1000, 1, append(append(repeat("I", maxWarningLines), "I 990 more entries dropped not shown"), "V")},
	}
	for _, tc := range tests {
		log := logLines(taskenv.Result{Dropped: warns(tc.dropped), Warnings: warns(tc.warnings)})
		var got []string
		for _, line := range strings.Split(strings.TrimSuffix(log, "\n"), "\n") {
			if line == "" {
				continue
			}
			if strings.Contains(line, " more ") {
				got = append(got, line)
			} else {
				got = append(got, line[:1])
			}
		}
		assert.DeepEqual(t, got, tc.want)
	}
}

func repeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

func TestOneLine(t *testing.T) {
	for in, want := range map[string]string{
		"plain":        "plain",
		"a\nE forged":  "a?E forged",
		"a\rE forged":  "a?E forged",
		"tab\there":    "tab?here",
		"del\x7f":      "del?",
		"nul\x00":      "nul?",
		"é and ü stay": "é and ü stay",
	} {
		assert.Equal(t, oneLine(in), want, "oneLine(%q)", in)
	}
}

// TestTaskPathStack guards the per-task cost of the stack. A call from C
// runs on a 4 KB goroutine stack. A path that does not fit makes the
// runtime move it to a larger one, which in a new helper process walks
// every frame through tables it has never read and takes a new stack
// span, at a cost greater than any stage of the computation
// (docs/performance.md). So large state belongs on the heap (see
// taskenv's scratch).
//
// The bound is that the task path fits a 4 KB stack below the frames of
// this test (cEnv.call, the closures and use), which stand in for the
// runtime's callback frames of a call from C: a path that puts large
// state on the stack crosses it, a toolchain whose frames differ by a
// few words does not. How much room is left is BenchmarkTaskPathStack's
// figure, which make bench prints.
//
// Under -race the test binary is not the library: the race detector
// doubles the runtime's stack guard and instruments every frame, so the
// same path needs far more of the stack. The test then measures the
// library's own build, in a test binary built without -race.
func TestTaskPathStack(t *testing.T) {
	if raceEnabled {
		runWithoutRace(t, "TestTaskPathStack")
		return
	}
	for _, tc := range taskPaths(t) {
		room := taskPathRoom(t, tc)
		t.Logf("%s: the task path leaves %d bytes of a 4 KB stack", tc.name, room)
		assert.Assert(t, room >= 0, "%s: the task path does not fit a 4 KB goroutine stack, the stack of a call from C", tc.name)
	}
}

// BenchmarkTaskPathStack reports, as stack-bytes-left, how many bytes of
// a 4 KB stack the deepest of the task paths leaves (TestTaskPathStack):
// the margin for the runtime's frames of a call from C, to the nearest 64
// bytes.
func BenchmarkTaskPathStack(b *testing.B) {
	if raceEnabled {
		b.Fatal("the figure is the library's own build: run the benchmark without -race")
	}
	paths := taskPaths(b)
	room := 4096
	for b.Loop() {
		for _, tc := range paths {
			room = min(room, taskPathRoom(b, tc))
		}
	}
	b.ReportMetric(float64(room), "stack-bytes-left")
}

// taskPath is a task whose call TestTaskPathStack measures.
type taskPath struct {
	name    string
	env     []string
	node    string // a copy of a node's files, "" for this machine's
	records bool   // node's files also recorded, as the step parent hands them
	// With usable, SO_REQ_DEVICES: the task asked of every GPU's device
	// node and may use the GPUs of these minors (the records then hold
	// the device nodes too).
	usable []int
	want   string // in the value written
}

// taskPaths are the deepest paths of a call: a 66-variable step task
// with its job's 25-key carrier (make bench's), without one (the job
// UUID is then derived), and given 2 of the 4 GPUs of a node whose files
// are read whole, from the node and from the step parent's records, and
// from the records with the task's own answers for the device nodes.
func taskPaths(tb testing.TB) []taskPath {
	node := gpuNode(tb)
	return []taskPath{
		{name: "with its job's carrier", env: slurmtest.TaskEnvWithCarrier(tb), want: "slurm.job.id=4242"},
		{name: "without a carrier", env: slurmtest.TaskEnv(tb), want: "nv.dl.job.uuid="},
		{name: "given 2 GPUs, without a carrier", env: slurmtest.TaskEnv(tb), node: node, want: "nv.gpu.count=2"},
		{name: "given 2 GPUs, with its job's carrier", env: slurmtest.TaskEnvWithCarrier(tb), node: node, want: "nv.gpu.count=2"},
		{name: "given 2 GPUs, without a carrier, from the step's records", env: slurmtest.TaskEnv(tb), node: node, records: true, want: "nv.gpu.count=2"},
		{name: "given 2 GPUs, with its job's carrier, from the step's records", env: slurmtest.TaskEnvWithCarrier(tb), node: node, records: true, want: "nv.gpu.count=2"},
		{name: "given 2 GPUs, with its job's carrier, from the step's records and the task's answers", env: slurmtest.TaskEnvWithCarrier(tb), node: node, records: true, usable: []int{0, 1}, want: "nv.gpu.count=2"},
	}
}

// gpuNode returns a directory with the files of a node of 4 GPUs whose
// gres.conf has them detected (no device nodes, which only root makes),
// under ConstrainDevices: the search reads every file it can.
func gpuNode(tb testing.TB) string {
	tb.Helper()
	dir := tb.TempDir()
	files := map[string]string{
		"etc/slurm/gres.conf":   "AutoDetect=nvidia\nName=gpu\n",
		"etc/slurm/cgroup.conf": "ConstrainDevices=yes\n",
	}
	for i := range 4 {
		pci := fmt.Sprintf("0000:%02x:00.0", 0x1b+16*i)
		files["proc/driver/nvidia/gpus/"+pci+"/information"] = fmt.Sprintf(
			"Model: \t\t NVIDIA Fake GPU\nGPU UUID: \t GPU-%08d-aaaa-bbbb-cccc-dddddddddddd\nBus Location: \t %s\nDevice Minor: \t %d\n", i, pci, i)
	}
	for name, text := range files {
		path := filepath.Join(dir, name)
		assert.NilError(tb, os.MkdirAll(filepath.Dir(path), 0o755))
		assert.NilError(tb, os.WriteFile(path, []byte(text), 0o644))
	}
	return dir
}

// taskPathRoom returns stackRoom of a call of the export for tc, as the
// plugin makes it: with the step and the budget's inputs.
func taskPathRoom(tb testing.TB, tc taskPath) int {
	tb.Helper()
	e := newCEnv(tc.env, "")
	defer e.free()
	var rc int
	var value, log string
	r := request{step: new(uint32), node: tc.node}
	if tc.records {
		r.records = recordsOf(tb, tc.node)
	}
	if tc.usable != nil {
		r.records = append(r.records, deviceRecords(4)...)
		r.devices, r.asked, r.usable = true, minors(0, 1, 2, 3), minors(tc.usable...)
	}
	r.exec.stack, r.exec.argc, r.exec.argvBytes = 8<<20, 2, 16
	room := stackRoom(func() { rc, value, log = e.call(r) })
	if rc != 1 || !strings.Contains(value, tc.want) {
		tb.Fatalf("%s: the export answered %d, %q, want 1 and %s; log %q", tc.name, rc, value, tc.want, log)
	}
	if tc.records && !strings.Contains(log, "\nD gpu search: node files from the step\n") {
		tb.Fatalf("%s: the search did not read the records alone: log %q", tc.name, log)
	}
	return room
}

// recordsOf returns the records the step parent makes of gpuNode's dir:
// the driver's directory and files, the configuration files, and
// fake_gpus.conf absent.
func recordsOf(tb testing.TB, dir string) []byte {
	tb.Helper()
	const driver = "/proc/driver/nvidia/gpus"
	entries, err := os.ReadDir(dir + driver)
	assert.NilError(tb, err)
	var names []byte
	for _, e := range entries {
		names = append(append(names, e.Name()...), 0)
	}
	r := nodefiles.AppendRecord(nil, nodefiles.KindDir, driver, names)
	file := func(name string) {
		text, err := os.ReadFile(dir + name)
		assert.NilError(tb, err)
		r = nodefiles.AppendRecord(r, nodefiles.KindFile, name, text)
	}
	for _, e := range entries {
		file(driver + "/" + e.Name() + "/information")
	}
	file("/etc/slurm/gres.conf")
	file("/etc/slurm/cgroup.conf")
	return nodefiles.AppendRecord(r, nodefiles.KindAbsent, "/etc/slurm/fake_gpus.conf", nil)
}

// deviceRecords returns the records the step parent makes of the device
// nodes of a node of n GPUs, /dev/nvidia0 to /dev/nvidia<n-1>.
func deviceRecords(n int) []byte {
	var r []byte
	for i := range n {
		r = nodefiles.AppendRecord(r, nodefiles.KindCharDev, "/dev/nvidia"+strconv.Itoa(i), []byte{195, 0, 0, 0, byte(i), 0, 0, 0})
	}
	return r
}

// minors returns the bits of the task's answers (contract.h,
// devices_asked and devices_usable) for the minors ns.
func minors(ns ...int) [4]uint64 {
	var w [4]uint64
	for _, n := range ns {
		w[n/64] |= 1 << (n % 64)
	}
	return w
}

// runWithoutRace runs the test named test of this package in a test binary
// built without -race, and fails t with its output when that fails.
func runWithoutRace(t *testing.T, test string) {
	t.Helper()
	cmd := exec.Command(goCommand(t), "test", "-count=1", "-v", "-run", "^"+test+"$", ".")
	// GOFLAGS may carry -race too.
	var flags []string
	for _, f := range strings.Fields(os.Getenv("GOFLAGS")) {
		if f != "-race" && f != "-race=true" {
			flags = append(flags, f)
		}
	}
	cmd.Env = append(os.Environ(), "GOFLAGS="+strings.Join(flags, " "))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s without -race: %v\n%s", test, err, out)
	}
	t.Logf("%s without -race:\n%s", test, out)
}

// stackRoom returns how many bytes of stack can be in use, on a goroutine
// whose stack is 4 KB, before f makes the runtime grow it, to the nearest
// 64 bytes; -1 when f alone does.
func stackRoom(f func()) int {
	room := -1
	for pad := 0; pad < 4096; pad += 64 {
		if stackMoves(pad, f) {
			break
		}
		room = pad
	}
	return room
}

// stackMoves reports whether f makes the runtime move the stack of a new
// goroutine that has a 4 KB stack with pad more bytes of it in use.
func stackMoves(pad int, f func()) bool {
	var moved bool
	onStack(pad, func() {
		var local byte
		before := uintptr(unsafe.Pointer(&local))
		f()
		moved = uintptr(unsafe.Pointer(&local)) != before
	})
	return moved
}

// onStack calls f on a new goroutine that has a 4 KB stack with pad more
// bytes of it in use, and returns when f has.
func onStack(pad int, f func()) {
	// A collection could shrink the stack in between.
	defer setGCPercent(setGCPercent(-1))
	done := make(chan struct{})
	go func() {
		defer close(done)
		growStackTo4K(0)
		var top byte
		use(uintptr(unsafe.Pointer(&top)), pad, f)
	}()
	<-done
}

// use calls f with at least n bytes of stack in use below base.
//
//go:noinline
func use(base uintptr, n int, f func()) {
	var frame [48]byte
	if here := uintptr(unsafe.Pointer(&frame)); base-here < uintptr(n) {
		use(base, n, f)
		frame[n%len(frame)]++
		return
	}
	f()
}

// growStackTo4K has a frame that a goroutine's first 2 KB stack cannot
// hold but a 4 KB one can: the runtime moves the stack to 4 KB, as large
// as the stack of a call from C. The index keeps the compiler from
// dropping the array.
//
//go:noinline
func growStackTo4K(i uint) byte {
	var frame [1536]byte
	frame[i%uint(len(frame))] = byte(i)
	return frame[(i+1)%uint(len(frame))]
}

func TestCStrlen(t *testing.T) {
	// Bytes that a word-at-a-time test could take for a zero: 0x01 and
	// 0x80 borrow and carry, 0xff is all ones.
	for _, fill := range []byte{'a', 0x01, 0x80, 0xff} {
		// Backed by uint64s, so that the offsets below are every alignment
		// and every word read stays inside the buffer.
		words := make([]uint64, 12)
		buf := unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), len(words)*8)
		for off := 0; off < 8; off++ {
			for n := 0; off+n < len(buf)-8; n++ {
				for i := range buf {
					buf[i] = fill
				}
				buf[off+n] = 0
				if got := cStrlen(unsafe.Pointer(&buf[off])); got != n {
					t.Errorf("fill %#x, offset %d: cStrlen = %d, want %d", fill, off, got, n)
				}
			}
		}
	}
}

// TestRequest: each field of the request reaches the computation.
func TestRequest(t *testing.T) {
	env := append([]string{"SLURM_PROCID=2", "SLURM_STEP_NUM_TASKS=4", "SLURM_LOCALID=0"}, stepEnv...)
	seven, batch := uint32(7), uint32(0xfffffffb)
	tiny := request{}
	tiny.exec.stack, tiny.exec.argc, tiny.exec.argvBytes = 1, 1, taskenv.ExecArgFloor
	tests := []struct {
		name   string
		req    request
		rc     int
		has    []string
		hasNot []string
	}{
		{"no flags: the step from the variables, no ranks", request{}, resultSet,
			[]string{"slurm.task.id=2"}, []string{"nv.dl.rank"}},
		{"SO_REQ_STEP", request{step: &seven}, resultSet, []string{"slurm.step.id=7", "slurm.task.id=2"}, nil},
		{"SO_REQ_STEP of the batch step", request{step: &batch}, resultSet, nil, []string{"slurm.step.id", "slurm.task.id"}},
		{"SO_REQ_RANK", request{ranks: true}, resultSet, []string{"nv.dl.rank=2", "nv.dl.world_size=4", "nv.dl.local_rank=0"}, nil},
		{"the budget's inputs", tiny, resultUnchanged, nil, nil},
		{"max_env_bytes replaces them", request{maxEnv: 1 << 20, exec: tiny.exec}, resultSet, []string{"slurm.task.id=2"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rc, value, log := callRequest(env, "", tc.req)
			assert.Equal(t, rc, tc.rc, "log %q", log)
			for _, s := range tc.has {
				assert.Assert(t, strings.Contains(value, s), "%q lacks %s", value, s)
			}
			for _, s := range tc.hasNot {
				assert.Assert(t, !strings.Contains(value, s), "%q has %s", value, s)
			}
		})
	}
}

// TestTaskDeviceAnswers: with SO_REQ_DEVICES the GPU search takes the
// task's own answers for its GPUs' device nodes (the step's helper is not
// in the task's cgroups: its own would be wrong), so a task bound to 2 of
// its step's 4 GPUs gets exactly those; without the flag it decides as
// before, here as on a copy of a node, which has no device cgroup to ask.
func TestTaskDeviceAnswers(t *testing.T) {
	node := gpuNode(t)
	records := append(recordsOf(t, node), deviceRecords(4)...)
	uuid := func(i int) string { return fmt.Sprintf("GPU-%08d-aaaa-bbbb-cccc-dddddddddddd", i) }
	// A task of all of its step's 2 GPUs (task-env.txt), and one bound
	// to 2 of its step's 4 (--gpus-per-task=2): Slurm writes its local
	// indices and, in SLURM_STEP_GPUS, the step's first GPUs.
	all := slurmtest.TaskEnv(t)
	bound := setVars(all, "SLURM_GPUS_ON_NODE=4", "SLURM_JOB_GPUS=0,1,2,3")
	every := minors(0, 1, 2, 3)
	tests := []struct {
		name string
		env  []string
		req  request
		gpus []string // the UUIDs named, in CUDA's order; none: no GPU keys
		note string   // in the log, for a task without GPU keys
	}{
		{
			name: "bound task, the task's answers admit 2 of 4", env: bound,
			req:  request{devices: true, asked: every, usable: minors(1, 3)},
			gpus: []string{uuid(1), uuid(3)},
		},
		{
			name: "all of the step's GPUs, the task's answers admit them", env: all,
			req:  request{devices: true, asked: every, usable: minors(0, 1)},
			gpus: []string{uuid(0), uuid(1)},
		},
		{
			name: "bound task, the task's answers admit none", env: bound,
			req:  request{devices: true, asked: every},
			note: "the task's device cgroup admits none of the node's GPUs",
		},
		{
			name: "all of the step's GPUs, the task's answers admit none", env: all,
			req:  request{devices: true, asked: every},
			note: "the task's device cgroup admits none of the node's GPUs",
		},
		{
			name: "all of the step's GPUs, the task's answers admit others", env: all,
			req:  request{devices: true, asked: every, usable: minors(2, 3)},
			note: "SLURM_STEP_GPUS=0,1 names GRES index 0, which the task's device cgroup does not admit",
		},
		{
			// The task asks of every device node the records hold: none
			// asked of means none exists, and no GPU is the task's.
			name: "the flag with nothing asked: no device node, no GPU", env: all,
			req: request{devices: true, usable: every},
		},
		{
			name: "bound task without SO_REQ_DEVICES: as before", env: bound,
			req:  request{asked: every, usable: minors(1, 3)},
			note: "under ConstrainDevices the task has 2 of its step's 4 GPUs on the node",
		},
		{
			name: "all of the step's GPUs without SO_REQ_DEVICES: as before", env: all,
			req:  request{asked: every, usable: minors(2, 3)},
			gpus: []string{uuid(0), uuid(1)},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.req
			r.step, r.node, r.records = new(uint32), node, records
			rc, value, log := callRequest(tc.env, "", r)
			assert.Equal(t, rc, resultSet, "log %q", log)
			assert.Assert(t, strings.Contains(log, "\nD gpu search: node files from the step\n"), "log %q", log)
			var want []string
			if len(tc.gpus) > 0 {
				want = append(want, "nv.gpu.count="+strconv.Itoa(len(tc.gpus)))
				if len(tc.gpus) == 1 {
					want = append(want, "nv.gpu.uuid="+tc.gpus[0])
				}
			}
			for i, u := range tc.gpus {
				want = append(want, "nv.gpu."+strconv.Itoa(i)+".uuid="+u)
			}
			slices.Sort(want)
			assert.DeepEqual(t, gpuEntries(value), want)
			if tc.note != "" {
				assert.Assert(t, strings.Contains(log, tc.note), "log %q lacks %q", log, tc.note)
			}
		})
	}
}

// setVars returns env with the variables of kvs ("NAME=value") set:
// replaced where env has them, appended where not.
func setVars(env []string, kvs ...string) []string {
	out := append([]string(nil), env...)
	for _, kv := range kvs {
		name := kv[:strings.IndexByte(kv, '=')+1]
		i := slices.IndexFunc(out, func(e string) bool { return strings.HasPrefix(e, name) })
		if i < 0 {
			out = append(out, kv)
		} else {
			out[i] = kv
		}
	}
	return out
}

// gpuEntries returns the nv.gpu.* entries of a value, sorted.
func gpuEntries(value string) []string {
	var out []string
	for _, kv := range strings.Split(value, ",") {
		if strings.HasPrefix(kv, "nv.gpu.") {
			out = append(out, kv)
		}
	}
	slices.Sort(out)
	return out
}
