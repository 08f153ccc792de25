package main

/*
#include <stdlib.h>

#include "contract.h"
*/
import "C"

import (
	"unsafe"

	"github.com/spank-otel/spank-otel/detect/gpu"
)

// The numbers of contract.h the tests check Go's generated copies
// against. Constants: the library pays nothing for them.
const (
	headerMaxEntry    = C.SO_MAX_ENTRY
	headerExecSlack   = C.SO_EXEC_SLACK
	headerArgFloor    = C.SO_ARG_FLOOR
	headerArgCeiling  = C.SO_ARG_CEILING
	headerRegular     = C.SO_MAX_REGULAR_STEP
	headerNodeFile    = C.SO_NODE_FILE
	headerNodeDir     = C.SO_NODE_DIR
	headerNodeDev     = C.SO_NODE_CHARDEV
	headerNodeOther   = C.SO_NODE_OTHER
	headerNodeAbsent  = C.SO_NODE_ABSENT
	headerNodeStalled = C.SO_NODE_STALLED
)

// request is what a test asks the export besides the environment.
type request struct {
	maxEnv int     // max_env_bytes
	step   *uint32 // SO_REQ_STEP and step_id
	ranks  bool    // SO_REQ_RANK
	exec   struct{ stack, argc, argvBytes uint64 }
	node   string // a copy of a node's files to find GPUs in; "" for this machine's
	// The step parent's records of the node's files (contract.h), or
	// none.
	records []byte
	// With devices, SO_REQ_DEVICES and the task's own answers for its
	// GPUs' device nodes: bit N of asked and usable for /dev/nvidia<N>
	// (contract.h, devices_asked and devices_usable).
	devices       bool
	asked, usable [4]uint64
}

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
func (e *cEnv) call(r request) (rc int, value, log string) {
	var cvalue, clog *C.char
	req := (*C.struct_so_task_request)(C.calloc(1, C.size_t(unsafe.Sizeof(C.struct_so_task_request{}))))
	defer C.free(unsafe.Pointer(req))
	req.envp, req.exclude = e.envp, e.exclude
	req.max_env_bytes = C.int64_t(r.maxEnv)
	req.stack_limit, req.argv_count, req.argv_bytes = C.uint64_t(r.exec.stack), C.uint64_t(r.exec.argc), C.uint64_t(r.exec.argvBytes)
	if r.step != nil {
		req.flags |= C.SO_REQ_STEP
		req.step_id = C.uint32_t(*r.step)
	}
	if r.ranks {
		req.flags |= C.SO_REQ_RANK
	}
	if r.devices {
		req.flags |= C.SO_REQ_DEVICES
		for i := range r.asked {
			req.devices_asked[i], req.devices_usable[i] = C.uint64_t(r.asked[i]), C.uint64_t(r.usable[i])
		}
	}
	if r.records != nil {
		req.node_files = (*C.char)(C.CBytes(r.records))
		req.node_files_len = C.uint64_t(len(r.records))
		defer C.free(unsafe.Pointer(req.node_files))
	}
	if r.node == "" {
		rc = int(spank_otel_task_env(req, &cvalue, &clog))
	} else {
		rc = int(taskEnv(req, gpu.Root(r.node), &cvalue, &clog))
	}
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
// the way the shim does, with the budget maxEnvBytes.
func callTaskEnv(env []string, exclude string, maxEnvBytes int) (rc int, value, log string) {
	return callRequest(env, exclude, request{maxEnv: maxEnvBytes})
}

// callRequest is callTaskEnv with the whole request.
func callRequest(env []string, exclude string, r request) (rc int, value, log string) {
	e := newCEnv(env, exclude)
	defer e.free()
	return e.call(r)
}
