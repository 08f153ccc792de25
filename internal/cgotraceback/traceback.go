// Package cgotraceback makes Go crash reports name the C frames of a cgo
// program: when a signal such as SIGSEGV arrives in C code called from Go,
// the report lists the C function that faulted and its C callers, each as
// "symbol+offset (library+offset)", before the Go frames.
//
// It stands in for github.com/ianlancetaylor/cgosymbolizer, which the
// module proxy this project builds from does not serve. It needs no debug
// information: glibc's backtrace unwinds with the .eh_frame tables every
// library has, and dladdr names a frame by its exported symbol. A function
// that is not exported shows as "??" with its library and offset, which
// addr2line turns into a line given the unstripped file.
//
// No context function is installed: it would run on every call from C into
// Go, and recording the C stack there costs more than the whole call into
// the library. So the C callers of a Go export are not shown when Go code
// itself crashes (a Go panic that nobody recovers unwinds the call before
// the report is printed anyway).
package cgotraceback

/*
#include "traceback.h"
*/
import "C"

import (
	"runtime"
	"unsafe"
)

// Install registers the traceback and symbolizer functions with
// runtime.SetCgoTraceback. Call it once, from an init function: the
// runtime refuses a second, different registration.
func Install() {
	C.cgotb_init()
	runtime.SetCgoTraceback(0, unsafe.Pointer(C.cgotb_traceback), nil,
		unsafe.Pointer(C.cgotb_symbolize))
}
