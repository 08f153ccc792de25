package main

/*
#include <stdlib.h>

#include "contract.h"
*/
import "C"

import "unsafe"

// The limits of contract.h, for the test that holds internal/taskenv's Go
// copies to them (see contract_test.go). Constants: the library pays
// nothing for them.
const (
	headerMaxEntry   = C.SO_MAX_ENTRY
	headerExecSlack  = C.SO_EXEC_SLACK
	headerArgFloor   = C.SO_ARG_FLOOR
	headerArgCeiling = C.SO_ARG_CEILING
)

// cEnv is a task environment and an exclude= list in C memory, as the shim
// passes them to spank_otel_task_env. Tests use it: cgo cannot be used in
// _test.go files.
type cEnv struct {
	envp    **C.char // NULL-terminated
	exclude *C.char
}

// newCEnv copies env and exclude to C memory; free releases it.
func newCEnv(env []string, exclude string) *cEnv {
	e := &cEnv{exclude: C.CString(exclude)}
	e.envp = (**C.char)(C.malloc(C.size_t(len(env)+1) * C.size_t(unsafe.Sizeof((*C.char)(nil)))))
	cenv := unsafe.Slice(e.envp, len(env)+1)
	for i, kv := range env {
		cenv[i] = C.CString(kv)
	}
	cenv[len(env)] = nil
	return e
}

func (e *cEnv) free() {
	for p := e.envp; *p != nil; p = (**C.char)(unsafe.Add(unsafe.Pointer(p), unsafe.Sizeof(*p))) {
		C.free(unsafe.Pointer(*p))
	}
	C.free(unsafe.Pointer(e.envp))
	C.free(unsafe.Pointer(e.exclude))
}

// call calls spank_otel_task_env through its C signature and returns what
// it answered, with its strings freed. It adds one small frame to the
// stack of the call.
func (e *cEnv) call(maxEnvBytes int) (rc int, value, log string) {
	var cvalue, clog *C.char
	rc = int(spank_otel_task_env(e.envp, e.exclude, C.long(maxEnvBytes), &cvalue, &clog))
	value, log = takeString(cvalue), takeString(clog)
	return rc, value, log
}

// takeString returns the C string p as a Go string, and frees it.
func takeString(p *C.char) string {
	if p == nil {
		return ""
	}
	defer C.free(unsafe.Pointer(p))
	return C.GoString(p)
}

// callTaskEnv calls spank_otel_task_env with env and exclude in C memory,
// the way the shim does.
func callTaskEnv(env []string, exclude string, maxEnvBytes int) (rc int, value, log string) {
	e := newCEnv(env, exclude)
	defer e.free()
	return e.call(maxEnvBytes)
}
