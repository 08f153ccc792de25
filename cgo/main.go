// Command cgo is libspankotel.so, the Go side of the spank-otel SPANK plugin,
// built with -buildmode=c-shared. It is a thin layer of C exports over
// package taskenv.
//
// The shim (spank/) loads this library with dlopen only inside the forked
// task child, right before execve, and calls spank_otel_task_env once. The
// Go runtime therefore never runs in slurmd, slurmstepd or the client
// commands, where a later fork could deadlock it.
package main

/*
#include <stdlib.h>
*/
import "C"

import (
	"strconv"
	"strings"
	"unsafe"

	"github.com/spank-otel/spank-otel/taskenv"
)

// abiVersion changes whenever the C signature of an export changes; the
// shim refuses a library that reports another number.
const abiVersion = 1

// Return codes of spank_otel_task_env.
const (
	resultUnchanged = 0
	resultSet       = 1
	resultInternal  = -1
)

//export spank_otel_abi
func spank_otel_abi() C.int { return abiVersion }

// spank_otel_task_env computes the task's OTEL_RESOURCE_ATTRIBUTES from envp,
// the task's own environment (not the process environment, which is
// slurmstepd's). The shim's side of the contract is task_env_fn in
// spank/helper_main.c, and the return codes in spank/helper.h.
//
//export spank_otel_task_env
func spank_otel_task_env(envp **C.char, exclude *C.char, maxEnvBytes C.long, value **C.char, log **C.char) (rc C.int) {
	if value == nil || log == nil {
		return resultInternal
	}
	*value, *log = nil, nil
	defer func() {
		// A panic must cost the task its attributes, never the task.
		if r := recover(); r != nil {
			*value = nil
			*log = C.CString("E internal error, attributes not written: " + panicText(r) +
				"\nD " + strings.ReplaceAll(string(stack()), "\n", " | ") + "\n")
			rc = resultInternal
		}
	}()

	opts := taskenv.Options{MaxEnvBytes: int(maxEnvBytes)}
	if exclude != nil {
		opts.Exclude = splitList(borrow(exclude))
	}
	res := taskenv.Compute(cStrings(envp), opts)

	*log = C.CString(runtimeLine() + logLines(res))
	if !res.Changed {
		return resultUnchanged
	}
	*value = C.CString(res.Value)
	return resultSet
}

// borrow views a C string as a Go string without copying. The C memory
// outlives the call, and nothing keeps a reference after it returns: the
// results are copied out with C.CString. The length is counted here, not by
// C strlen: a task has dozens of variables, and each call into C costs more
// than the short scan.
func borrow(p *C.char) string {
	start := unsafe.Pointer(p)
	n := 0
	for *(*byte)(unsafe.Add(start, n)) != 0 {
		n++
	}
	return unsafe.String((*byte)(start), n)
}

// cStrings views a NULL-terminated C array of strings as a Go slice.
func cStrings(envp **C.char) []string {
	if envp == nil {
		return nil
	}
	n := 0
	for p := envp; *p != nil; p = (**C.char)(unsafe.Add(unsafe.Pointer(p), unsafe.Sizeof(*p))) {
		n++
	}
	out := make([]string, 0, n)
	for _, p := range unsafe.Slice(envp, n) {
		out = append(out, borrow(p))
	}
	return out
}

func splitList(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// maxWarningLines bounds the verbose log of one task.
const maxWarningLines = 10

// logLines renders the result for the shim: "E " lines go to the error log
// (the user must know), "V " lines to verbose.
func logLines(res taskenv.Result) string {
	var b strings.Builder
	if res.Reason != "" {
		b.WriteString("E ")
		b.WriteString(oneLine(res.Reason))
		b.WriteByte('\n')
	}
	for i, w := range res.Warnings {
		// A hostile carrier can yield thousands of warnings; the log
		// needs the first few and a count.
		if i == maxWarningLines {
			b.WriteString("V " + strconv.Itoa(len(res.Warnings)-i) + " more warnings not shown\n")
			break
		}
		b.WriteString("V ")
		b.WriteString(oneLine(w.String()))
		b.WriteByte('\n')
	}
	return b.String()
}

// oneLine keeps a hostile value from forging extra log lines.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return '?'
		}
		return r
	}, s)
}

func main() {}
