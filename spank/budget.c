/*
 * budget.c - the execve() size budget (see budget.h and contract.h).
 */
#include "budget.h"

long so_exec_budget(rlim_t stack_soft, size_t argc, size_t argv_bytes)
{
	unsigned long limit = SO_ARG_CEILING, used;

	if (stack_soft != RLIM_INFINITY && stack_soft / 4 < limit)
		limit = (unsigned long)(stack_soft / 4);
	if (limit < SO_ARG_FLOOR)
		limit = SO_ARG_FLOOR;
	used = (unsigned long)argv_bytes +
	       (argc ? argc : 1) * sizeof(char *) + (unsigned long)SO_EXEC_SLACK;
	if (used >= limit)
		return 1;
	return (long)(limit - used);
}

int so_entry_fits(size_t entry_bytes)
{
	return entry_bytes < (size_t)SO_MAX_ENTRY;
}
