// Command cgo is libspankotel.so, the Go side of the spank-otel SPANK plugin,
// built with -buildmode=c-shared. It is a thin layer of C exports over
// package taskenv: it converts the shim's request into a taskenv.Request,
// calls taskenv.Run and converts the Result back.
//
// The shim (spank/) loads this library with dlopen only in a short-lived
// helper process it forks from each task child, and calls
// spank_otel_task_env once there with the task's environment. The Go
// runtime therefore never runs in slurmd, slurmstepd, the client commands
// or the task itself, which must stay single-threaded for the plugins
// after it (container plugins join namespaces).
package main

/*
#include <stdlib.h>

#include "contract.h"
*/
import "C"

import (
	"runtime"
	"strconv"
	"sync/atomic"
	"unsafe"

	"github.com/spank-otel/spank-otel/cgo/nodefiles"
	"github.com/spank-otel/spank-otel/detect/gpu"
	"github.com/spank-otel/spank-otel/internal/strs"
	"github.com/spank-otel/spank-otel/libcarrier"
	"github.com/spank-otel/spank-otel/taskenv"
)

// The ABI version and the return codes of spank_otel_task_env are the
// shim's, from contract.h.
const (
	abiVersion      = C.SO_ABI_VERSION
	resultUnchanged = C.SO_RC_LEAVE
	resultSet       = C.SO_RC_SET
	resultUnset     = C.SO_RC_UNSET
	resultInternal  = C.SO_RC_ERROR
)

//export spank_otel_abi
func spank_otel_abi() C.int { return abiVersion }

// spank_otel_collect frees what earlier calls left: the collector is off,
// and a helper that answers many tasks (the step's) calls this between
// requests, when no task waits, so that its memory bound holds for the
// next. Its C signature is contract.h's.
//
//export spank_otel_collect
func spank_otel_collect() { runtime.GC() }

// spank_otel_task_env computes the task's OTEL_RESOURCE_ATTRIBUTES from the
// request: the task's own environment (not the process environment, which
// is slurmstepd's), its step and the budget's inputs. Its C signature and
// return codes are contract.h's.
//
//export spank_otel_task_env
func spank_otel_task_env(req *C.struct_so_task_request, value **C.char, log **C.char) C.int {
	return taskEnv(req, gpu.Root("/"), value, log)
}

// taskEnv is spank_otel_task_env on the node whose files node reads: this
// machine's in the plugin, a copy of a node's in the tests. The request's
// node files, when it has them, answer first.
func taskEnv(req *C.struct_so_task_request, node gpu.FS, value **C.char, log **C.char) C.int {
	if req == nil || value == nil || log == nil {
		return resultInternal
	}
	*value, *log = nil, nil
	// A condition the compiler cannot decide keeps the whole task path
	// linked into the bench's load-only variant, so that it loads what the
	// real library loads.
	if loadOnly && req.max_env_bytes >= 0 {
		return resultUnchanged
	}
	// Where a local lives before and after the call tells whether the
	// runtime had to move the stack to a larger one: a cost the debug line
	// reports (TestTaskPathStack keeps it from happening).
	var mark byte
	before := uintptr(unsafe.Pointer(&mark))
	call := taskCall{mem: leftMemory()}
	call.convertRequest(req, node)
	if call.failure == "" {
		call.runTask()
	}
	rc := replyToShim(&call, uintptr(unsafe.Pointer(&mark)) != before, value, log)
	call.mem.keep(call.req.Env)
	spareMemory.Store(call.mem)
	return rc
}

// callMemory is what a call leaves to the next in the same process: the
// task path's Runner and the slice the environment is viewed through. The
// step's helper answers its tasks one after another, and memory an
// earlier call touched costs the next no page fault.
type callMemory struct {
	runner taskenv.Runner
	env    []string
}

// spareMemory holds the callMemory of the last call that ended, the one
// piece of state the export keeps between calls. Calls take it whole, so
// that C threads calling at once never share one (a call that finds none
// makes its own); a sync.Pool would cost more than it saves, its per-CPU
// set-up being new pages in a new helper. Its zero value needs no
// initialiser (TestTaskPathInit).
var spareMemory atomic.Pointer[callMemory]

// leftMemory is the callMemory an earlier call left, or a new one.
func leftMemory() *callMemory {
	if m := spareMemory.Swap(nil); m != nil {
		return m
	}
	return new(callMemory)
}

// keep keeps env's array for the next call, without its strings: they
// view C memory that is the caller's again.
func (m *callMemory) keep(env []string) {
	clear(env)
	m.env = env[:0]
}

