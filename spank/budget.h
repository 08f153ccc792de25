/*
 * budget.h - how many bytes of environment a task's execve() accepts.
 *
 * The numbers and the rule are the contract with the Go library
 * (contract.h); these are the shim's implementation of it.
 */
#ifndef SPANK_OTEL_BUDGET_H
#define SPANK_OTEL_BUDGET_H

#include <stddef.h>
#include <sys/resource.h>

#include "../cgo/contract.h"

/* The execve budget of contract.h for a task whose RLIMIT_STACK soft
 * limit is stack_soft and whose arguments are argc strings of argv_bytes
 * bytes in all, NULs included. */
long so_exec_budget(rlim_t stack_soft, size_t argc, size_t argv_bytes);

/* Whether one environment entry of entry_bytes bytes ("NAME=value" and its
 * NUL) can be set: under SO_MAX_ENTRY. */
int so_entry_fits(size_t entry_bytes);

#endif
