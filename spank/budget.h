/*
 * budget.h - what bounds the environment of a task's execve().
 *
 * The library computes the whole-environment budget (contract.h) from the
 * inputs the shim gathers here; the shim itself only guards the one
 * variable it sets, which Slurm would drop without a word.
 */
#ifndef SPANK_OTEL_BUDGET_H
#define SPANK_OTEL_BUDGET_H

#include <stddef.h>

#include "../cgo/contract.h"

/* The value of name in env (NULL-terminated "NAME=value" entries), or
 * NULL. */
const char *so_env_value(char **env, const char *name);

/* Fills the budget's inputs of req (stack_limit, argv_count, argv_bytes)
 * for a task whose final environment is env and whose execve gets the
 * argc strings of argv. The stack limit is the smaller of this process's
 * RLIMIT_STACK soft limit and the one slurmstepd applies after task_init
 * from SLURM_RLIMIT_STACK ("U" prefix when the user asked to propagate
 * it). */
void so_exec_inputs(struct so_task_request *req, char **env, int argc,
		    char **argv);

/* Whether one environment entry of entry_bytes bytes ("NAME=value" and its
 * NUL) can be set: under SO_MAX_ENTRY. */
int so_entry_fits(size_t entry_bytes);

#endif
