/*
 * membound.h - the helper's hard memory bound.
 *
 * Every helper of a step runs at once in the job's memory cgroup, and an
 * OOM kill of one would be counted against the step (Slurm reports the
 * step OUT_OF_MEMORY; with OOMKillStep the kernel or Slurm ends all of
 * it). So each helper bounds itself, and headroom.c checks room for that
 * bound times the step's helpers on the node.
 *
 * The bound is RLIMIT_DATA, which since Linux 4.7 caps the private
 * writable mappings of a process (heap, anonymous mmap, thread stacks; not
 * the main stack). The Go runtime gets its memory only through mmap, so
 * past the bound its mmap fails and it aborts ("fatal error: runtime:
 * out of memory", or "cannot allocate memory") before the cgroup is
 * charged: no OOM event, and the tasks see a helper that died (the step
 * parent names the bound in its log line, stephelper.c).
 *
 * RLIMIT_DATA counts address space, not the pages touched, and the Go
 * runtime maps far more than it uses: a 32 MiB heap-arena index of which
 * it writes one page, 4 MiB heap chunks, and a thread stack per thread
 * (glibc's default, 8 MiB each under the usual stack limit). And the
 * helper's own start maps what its image and C library need. So the
 * bound is relative and in two stages:
 *
 *   load: before dlopen, the default thread stack is made small and the
 *         limit set to what is mapped now plus SO_HELPER_START_DATA: the
 *         runtime's start, which does not depend on the task's input,
 *         maps 42 MiB and touches about 1.3 MiB (docs/performance.md);
 *   call: once the runtime has started (spank_otel_abi returned), the
 *         limit is set to what is mapped then plus SO_HELPER_CALL_MEMORY:
 *         everything the call adds, its Go heap, its threads and the
 *         helper's copy of the environment, must fit in it.
 *
 * What one helper can cost the job is then SO_HELPER_MEMORY: the start's
 * share (SO_HELPER_LOAD_MEMORY, measured at a third of it) and the call's
 * (hard). headroom.c asks for exactly that per helper.
 */
#ifndef SPANK_OTEL_MEMBOUND_H
#define SPANK_OTEL_MEMBOUND_H

#include <stddef.h>

/* What loading and starting the Go runtime costs the job's memory: the
 * pages it touches, its page tables and kernel stacks; 1.3 MiB measured. */
#define SO_HELPER_LOAD_MEMORY (4ULL << 20)
/* The hard bound of the call: writable memory it may map once the runtime
 * has started. The worst carrier libcarrier accepts takes one more 4 MiB
 * heap chunk (docs/performance.md). */
#define SO_HELPER_CALL_MEMORY (8ULL << 20)
/* What one helper may cost the job's memory, all told: the one figure
 * headroom.c counts per helper. */
#define SO_HELPER_MEMORY (SO_HELPER_LOAD_MEMORY + SO_HELPER_CALL_MEMORY)
/* The address space the runtime's start may map (42 MiB measured: the
 * 32 MiB heap-arena index, the first 4 MiB heap chunk, its metadata and
 * the stacks of five threads). */
#define SO_HELPER_START_DATA (96ULL << 20)
/* The stack of each thread the Go runtime starts: its system goroutine and
 * the few C functions it calls run there (Go's own threads get 16 KiB). */
#define SO_HELPER_THREAD_STACK (256UL << 10)

/* Before the library is loaded: small thread stacks, and RLIMIT_DATA at
 * what is mapped now plus SO_HELPER_START_DATA (soft and hard: the library
 * cannot raise it). Returns 0, or -1 with a sentence in why. */
int so_membound_load(char *why, size_t len);

/* Once the runtime has started: RLIMIT_DATA at what is mapped now plus
 * SO_HELPER_CALL_MEMORY. Returns 0, or -1 with a sentence in why. */
int so_membound_call(char *why, size_t len);

/* Whether the helper's stderr (text) says that it ran out of memory, which
 * under the bound means the call needed more than SO_HELPER_CALL_MEMORY. */
int so_membound_hit(const char *text);

/* The note for a log line that quotes text: that the helper hit its own
 * bound, not the job's limit (an admin need not look for an OOM kill),
 * when so_membound_hit(text); "" otherwise. */
const char *so_membound_note(const char *text);

#endif
