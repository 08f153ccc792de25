// Command goempty is an empty Go c-shared library with the spank-otel ABI:
// it starts a Go runtime and returns without doing anything. It is the
// baseline for timing the plugin (how much of a call is the runtime start)
// and a real Go runtime for the loader tests (signal handlers, limits).
//
// Build: go build -buildmode=c-shared -o libgoempty.so main.go
package main

/*
#include <stdlib.h>
*/
import "C"

// spank_otel_abi returns SO_ABI_VERSION of cgo/contract.h, copied: the
// go command's build cache does not see a header outside the package's
// directory, so an included one could leave a stale number. A copy that
// differs fails every test that loads this library (abi-mismatch).
//
//export spank_otel_abi
func spank_otel_abi() C.int { return 1 }

//export spank_otel_task_env
func spank_otel_task_env(envp **C.char, exclude *C.char, maxEnvBytes C.long, value **C.char, log **C.char) C.int {
	*value = nil
	*log = nil
	return 0
}

func main() {}