// taskCall is the call for one task: the Request the first stage hands
// the second, and what it came to: the Result, or the failure that
// replaced it (a panic must cost the task its attributes, never the
// task). Both stages are called from the export's frame, taskenv's stack
// rule.
type taskCall struct {
	mem     *callMemory // what earlier calls left; the call's to use
	req     taskenv.Request
	files   *nodefiles.FS // the step's records (maybe none) over the node: req.Node
	res     *taskenv.Result
	failure string // empty unless a step panicked
}

// convertRequest converts the shim's request into the call's Request:
// the task's environment, the node's files and the options.
//
//go:noinline
func (call *taskCall) convertRequest(req *C.struct_so_task_request, node gpu.FS) {
	defer recoverInto(&call.failure)
	call.req.Env = cStrings(call.mem.env, req.envp)
	// Without records every question goes to the node, and is counted:
	// the debug line then says whether the search read anything.
	call.files = newFiles(req, node)
	call.req.Node = call.files
	setOptions(&call.req.Options, req)
}

// runTask runs the task path, taskenv.Run, on the call's Request.
//
//go:noinline
func (call *taskCall) runTask() {
	defer recoverInto(&call.failure)
	call.res = call.mem.runner.Run(&call.req)
}

// replyToShim hands call's Result, or its failure, to the shim as C
// strings and returns the export's result code. It is a function of its
// own so that the strings it builds take no room in the export's frame
// while the task path runs (the stack rule: package taskenv).
//
//go:noinline
func replyToShim(call *taskCall, stackMoved bool, value, log **C.char) C.int {
	if call.failure != "" {
		*log = C.CString(call.failure)
		return resultInternal
	}
	res := call.res
	*log = C.CString(runtimeLine(stackMoved) + call.filesLine() + logLines(*res))
	switch {
	case !res.Changed:
		return resultUnchanged
	case res.Unset:
		return resultUnset
	}
	*value = C.CString(res.Value)
	return resultSet
}

// filesLine says, at debug level, where the GPU search read the node's
// files: from the step parent's records alone (what each task of a step
// on a GPU node should say), from the node, or both. No search, no line.
func (call *taskCall) filesLine() string {
	source := "none"
	if call.files != nil {
		source = call.files.Source()
	}
	switch source {
	case "step":
		return lineDebug + "gpu search: node files from the step\n"
	case "node":
		return lineDebug + "gpu search: node files from the node\n"
	case "step+node":
		return lineDebug + "gpu search: node files from the step and the node\n"
	case "stalled":
		return lineDebug + "gpu search: node files from the step, whose reading stalled: none read\n"
	}
	return ""
}

// setOptions sets opts to the Options the request asks for.
func setOptions(opts *taskenv.Options, req *C.struct_so_task_request) {
	*opts = taskenv.Options{
		Exclude:     excludeList(req.exclude),
		MaxEnvBytes: int(max(req.max_env_bytes, 0)),
		Exec: taskenv.Exec{StackLimit: uint64(req.stack_limit),
			ArgCount: int(min(req.argv_count, maxArgs)), ArgBytes: int(min(req.argv_bytes, maxArgs))},
		Ranks: req.flags&C.SO_REQ_RANK != 0,
	}
	if req.flags&C.SO_REQ_STEP != 0 {
		step := uint32(req.step_id)
		opts.Step = &step
	}
}

// newFiles returns the node's files for the GPU search: the request's
// records (contract.h) over node, none when it has none, and with
// SO_REQ_DEVICES the task's own answers for its GPUs' device nodes. The
// records are C memory the helper inherited from the step parent, which
// outlives the call. A function of its own keeps convertRequest's frame
// small (TestTaskPathStack).
//
//go:noinline
func newFiles(req *C.struct_so_task_request, node gpu.FS) *nodefiles.FS {
	var records string
	if req.node_files != nil && req.node_files_len > 0 && req.node_files_len <= C.SO_NODE_FILES_MAX {
		records = unsafe.String((*byte)(unsafe.Pointer(req.node_files)), int(req.node_files_len))
	}
	files := nodefiles.New(records, node)
	if req.flags&C.SO_REQ_DEVICES != 0 {
		files.TaskAnswers(words(&req.devices_asked), words(&req.devices_usable))
	}
	return files
}

// words copies one of the request's bit arrays of the task's answers. A
// header with another number of words fails to compile here.
func words(w *[4]C.uint64_t) [4]uint64 {
	return [4]uint64{uint64(w[0]), uint64(w[1]), uint64(w[2]), uint64(w[3])}
}

// maxArgs bounds the argument figures a request gives, far past anything
// execve takes, so that they stay ints.
const maxArgs = 1 << 40

// excludeList returns the keys of the exclude= option, nil without it.
func excludeList(exclude *C.char) []string {
	if exclude == nil {
		return nil
	}
	return splitList(borrow(exclude))
}

