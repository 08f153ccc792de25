package main

import (
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
)

// The library lives for one call in a helper process that exits right
// after it: a collector would only cost time. The shim cannot switch it
// off with GOGC, because a c-shared runtime reads its settings from the
// process's original environment block, not from the one the shim edits.
func init() {
	debug.SetGCPercent(-1)
}

// runtimeLine describes the Go runtime of the helper for the debug log, so
// an admin can see what the shim arranged: GOMAXPROCS follows the one CPU
// the helper binds itself to, and the thread count is what the helper
// costs in RLIMIT_NPROC and pids.max.
func runtimeLine() string {
	gc := "on"
	if percent := debug.SetGCPercent(-1); percent < 0 {
		gc = "off"
	} else {
		debug.SetGCPercent(percent)
	}
	return "D go runtime: GOMAXPROCS=" + strconv.Itoa(runtime.GOMAXPROCS(0)) +
		" threads=" + strconv.Itoa(threadCount()) + " gc=" + gc + "\n"
}

// threadCount reads the Threads: line of /proc/self/status; -1 when it
// cannot.
func threadCount() int {
	fd, err := syscall.Open("/proc/self/status", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return -1
	}
	defer syscall.Close(fd)
	var buf [4096]byte
	n, _ := syscall.Read(fd, buf[:])
	if n <= 0 {
		return -1
	}
	s := string(buf[:n])
	i := strings.Index(s, "\nThreads:")
	if i < 0 {
		return -1
	}
	s = strings.TrimLeft(s[i+len("\nThreads:"):], " \t")
	if end := strings.IndexByte(s, '\n'); end >= 0 {
		s = s[:end]
	}
	if v, err := strconv.Atoi(s); err == nil {
		return v
	}
	return -1
}
