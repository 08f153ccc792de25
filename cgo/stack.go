package main

// stackReserve is the frame of growStack. A call from C runs on the 4 KB
// goroutine stack that cgo gives a C thread, and the task path keeps its
// buffers on the stack so that a task allocates almost nothing: it needs
// about 9 KB. Left alone, the stack doubles twice on the way down, and each
// copy walks every frame on it through tables that a new process has never
// touched, about 2% of the helper's time. growStack makes the runtime grow
// it once, to 16 KB, while only the export's few frames are there to copy.
// TestTaskPathFitsReserve fails when the path outgrows it.
const stackReserve = 12 << 10

// growStack has a stackReserve frame; the index keeps the compiler from
// dropping the array.
//
//go:noinline
func growStack(i uint) byte {
	var frame [stackReserve]byte
	frame[i%stackReserve] = byte(i)
	return frame[(i+1)%stackReserve]
}