// recoverInto is convertRequest's and runTask's deferred call.
func recoverInto(failure *string) {
	if r := recover(); r != nil {
		*failure = lineError + "internal error, attributes not written: " + oneLine(panicText(r)) +
			"\n" + lineDebug + flatten(string(stack()), " | ") + "\n"
	}
}

// borrow views a C string as a Go string without copying. The C memory
// outlives the call, and nothing keeps a reference after it returns: the
// results are copied out with C.CString.
func borrow(p *C.char) string {
	return unsafe.String((*byte)(unsafe.Pointer(p)), cStrlen(unsafe.Pointer(p)))
}

// cStrlen is C's strlen, counted here: a task has dozens of variables, and
// a call into C for each costs more than the scan. Like glibc's, it reads
// aligned 8-byte words, which never cross a page, so the bytes it reads
// past the NUL are mapped. One byte at a time was a tenth of the call for a
// small environment; module systems make them tens of kilobytes.
func cStrlen(p unsafe.Pointer) int {
	n := 0
	for ; uintptr(p)%8 != 0; n++ {
		if *(*byte)(p) == 0 {
			return n
		}
		p = unsafe.Add(p, 1)
	}
	for {
		// Nonzero exactly when the word holds a zero byte.
		if w := *(*uint64)(p); (w-0x0101010101010101)&^w&0x8080808080808080 != 0 {
			break
		}
		p, n = unsafe.Add(p, 8), n+8
	}
	for ; *(*byte)(p) != 0; n++ {
		p = unsafe.Add(p, 1)
	}
	return n
}

// cStrings views a NULL-terminated C array of strings as a Go slice, in
// buf's array when it has room.
func cStrings(buf []string, envp **C.char) []string {
	if envp == nil {
		return nil
	}
	n := 0
	for p := envp; *p != nil; p = (**C.char)(unsafe.Add(unsafe.Pointer(p), unsafe.Sizeof(*p))) {
		n++
	}
	out := buf[:0]
	if cap(out) < n {
		out = make([]string, 0, n)
	}
	for _, p := range unsafe.Slice(envp, n) {
		out = append(out, borrow(p))
	}
	return out
}

// splitList splits the exclude= list at its commas, without the blanks
// (spaces and tabs) around each key.
func splitList(s string) []string {
	var out []string
	for s != "" {
		item := s
		if i := strs.IndexByte(s, ','); i >= 0 {
			item, s = s[:i], s[i+1:]
		} else {
			s = ""
		}
		if item = strs.Trim(item, " \t"); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// maxWarningLines bounds the lines of each kind in the log of one task.
const maxWarningLines = 10

// The prefixes of the log's lines, contract.h's letters.
const (
	lineError   = string(rune(C.SO_LINE_ERROR)) + " "
	lineInfo    = string(rune(C.SO_LINE_INFO)) + " "
	lineVerbose = string(rune(C.SO_LINE_VERBOSE)) + " "
	lineDebug   = string(rune(C.SO_LINE_DEBUG)) + " "
)

// logLines renders the result for the shim: the reason it was left alone
// at error level (the user must know), what the repair dropped at info,
// the warnings at verbose, why a task's GPUs are not named at debug.
func logLines(res taskenv.Result) string {
	var b strs.Builder
	if res.Reason != "" {
		b.WriteString(lineError)
		b.WriteString(oneLine(res.Reason))
		b.WriteByte('\n')
	}
	writeCapped(&b, lineInfo, "entries dropped", res.Dropped)
	writeCapped(&b, lineVerbose, "warnings", res.Warnings)
	writeCapped(&b, lineDebug, "notes", res.Debug)
	return b.String()
}

// writeCapped writes one line per warning, with prefix, up to
// maxWarningLines, then one line with the count of the rest: a hostile
// carrier can yield thousands, and the log needs the first few.
func writeCapped(b *strs.Builder, prefix, what string, ws []libcarrier.Warning) {
	for i, w := range ws {
		if i == maxWarningLines {
			b.WriteString(prefix)
			b.WriteString(strconv.Itoa(len(ws) - i))
			b.WriteString(" more " + what + " not shown\n")
			return
		}
		b.WriteString(prefix)
		b.WriteString(oneLine(w.String()))
		b.WriteByte('\n')
	}
}

// oneLine keeps a hostile value from forging extra log lines.
func oneLine(s string) string { return flatten(s, "?") }

// flatten writes s on one line: newline for each '\n', '?' for any other
// control character, and U+FFFD for a byte that is not UTF-8, as
// strings.Map would.
func flatten(s, newline string) string {
	var b strs.Builder
	b.Grow(len(s))
	for _, r := range s {
		switch {
		case r == '\n':
			b.WriteString(newline)
		case r < 0x20 || r == 0x7f:
			b.WriteByte('?')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func main() {}
