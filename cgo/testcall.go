package main

/*
#include <stdlib.h>
*/
import "C"

import "unsafe"

// callTaskEnv calls spank_otel_task_env through its C signature, with C
// memory, the way the shim does. Tests use it: cgo cannot be used in
// _test.go files.
func callTaskEnv(env []string, exclude string, maxEnvBytes int) (rc int, value, log string) {
	envp := C.malloc(C.size_t(len(env)+1) * C.size_t(unsafe.Sizeof((*C.char)(nil))))
	defer C.free(envp)
	cenv := unsafe.Slice((**C.char)(envp), len(env)+1)
	for i, kv := range env {
		cenv[i] = C.CString(kv)
		defer C.free(unsafe.Pointer(cenv[i]))
	}
	cenv[len(env)] = nil
	cexclude := C.CString(exclude)
	defer C.free(unsafe.Pointer(cexclude))

	var cvalue, clog *C.char
	rc = int(spank_otel_task_env((**C.char)(envp), cexclude, C.long(maxEnvBytes), &cvalue, &clog))
	if cvalue != nil {
		value = C.GoString(cvalue)
		C.free(unsafe.Pointer(cvalue))
	}
	if clog != nil {
		log = C.GoString(clog)
		C.free(unsafe.Pointer(clog))
	}
	return rc, value, log
}
