// Command goempty is an empty Go c-shared library with the spank-otel ABI:
// it starts a Go runtime and returns without doing anything. It is the
// baseline for timing the plugin (how much of a call is the runtime start)
// and a real Go runtime for the loader tests (signal handlers, limits).
//
// Build: go build -buildmode=c-shared -o libgoempty.so main.go
package main

/*
#cgo CFLAGS: -I${SRCDIR}/../../../../cgo
#include <stdlib.h>

#include "contract.h"
*/
import "C"

// spank_otel_abi returns contract.h's version. The header is outside this
// module, so the go command's cache does not see it change: build with
// spank/Makefile, which puts its checksum in CGO_CFLAGS.
//
//export spank_otel_abi
func spank_otel_abi() C.int { return C.SO_ABI_VERSION }

//export spank_otel_task_env
func spank_otel_task_env(req *C.struct_so_task_request, value **C.char, log **C.char) C.int {
	*value = nil
	*log = nil
	return 0
}

func main() {}
