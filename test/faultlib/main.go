// Command faultlib is a test-only stand-in for libspankotel.so that fails
// the way a Go c-shared library can: the cluster tests load it instead of
// the real library and check that each failure costs the task nothing but
// its attributes. It is never installed outside the test cluster.
//
// It exports the real ABI. The task environment's SPANK_OTEL_TEST_FAULT
// chooses what spank_otel_task_env does:
//
//	panic    an unrecovered Go panic
//	threads  a fatal error: no thread can start (debug.SetMaxThreads)
//	oom      a fatal error: runtime: out of memory
//	abort    abort() from C
//	segv     a segmentation fault in C (in spank_otel_fault_segv)
//	exit     os.Exit(3) in the middle of the call
//	hang     never returns
//
// and one more, which is no fault but a probe of where the helper runs:
//
//	placement  returns 1 with the helper's cgroups, CPUs, process group,
//	           uid and capabilities as the value (see placement)
//
// Anything else returns 1 with the value "fault.none=1".
package main

/*
#cgo CFLAGS: -I${SRCDIR}/../../cgo
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "contract.h"

static void fault_abort(void) { abort(); }
void spank_otel_fault_segv(void);
*/
import "C"

import (
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"github.com/spank-otel/spank-otel/internal/cgotraceback"
)

// Like the real library: crash reports name the C frames.
func init() { cgotraceback.Install() }

// spank_otel_abi returns contract.h's version. The header is outside this
// package, so the go command's cache does not see it change: the
// Makefiles put its checksum in CGO_CFLAGS.
//
//export spank_otel_abi
func spank_otel_abi() C.int { return C.SO_ABI_VERSION }

//export spank_otel_task_env
func spank_otel_task_env(req *C.struct_so_task_request, value **C.char, log **C.char) C.int {
	envp := req.envp
	switch fault(envp) {
	case "panic":
		panic("faultlib: a panic nobody recovers")
	case "threads":
		debug.SetMaxThreads(runtime.NumGoroutine() + 1)
		done := make(chan bool)
		for i := 0; i < 8; i++ {
			go func() {
				runtime.LockOSThread()
				<-done
			}()
		}
		<-done
	case "oom":
		big := make([]byte, 1<<46)
		big[len(big)-1] = 1
	case "abort":
		C.fault_abort()
	case "segv":
		C.spank_otel_fault_segv()
	case "exit":
		os.Exit(3)
	case "hang":
		select {}
	case "placement":
		*value = C.CString(placement())
		*log = nil
		return 1
	}
	*value = C.CString("fault.none=1")
	*log = nil
	return 1
}

// fault reads SPANK_OTEL_TEST_FAULT from the task environment.
func fault(envp **C.char) string {
	for p := envp; p != nil && *p != nil; p = (**C.char)(unsafe.Add(unsafe.Pointer(p), unsafe.Sizeof(*p))) {
		if kv := C.GoString(*p); strings.HasPrefix(kv, "SPANK_OTEL_TEST_FAULT=") {
			return strings.TrimPrefix(kv, "SPANK_OTEL_TEST_FAULT=")
		}
	}
	return ""
}

// placement describes the helper process from inside, for the cluster
// tests to compare with its task: "helper.cgroup=L1;L2;... helper.cpus=
// LIST helper.pgid=N helper.uid=R/E/S/F helper.capeff=HEX helper.capprm=HEX
// helper.nnp=N", the cgroup lines those of /proc/self/cgroup, the rest
// from /proc/self/status. Spaces separate the fields (a cgroup line may
// hold a comma: "4:cpu,cpuacct:/..."); no byte is a control character.
func placement() string {
	cg, _ := os.ReadFile("/proc/self/cgroup")
	status, _ := os.ReadFile("/proc/self/status")
	field := func(name string) string {
		for _, l := range strings.Split(string(status), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && k == name {
				return strings.Join(strings.Fields(v), "/")
			}
		}
		return "?"
	}
	return "helper.cgroup=" + strings.ReplaceAll(strings.TrimSpace(string(cg)), "\n", ";") +
		" helper.cpus=" + field("Cpus_allowed_list") +
		" helper.pgid=" + strconv.Itoa(syscall.Getpgrp()) +
		" helper.uid=" + field("Uid") +
		" helper.capeff=" + field("CapEff") +
		" helper.capprm=" + field("CapPrm") +
		" helper.nnp=" + field("NoNewPrivs")
}

func main() {}
