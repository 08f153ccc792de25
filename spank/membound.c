/*
 * membound.c - the helper's hard memory bound (see membound.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "cgroup.h"
#include "membound.h"

/* The private writable address space mapped now, in bytes: the data field
 * of /proc/self/statm, which is VmData plus the main stack (VmStk). Cheaper
 * to make than /proc/self/status; the main stack, 132 KiB in a task child,
 * only loosens the bound by its size. Returns 0, or -1 with errno set. */
static int mapped(unsigned long long *bytes)
{
	char buf[256], *p, *end;
	long page = sysconf(_SC_PAGESIZE);
	unsigned long long pages;
	int field;

	if (so_read_small("/proc/self/statm", buf, sizeof(buf)) <= 0)
		return -1;
	for (p = buf, field = 1; field < 6; field++) {
		p = strchr(p, ' ');
		if (!p) {
			errno = EINVAL;
			return -1;
		}
		p++;
	}
	errno = 0;
	pages = strtoull(p, &end, 10);
	if (errno || end == p || page <= 0) {
		errno = errno ? errno : EINVAL;
		return -1;
	}
	*bytes = pages * (unsigned long long)page;
	return 0;
}

/* RLIMIT_DATA, soft and hard, at what is mapped now plus room; never above
 * a hard limit the helper inherited. */
static int bound(unsigned long long room, const char *stage, char *why,
		 size_t len)
{
	unsigned long long now;
	struct rlimit r;

	if (mapped(&now) != 0) {
		snprintf(why, len, "cannot bound the helper's memory (%s): "
			 "/proc/self/statm: %s", stage, strerror(errno));
		return -1;
	}
	if (getrlimit(RLIMIT_DATA, &r) != 0)
		r.rlim_max = RLIM_INFINITY;
	if (r.rlim_max == RLIM_INFINITY || r.rlim_max > now + room)
		r.rlim_max = now + room;
	r.rlim_cur = r.rlim_max;
	if (setrlimit(RLIMIT_DATA, &r) != 0) {
		snprintf(why, len, "cannot bound the helper's memory (%s): "
			 "setrlimit(RLIMIT_DATA): %s", stage, strerror(errno));
		return -1;
	}
	return 0;
}

/* The kernel's switch that turns RLIMIT_DATA into a warning (a boot
 * option, and writable by root at run time). */
#define IGNORE_SWITCH "/sys/module/kernel/parameters/ignore_rlimit_data"

int so_membound_load(char *why, size_t len)
{
	pthread_attr_t attr;
	char flag[8];
	int err;

	if (so_read_small(IGNORE_SWITCH, flag, sizeof(flag)) > 0 && flag[0] == 'Y') {
		snprintf(why, len, "cannot bound the helper's memory: the kernel "
			 "ignores RLIMIT_DATA (%s is Y)", IGNORE_SWITCH);
		return -1;
	}

	/* The runtime's threads take glibc's default stack size, which
	 * follows the stack limit slurmstepd started with (8 MiB, 32 MiB
	 * when unlimited): the bound would depend on it. */
	if ((err = pthread_attr_init(&attr)) == 0) {
		err = pthread_attr_setstacksize(&attr, SO_HELPER_THREAD_STACK);
		if (err == 0)
			err = pthread_setattr_default_np(&attr);
		pthread_attr_destroy(&attr);
	}
	if (err != 0) {
		snprintf(why, len, "cannot bound the helper's memory: the "
			 "threads' stack size: %s", strerror(err));
		return -1;
	}
	return bound(SO_HELPER_START_DATA, "load", why, len);
}

int so_membound_call(char *why, size_t len)
{
	return bound(SO_HELPER_CALL_MEMORY, "call", why, len);
}

int so_membound_hit(const char *text)
{
	/* The Go runtime's words when an mmap of its heap fails ("fatal
	 * error: runtime: out of memory"), when an allocation cannot be
	 * mapped ("fatal error: out of memory") and when its metadata cannot
	 * ("fatal error: runtime: cannot allocate memory"). */
	return text && (strstr(text, "out of memory") != NULL ||
			strstr(text, "cannot allocate memory") != NULL);
}

_Static_assert(SO_HELPER_CALL_MEMORY == 8ULL << 20, "the note says 8 MiB");

const char *so_membound_note(const char *text)
{
	if (!so_membound_hit(text))
		return "";
	return " (over the helper's own memory bound, RLIMIT_DATA: 8 MiB for "
	       "the library's call; not the job's memory limit)";
}
