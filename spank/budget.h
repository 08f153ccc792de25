/*
 * budget.h - how many bytes of environment a task's execve() accepts.
 */
#ifndef SPANK_OTEL_BUDGET_H
#define SPANK_OTEL_BUDGET_H

#include <stddef.h>
#include <sys/resource.h>

/* Room kept free in the execve() budget for what Slurm still adds after
 * task_init: the resolved program path (the kernel counts it), TMPDIR, and
 * variables a TaskProlog prints. */
#ifndef SO_EXEC_SLACK
#define SO_EXEC_SLACK 8192L
#endif

/* The kernel refuses one argument or environment string of this many bytes
 * or more, its NUL included (MAX_ARG_STRLEN), and so does Slurm's own
 * setenvf, which spank_setenv uses without reporting the failure. */
#define SO_MAX_ENTRY 131072L

/* The number of bytes that the environment of a task may take in execve():
 * the kernel's limit for argument and environment strings (a quarter of the
 * stack limit, at least 128 KiB, at most 6 MiB) minus the argument strings,
 * the argument pointers and SO_EXEC_SLACK. The environment fits when the sum
 * of strlen(entry) + 1 + sizeof(char *) over its entries is at most this.
 * Never returns less than 1 (the library reads 0 as "no total check"). */
long so_exec_budget(rlim_t stack_soft, size_t argc, size_t argv_bytes);

#endif
