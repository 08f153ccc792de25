// Command mallocstorm calls C's malloc and free from several goroutines
// while the process sends itself SIGURG, the signal the Go runtime uses to
// preempt goroutines, for the test of package cgotraceback: the runtime
// calls the traceback function for every signal that arrives during a cgo
// call, so it must not deadlock when the signal interrupted malloc.
package main

/*
#include <stdlib.h>
*/
import "C"

import (
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/spank-otel/spank-otel/internal/cgotraceback"
)

func init() { cgotraceback.Install() }

func main() {
	stop := time.Now().Add(3 * time.Second)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(stop) {
				// Above tcache's sizes, so that malloc takes its arena's
				// lock.
				for size := 2048; size < 64<<10; size += 512 {
					C.free(C.malloc(C.size_t(size)))
				}
			}
		}()
	}
	go func() {
		for {
			syscall.Kill(os.Getpid(), syscall.SIGURG)
		}
	}()
	wg.Wait()
}
