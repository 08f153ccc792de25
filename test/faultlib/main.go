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
// one that loads memory the way a task's input can:
//
//	alloc    allocates and writes SPANK_OTEL_TEST_ALLOC_MIB MiB (default
//	         64) and returns 1 with "fault.alloc=N": past the helper's
//	         memory bound the runtime dies of "out of memory"
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
	case "alloc":
		held := allocate(lookup(envp, "SPANK_OTEL_TEST_ALLOC_MIB", 64))
		*value = C.CString("fault.alloc=" + strconv.Itoa(len(held)))
		*log = nil
		runtime.KeepAlive(held)
		return 1
	}
	*value = C.CString("fault.none=1")
	*log = nil
	return 1
}

// fault reads SPANK_OTEL_TEST_FAULT from the task environment.
func fault(envp **C.char) string {
	v, _ := getenv(envp, "SPANK_OTEL_TEST_FAULT")
	return v
}

// environ is the task environment as Go strings.
func environ(envp **C.char) []string {
	var env []string
	for p := envp; p != nil && *p != nil; p = (**C.char)(unsafe.Add(unsafe.Pointer(p), unsafe.Sizeof(*p))) {
		env = append(env, C.GoString(*p))
	}
	return env
}

// getenv is name's value in the task environment.
func getenv(envp **C.char, name string) (string, bool) {
	for _, kv := range environ(envp) {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name {
			return v, true
		}
	}
	return "", false
}

// lookup is name's value in the task environment as a number, or def.
func lookup(envp **C.char, name string, def int) int {
	v, ok := getenv(envp, name)
	if !ok {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return def
	}
	return n
}

// allocate allocates n MiB and writes every page of it, so that it is
// charged; the caller keeps it (runtime.KeepAlive) while it must count.
func allocate(n int) [][]byte {
	held := make([][]byte, 0, n)
	for i := 0; i < n; i++ {
		b := make([]byte, 1<<20)
		for j := 0; j < len(b); j += 4096 {
			b[j] = 1
		}
		held = append(held, b)
	}
	return held
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
