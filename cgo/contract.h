/*
 * contract.h - what the shim and the Go library agree on: the library's C
 * interface, beside the code that implements it.
 *
 * One file for both languages: cgo/main.go includes it and returns these
 * numbers as C.SO_*, the shim includes it as ../cgo/contract.h. It lives
 * here, in the library's package directory, because the go command's
 * build cache only sees headers there: a change to a header elsewhere
 * would leave a cached library with the old numbers.
 *
 * internal/taskenv, which the command also uses without cgo, keeps Go
 * copies of the limits; cgo/contract_test.go fails when they differ from
 * these. testdata/contract.tsv holds worked examples of every number and
 * of the budget below, which the Go test and the C test
 * (spank/harness/contract.c) both check.
 *
 * Plain #defines only: C, cgo and the package tests' shell all read them.
 */
#ifndef SPANK_OTEL_CONTRACT_H
#define SPANK_OTEL_CONTRACT_H

/* What spank_otel_abi() returns. It changes whenever the C signature of an
 * export changes; the helper refuses a library that reports another. */
#define SO_ABI_VERSION 1

/* What spank_otel_task_env returns. */
#define SO_RC_ERROR (-1) /* the library failed: leave the variable */
#define SO_RC_LEAVE 0    /* nothing to change: leave the variable */
#define SO_RC_SET 1      /* set it to the value returned */
#define SO_RC_UNSET 2    /* remove it */

/* The kernel refuses one argument or environment string of this many bytes
 * or more, its NUL included (MAX_ARG_STRLEN), and so does Slurm's own
 * setenvf, which spank_setenv uses without reporting the failure. So
 * "OTEL_RESOURCE_ATTRIBUTES=value" with its NUL must be under it. */
#define SO_MAX_ENTRY 131072L

/*
 * The execve budget: the bytes the environment of a task may take, the
 * maxEnvBytes argument of spank_otel_task_env. The kernel (fs/exec.c)
 * takes argument and environment strings up to a quarter of the stack
 * limit, at least SO_ARG_FLOOR (ARG_MAX, 32 pages) and at most
 * SO_ARG_CEILING (3/4 of its 8 MiB _STK_LIM). The budget is that minus the
 * argument strings with their NULs, one pointer per argument (at least
 * one), and SO_EXEC_SLACK; never less than 1, which still means a check
 * (0 means none). The environment fits when the sum of strlen(entry) + 1 +
 * sizeof(char *) over its entries is at most the budget.
 */
#define SO_ARG_FLOOR 131072L
#define SO_ARG_CEILING 6291456L

/* Room kept free in the budget for what Slurm still adds after task_init:
 * the resolved program path (the kernel counts it), TMPDIR, and variables
 * a TaskProlog prints. */
#define SO_EXEC_SLACK 8192L

#endif
