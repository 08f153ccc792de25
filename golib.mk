# golib.mk - how a Go c-shared library is linked. Included by the Makefile
# (libspankotel.so) and by spank/Makefile (the empty Go library that make
# bench compares it with, which must be linked the same way to be a fair
# reference).
#
# -s -w keep the file small: every step's helper maps it.
#
# The loader applies about 4,900 relative relocations to the library in
# every helper. Packed (DT_RELR, glibc 2.36 and later) their table is 2 KB
# instead of 117 KB, and a task starts about 20 us sooner (the bench harness,
# three interleaved runs). Only where the linker packs them and records the
# GLIBC_ABI_DT_RELR version: with it, dpkg-shlibdeps and rpm make the
# package need a glibc that reads them, and an older glibc refuses the file
# instead of running it unrelocated.
# The probe runs once per build: the result is exported to sub-makes
# (spank/), and a value given on the command line (the RPM spec's empty
# one) wins.
ifeq ($(origin GO_LIB_EXTLDFLAGS),undefined)
GO_LIB_EXTLDFLAGS := $(shell f=$$(mktemp) && \
	echo 'int puts(const char *); static int x; int *p = &x; void f(void) { puts(""); }' | \
	$(CC) -x c - -shared -fPIC -o "$$f" -Wl,-z,pack-relative-relocs 2>/dev/null && \
	grep -q GLIBC_ABI_DT_RELR "$$f" && echo -Wl,-z,pack-relative-relocs; rm -f "$$f")
endif
export GO_LIB_EXTLDFLAGS
GO_LIB_LDFLAGS := -s -w$(if $(GO_LIB_EXTLDFLAGS), -extldflags=$(GO_LIB_EXTLDFLAGS))

# The helper never collects (gc=off, cgo/runtime.go), so which collector
# the library has matters only for what starting it costs. Go 1.26's
# default one keeps the mark bits of a span of small objects in the span's
# last bytes, so every new span costs a page fault for bits nothing reads
# here; the other keeps them together. A fault costs tens of microseconds
# in a virtual machine, and a task's call takes several new spans (figures:
# docs/performance.md, "Which GPU"). Used while the toolchain offers it;
# probed once, exported to spank/ as the flags above are.
ifeq ($(origin GO_LIB_GOEXPERIMENT),undefined)
GO_LIB_GOEXPERIMENT := $(shell GOEXPERIMENT=nogreenteagc $(or $(GO),go) env GOEXPERIMENT >/dev/null 2>&1 && echo nogreenteagc)
endif
export GO_LIB_GOEXPERIMENT
# The environment of a go build of a c-shared library.
GO_LIB_ENV := CGO_ENABLED=1$(if $(GO_LIB_GOEXPERIMENT), GOEXPERIMENT=$(GO_LIB_GOEXPERIMENT))

# The test libraries (the empty one, the fault library) include
# cgo/contract.h from outside their package directory, which the go
# command's build cache does not hash: the header's checksum in CGO_CFLAGS,
# which it does hash, keeps a cached build from holding an older contract.
CONTRACT_SUM := $(shell sha256sum $(dir $(lastword $(MAKEFILE_LIST)))cgo/contract.h | cut -c1-16)
CONTRACT_CGO_CFLAGS := -O2 -g -DSO_CONTRACT_SUM=$(CONTRACT_SUM)
