/*
 * budget.c - the execve() budget's inputs and the one-variable guard (see
 * budget.h and contract.h).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "budget.h"

const char *so_env_value(char **env, const char *name)
{
	size_t len = strlen(name);

	for (; env && *env; env++)
		if (!strncmp(*env, name, len) && (*env)[len] == '=')
			return *env + len + 1;
	return NULL;
}

void so_exec_inputs(struct so_task_request *req, char **env, int argc,
		    char **argv)
{
	struct rlimit r;
	uint64_t stack = UINT64_MAX;
	const char *v = so_env_value(env, "SLURM_RLIMIT_STACK");
	int i;

	if (getrlimit(RLIMIT_STACK, &r) == 0 && r.rlim_cur != RLIM_INFINITY)
		stack = (uint64_t)r.rlim_cur;
	if (v) {
		char *end = NULL;
		unsigned long long n;

		if (*v == 'U')
			v++;
		errno = 0;
		n = strtoull(v, &end, 10);
		if (!errno && end != v && *end == '\0' && n < stack)
			stack = n;
	}
	/* 0 would mean "unknown" to the library: a limit of 0 is still one,
	 * and the kernel's floor applies to it. */
	req->stack_limit = stack ? stack : 1;
	req->argv_count = 0;
	req->argv_bytes = 0;
	for (i = 0; argv && i < argc && argv[i]; i++) {
		req->argv_count++;
		req->argv_bytes += strlen(argv[i]) + 1;
	}
}

int so_entry_fits(size_t entry_bytes)
{
	return entry_bytes < (size_t)SO_MAX_ENTRY;
}
