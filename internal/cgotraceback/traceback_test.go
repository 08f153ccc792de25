package cgotraceback_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"testing"
	"time"
)

// TestCrashReportNamesCFrames builds a program that installs the
// symbolizer and crashes on purpose, and reads its crash report.
func TestCrashReportNamesCFrames(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program")
	}
	bin := filepath.Join(t.TempDir(), "crasher")
	gocmd := filepath.Join(runtime.GOROOT(), "bin", "go")
	// -rdynamic: dladdr names only symbols in the dynamic symbol table,
	// which an executable otherwise leaves out.
	build := exec.Command(gocmd, "build", "-ldflags=-extldflags=-rdynamic", "-o", bin, "./testdata/crasher")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin).CombinedOutput()
	if _, ok := err.(*exec.ExitError); !ok {
		t.Fatalf("want a crash, got %v\n%s", err, out)
	}
	// The C function that faulted at its exact PC, its C caller, then
	// Go's frames.
	const frame = ` \(\S*crasher\+0x[0-9a-f]+\)\n\tpc=0x[0-9a-f]+\n`
	for _, re := range []string{
		`(?m)^signal arrived during cgo execution$`,
		`\ncgotb_test_segv\+0x[0-9a-f]+` + frame + `cgotb_test_outer\+0x[0-9a-f]+` + frame,
		`(?s)cgotb_test_outer.*\nmain\._Cfunc_cgotb_test_outer\(\)`,
	} {
		if !regexp.MustCompile(re).Match(out) {
			t.Errorf("report lacks /%s/:\n%s", re, out)
		}
	}
}

// TestSignalsDuringMalloc runs a program whose goroutines call C's malloc
// and free while it sends itself SIGURG. The runtime calls the traceback
// function for each signal that lands in C code; when that was malloc, an
// unwinder that loads libgcc_s there waits for malloc's lock forever.
// Before the fix, 3 of 6 runs hung.
func TestSignalsDuringMalloc(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program")
	}
	bin := filepath.Join(t.TempDir(), "mallocstorm")
	gocmd := filepath.Join(runtime.GOROOT(), "bin", "go")
	if out, err := exec.Command(gocmd, "build", "-o", bin, "./testdata/mallocstorm").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	// Each run is a new process: only the first unwinding in a process
	// loads libgcc_s. The program stops by itself after 3 seconds.
	for i := range 5 {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		out, err := exec.CommandContext(ctx, bin).CombinedOutput()
		timedOut := ctx.Err() != nil
		cancel()
		if timedOut {
			t.Fatalf("run %d hung (killed after 60 s)\n%s", i, out)
		}
		if err != nil {
			t.Fatalf("run %d: %v\n%s", i, err, out)
		}
	}
}
