package main

import (
	"runtime"
	"strconv"
	_ "unsafe" // for go:linkname
)

// The library lives for one call in a helper process that exits right
// after it: a collector would only cost time. The shim cannot switch it
// off with GOGC, because a c-shared runtime reads its settings from the
// process's original environment block, not from the one the shim edits.
func init() {
	setGCPercent(-1)
}

// setGCPercent is runtime/debug.SetGCPercent without runtime/debug, which
// imports fmt and os and so would initialise them, and reflect, in every
// task. The runtime provides it under this name (it pushes the symbol with
// go:linkname), so the linker accepts the reference.
//
//go:linkname setGCPercent runtime/debug.setGCPercent
func setGCPercent(percent int32) int32

// runtimeLine describes the Go runtime of the helper for the debug log, so
// an admin can see what the shim arranged: GOMAXPROCS follows the one CPU
// the helper binds itself to, and the thread bound is what the helper
// costs in RLIMIT_NPROC and pids.max. stack=moved says the call outgrew
// the 4 KB stack of a call from C, which costs the task time
// (docs/performance.md).
func runtimeLine(stackMoved bool) string {
	stack := "kept"
	if stackMoved {
		stack = "moved"
	}
	gc := "on"
	if percent := setGCPercent(-1); percent < 0 {
		gc = "off"
	} else {
		setGCPercent(percent)
	}
	return lineDebug + "go runtime: GOMAXPROCS=" + strconv.Itoa(runtime.GOMAXPROCS(0)) +
		" threads<=" + strconv.Itoa(threadBound()) + " gc=" + gc + " stack=" + stack + "\n"
}

// threadBound is the number of Ms the runtime has, from its own list
// (runtime.ThreadCreateProfile counts them): one per OS thread it runs on,
// the C thread of this call included, plus the one it keeps ready for the
// next C thread. The exact count is in /proc/self/status, but opening and
// reading that in a new process is a measurable part of the helper's time
// (docs/performance.md), for a line that shows only at debug level.
func threadBound() int {
	n, _ := runtime.ThreadCreateProfile(nil)
	return n
}

// stack is runtime/debug.Stack: the calling goroutine's stack trace.
func stack() []byte {
	buf := make([]byte, 4096)
	for {
		n := runtime.Stack(buf, false)
		if n < len(buf) {
			return buf[:n]
		}
		buf = make([]byte, 2*len(buf))
	}
}

// panicText is what fmt's %v writes for the panic values Go code raises:
// runtime errors and other errors, strings, Stringers and integers.
func panicText(r any) string {
	switch r := r.(type) {
	case error:
		return r.Error()
	case string:
		return r
	case interface{ String() string }:
		return r.String()
	case int:
		return strconv.Itoa(r)
	case int64:
		return strconv.FormatInt(r, 10)
	case uint64:
		return strconv.FormatUint(r, 10)
	case bool:
		return strconv.FormatBool(r)
	}
	return "panic value of an unexpected type"
}
