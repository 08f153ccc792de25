/*
 * traceback.c - C frames for Go crash reports: glibc's backtrace() unwinds,
 * dladdr() names each frame by its exported symbol, library and offset.
 *
 * The Go runtime calls the traceback function from its signal handler for
 * every signal that arrives while a goroutine runs C code, not only for the
 * ones that crash: SIGURG, with which it preempts goroutines, too. Unwinding
 * is not async-signal-safe: the first backtrace() in a process loads
 * libgcc_s, which takes malloc's and the loader's locks. When the signal
 * interrupted the C library or the loader, which may hold those locks, the
 * thread would wait for itself forever (a fuzz worker hung that way in
 * C.malloc). So the frames are unwound only when the signal interrupted
 * other code, and otherwise the report shows the interrupted PC alone.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include <link.h>
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

/* The executable segments of the libraries whose locks a signal may find
 * held (see above), found once by cgotb_init before the runtime can call
 * cgotb_traceback, and only read after. */
#define MAX_LOCKED_RANGES 16
static struct {
	uintptr_t lo, hi;
} locked_text[MAX_LOCKED_RANGES];
static int locked_ranges;

static int holds_locks(const char *path)
{
	static const char *const prefixes[] = { "libc.so", "ld-linux", "ld64.so",
						"ld.so", "libpthread.so",
						"libdl.so", "libgcc_s.so" };
	const char *base = strrchr(path, '/');
	size_t i;

	base = base ? base + 1 : path;
	for (i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		if (strncmp(base, prefixes[i], strlen(prefixes[i])) == 0)
			return 1;
	return 0;
}

static int note_locked_text(struct dl_phdr_info *info, size_t size, void *data)
{
	int i;

	(void)size;
	(void)data;
	if (!info->dlpi_name || !holds_locks(info->dlpi_name))
		return 0;
	for (i = 0; i < info->dlpi_phnum && locked_ranges < MAX_LOCKED_RANGES; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		locked_text[locked_ranges].lo = info->dlpi_addr + ph->p_vaddr;
		locked_text[locked_ranges].hi =
			info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
		locked_ranges++;
	}
	return 0;
}

void cgotb_init(void)
{
	locked_ranges = 0;
	dl_iterate_phdr(note_locked_text, NULL);
}

static int in_locked_text(uintptr_t pc)
{
	int i;

	for (i = 0; i < locked_ranges; i++)
		if (locked_text[i].lo <= pc && pc < locked_text[i].hi)
			return 1;
	return 0;
}

/* A traceback of one frame: the PC the signal interrupted. */
static void only_pc(struct tb_arg *arg, uintptr_t pc)
{
	arg->buf[0] = pc;
	if (arg->max > 1)
		arg->buf[1] = 0;
}

void cgotb_traceback(void *p)
{
	struct tb_arg *arg = p;
	void *frames[MAX_FRAMES + 8];
	uintptr_t pc = 0;
	int n, i;

	/* No context function is installed (see traceback.go): a context is
	 * never given. */
	if (arg->max == 0 || arg->context != 0)
		return;
	if (arg->sig_context != 0) {
		pc = signal_pc(arg->sig_context);
		if (pc == 0 || in_locked_text(pc)) {
			only_pc(arg, pc);
			return;
		}
	}
	n = backtrace(frames, MAX_FRAMES + 8);
	if (arg->sig_context == 0) {
		/* Called from C: everything below this function. */
		copy_frames(arg->buf, arg->max, frames, 1, n, -1);
		return;
	}
	/* In a signal handler: the unwinder passes through the kernel's
	 * signal frame into the code that was interrupted. The frames above
	 * it are the handler's own. */
	for (i = 0; i < n; i++) {
		if ((uintptr_t)frames[i] == pc) {
			copy_frames(arg->buf, arg->max, frames, i, n, i);
			return;
		}
	}
	/* The unwinder lost its way: at least the PC that faulted. */
	only_pc(arg, pc);
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
