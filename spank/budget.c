/*
 * budget.c - the execve() size budget (see budget.h).
 */
#include "budget.h"

#define MIB (1UL << 20)

long so_exec_budget(rlim_t stack_soft, size_t argc, size_t argv_bytes)
{
	/* fs/exec.c: a quarter of the stack limit, capped at 3/4 of the
	 * kernel's 8 MiB _STK_LIM, and never below ARG_MAX (32 pages). */
	unsigned long limit = 6 * MIB, used;

	if (stack_soft != RLIM_INFINITY && stack_soft / 4 < limit)
		limit = (unsigned long)(stack_soft / 4);
	if (limit < 128UL * 1024)
		limit = 128UL * 1024;
	used = (unsigned long)argv_bytes +
	       (argc ? argc : 1) * sizeof(char *) + (unsigned long)SO_EXEC_SLACK;
	if (used >= limit)
		return 1;
	return (long)(limit - used);
}
