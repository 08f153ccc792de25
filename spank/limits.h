/*
 * limits.h - resource limits that decide whether the Go runtime can start,
 * and the execve() size budget.
 *
 * A Go runtime that cannot reserve its address space or create its threads
 * does not return an error: it aborts the whole process, which here is the
 * user's task. So before the library is loaded these checks make sure the
 * limits leave room, raising a soft limit up to its hard limit for the
 * duration of the call when that is enough, and otherwise say why the
 * library is not loaded. Every raised limit is put back exactly afterwards.
 */
#ifndef SPANK_OTEL_LIMITS_H
#define SPANK_OTEL_LIMITS_H

#include <stddef.h>
#include <sys/resource.h>

#include "solog.h"

/* Address space (RLIMIT_AS) the Go runtime needs on top of what the process
 * already uses. Measured with an empty Go c-shared library (Go 1.26) in a
 * process of 4 MiB: it aborts at a hard limit of 800 MiB or less and, oddly,
 * at 1200 MiB, and starts at 900-1100 MiB and from 1500 MiB on. To be
 * confirmed with the real library. */
#ifndef SO_GO_ADDRESS_SPACE
#define SO_GO_ADDRESS_SPACE (2UL << 30)
#endif

/* Data (RLIMIT_DATA: private writable memory) the Go runtime needs on top
 * of the process's. Measured: aborts at 80 MiB, starts from 96 MiB. */
#ifndef SO_GO_DATA_SPACE
#define SO_GO_DATA_SPACE (512UL << 20)
#endif

/* Threads the Go runtime may create with GOMAXPROCS=1 (about 5), with room
 * to spare; checked against RLIMIT_NPROC and the cgroup pids limit. */
#ifndef SO_GO_THREADS
#define SO_GO_THREADS 16UL
#endif

/* Below this RLIMIT_STACK the soft limit is raised for the call, when the
 * hard limit allows (Go derives the calling thread's stack bounds from it;
 * an empty library still ran at 16 KiB, so a low hard limit only gets a
 * debug line). */
#ifndef SO_MIN_STACK
#define SO_MIN_STACK (1UL << 20)
#endif

/* Room kept free in the execve() budget for what Slurm still adds after
 * task_init: the resolved program path (the kernel counts it), TMPDIR, and
 * variables a TaskProlog prints. */
#ifndef SO_EXEC_SLACK
#define SO_EXEC_SLACK 8192L
#endif

enum { SO_LIM_AS, SO_LIM_DATA, SO_LIM_STACK, SO_LIM_NPROC, SO_LIM_COUNT };

struct so_limits {
	struct {
		int resource;
		struct rlimit saved;
		int changed; /* 1 when the soft limit was raised */
	} item[SO_LIM_COUNT];
};

/* Checks the limits and raises soft limits where needed and possible.
 * Returns 0 when the library may be loaded, -1 when it must not (the reason
 * is logged at error level). Always call so_limits_restore afterwards. */
int so_limits_prepare(struct so_limits *l, const struct so_logger *lg);

/* Puts back every soft limit that so_limits_prepare raised. */
void so_limits_restore(const struct so_limits *l, const struct so_logger *lg);

/* The number of bytes that the environment of a task may take in execve():
 * the kernel's limit for argument and environment strings (a quarter of the
 * stack limit, at least 128 KiB, at most 6 MiB) minus the argument strings,
 * the argument pointers and SO_EXEC_SLACK. The environment fits when the sum
 * of strlen(entry) + 1 + sizeof(char *) over its entries is at most this.
 * Never returns less than 1 (0 means "default" in the library's ABI). */
long so_exec_budget(rlim_t stack_soft, size_t argc, size_t argv_bytes);

#endif
