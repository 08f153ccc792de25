/*
 * traceback.c - C frames for Go crash reports: glibc's backtrace() unwinds,
 * dladdr() names each frame by its exported symbol, library and offset.
 *
 * The Go runtime calls these functions from signal handlers and while it
 * crashes: nothing here allocates or takes a lock of its own. (The first
 * backtrace() in a process loads libgcc_s, but that happens only in a
 * process that is crashing already.)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <ucontext.h>
#include <unistd.h>

#include "traceback.h"

/* As many frames as the runtime asks for (len(runtime.cgoCallers)). */
#define MAX_FRAMES 32

/* The structs runtime.SetCgoTraceback documents, version 0. */
struct tb_arg {
	uintptr_t context;
	uintptr_t sig_context;
	uintptr_t *buf;
	uintptr_t max;
};

struct tb_symbolizer_arg {
	uintptr_t pc;
	const char *file;
	uintptr_t lineno;
	const char *func;
	uintptr_t entry;
	uintptr_t more;
	uintptr_t data;
};

/* Copies frames [from, n) into out as the runtime wants them: the PC of
 * the call instruction, not the return address, and a 0 after the last
 * one when there is room. Frame "exact" is a faulting PC, taken as is. */
static int copy_frames(uintptr_t *out, uintptr_t max, void **frames,
		       int from, int n, int exact)
{
	uintptr_t k = 0;
	int i;

	for (i = from; i < n && k < max; i++) {
		uintptr_t pc = (uintptr_t)frames[i];

		if (pc == 0)
			break;
		out[k++] = i == exact ? pc : pc - 1;
	}
	if (k < max)
		out[k] = 0;
	return (int)k;
}

static uintptr_t signal_pc(uintptr_t sig_context)
{
	const ucontext_t *uc = (const ucontext_t *)sig_context;

#if defined(__x86_64__)
	return (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
	return (uintptr_t)uc->uc_mcontext.pc;
#else
	(void)uc;
	return 0;
#endif
}

void cgotb_traceback(void *p)
{
	struct tb_arg *arg = p;
	void *frames[MAX_FRAMES + 8];
	uintptr_t pc;
	int n, i;

	/* No context function is installed (see traceback.go): a context is
	 * never given. */
	if (arg->max == 0 || arg->context != 0)
		return;
	n = backtrace(frames, MAX_FRAMES + 8);
	if (arg->sig_context == 0) {
		/* Called from C: everything below this function. */
		copy_frames(arg->buf, arg->max, frames, 1, n, -1);
		return;
	}
	/* In a signal handler: the unwinder passes through the kernel's
	 * signal frame into the code that was interrupted. The frames above
	 * it are the handler's own. */
	pc = signal_pc(arg->sig_context);
	for (i = 0; i < n; i++) {
		if ((uintptr_t)frames[i] == pc) {
			copy_frames(arg->buf, arg->max, frames, i, n, i);
			return;
		}
	}
	/* The unwinder lost its way: at least the PC that faulted. */
	arg->buf[0] = pc;
	if (arg->max > 1)
		arg->buf[1] = 0;
}

/* The file a library was loaded from. A loader that opens a library
 * first and loads it by descriptor (the spank-otel shim does) leaves
 * /proc/self/fd/N as its name, which says nothing once the process is
 * gone. */
static const char *library_path(const char *fname, char *buf, size_t len)
{
	ssize_t n;

	if (!fname || !*fname)
		return "?";
	if (strncmp(fname, "/proc/self/fd/", 14) != 0)
		return fname;
	n = readlink(fname, buf, len - 1);
	if (n <= 0)
		return fname;
	buf[n] = '\0';
	return buf;
}

void cgotb_symbolize(void *p)
{
	/* The runtime prints the name before it asks for the next PC, and
	 * one crash report is printed at a time. */
	static char name[512], path[256];
	struct tb_symbolizer_arg *arg = p;
	const char *lib;
	Dl_info info;

	arg->file = NULL;
	arg->lineno = 0;
	arg->func = NULL;
	arg->entry = 0;
	arg->more = 0;
	if (arg->pc == 0 || !dladdr((void *)arg->pc, &info))
		return;
	lib = library_path(info.dli_fname, path, sizeof(path));
	if (info.dli_sname && info.dli_saddr) {
		snprintf(name, sizeof(name), "%s+0x%lx (%s+0x%lx)", info.dli_sname,
			 (unsigned long)(arg->pc - (uintptr_t)info.dli_saddr),
			 lib, (unsigned long)(arg->pc - (uintptr_t)info.dli_fbase));
		arg->entry = (uintptr_t)info.dli_saddr;
	} else {
		snprintf(name, sizeof(name), "?? (%s+0x%lx)", lib,
			 (unsigned long)(arg->pc - (uintptr_t)info.dli_fbase));
	}
	arg->func = name;
}
