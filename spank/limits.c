/*
 * limits.c - resource-limit checks around loading the Go runtime, and the
 * execve() budget (see limits.h).
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "limits.h"

#define MIB (1UL << 20)

/* Reads a small file (a /proc or /sys entry) into buf, NUL-terminated.
 * Returns the number of bytes read or -1. */
static ssize_t read_small(const char *path, char *buf, size_t len)
{
	ssize_t n, total = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	while ((size_t)total + 1 < len) {
		n = read(fd, buf + total, len - 1 - (size_t)total);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		total += n;
	}
	close(fd);
	buf[total] = '\0';
	return total;
}

/* Virtual size and data size of this process in bytes (0 when unknown). */
static void process_usage(unsigned long *vsize, unsigned long *data)
{
	char buf[256];
	unsigned long size, rss, shared, text, lib, dat;
	long page = sysconf(_SC_PAGESIZE);

	*vsize = *data = 0;
	if (page <= 0 || read_small("/proc/self/statm", buf, sizeof(buf)) <= 0)
		return;
	if (sscanf(buf, "%lu %lu %lu %lu %lu %lu", &size, &rss, &shared,
		   &text, &lib, &dat) != 6)
		return;
	*vsize = size * (unsigned long)page;
	*data = dat * (unsigned long)page;
}

static const char *limit_name(int resource)
{
	switch (resource) {
	case RLIMIT_AS:
		return "RLIMIT_AS";
	case RLIMIT_DATA:
		return "RLIMIT_DATA";
	case RLIMIT_STACK:
		return "RLIMIT_STACK";
	case RLIMIT_NPROC:
		return "RLIMIT_NPROC";
	}
	return "limit";
}

/* Raises the soft limit of item idx to value. Returns 0 or -1. */
static int raise_soft(struct so_limits *l, int idx, rlim_t value,
		      const struct so_logger *lg)
{
	struct rlimit want = l->item[idx].saved;
	int resource = l->item[idx].resource;

	want.rlim_cur = value;
	if (setrlimit(resource, &want) != 0) {
		so_logf(lg, SO_LOG_ERROR,
			"cannot raise the %s soft limit for the call: %s",
			limit_name(resource), strerror(errno));
		return -1;
	}
	l->item[idx].changed = 1;
	if (value == RLIM_INFINITY)
		so_logf(lg, SO_LOG_DEBUG,
			"raised the %s soft limit from %lu to unlimited for "
			"the call",
			limit_name(resource),
			(unsigned long)l->item[idx].saved.rlim_cur);
	else
		so_logf(lg, SO_LOG_DEBUG,
			"raised the %s soft limit from %lu to %lu for the call",
			limit_name(resource),
			(unsigned long)l->item[idx].saved.rlim_cur,
			(unsigned long)value);
	return 0;
}

/* RLIMIT_AS and RLIMIT_DATA: the Go runtime reserves its heap arenas up
 * front and aborts the process when it cannot. */
static int check_space(struct so_limits *l, int idx, unsigned long used,
		       unsigned long go_needs, const struct so_logger *lg)
{
	const struct rlimit *r = &l->item[idx].saved;
	rlim_t need = (rlim_t)used + (rlim_t)go_needs;

	if (r->rlim_cur == RLIM_INFINITY || r->rlim_cur >= need)
		return 0;
	if (r->rlim_max == RLIM_INFINITY || r->rlim_max >= need)
		return raise_soft(l, idx, r->rlim_max, lg);
	so_logf(lg, SO_LOG_ERROR,
		"not loading the library: the %s hard limit (%lu MiB) leaves "
		"less than the %lu MiB the Go runtime needs beyond the %lu MiB "
		"in use; this task gets no OTEL_RESOURCE_ATTRIBUTES",
		limit_name(l->item[idx].resource),
		(unsigned long)(r->rlim_max / MIB), go_needs / MIB,
		used / MIB);
	return -1;
}

/* The calling thread's stack: Go takes the thread's C stack bounds from
 * pthread_getattr_np, which for the main thread follows RLIMIT_STACK. A low
 * limit is raised when possible; otherwise the call still goes ahead. */
static void check_stack(struct so_limits *l, const struct so_logger *lg)
{
	const struct rlimit *r = &l->item[SO_LIM_STACK].saved;
	rlim_t want = 8 * MIB;

	if (r->rlim_cur == RLIM_INFINITY || r->rlim_cur >= SO_MIN_STACK)
		return;
	if (r->rlim_max != RLIM_INFINITY && r->rlim_max <= r->rlim_cur) {
		so_logf(lg, SO_LOG_DEBUG,
			"RLIMIT_STACK is %lu KiB and cannot be raised",
			(unsigned long)(r->rlim_cur >> 10));
		return;
	}
	if (r->rlim_max != RLIM_INFINITY && r->rlim_max < want)
		want = r->rlim_max;
	raise_soft(l, SO_LIM_STACK, want, lg);
}

/* Counts the threads whose real uid is uid, as RLIMIT_NPROC does.
 * Returns -1 when /proc cannot be read. */
static long count_user_threads(uid_t uid)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	long total = 0;

	if (!d)
		return -1;
	while ((e = readdir(d))) {
		char path[sizeof(e->d_name) + 16], buf[4096], *p;
		unsigned long ruid, threads = 1;

		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		snprintf(path, sizeof(path), "/proc/%s/status", e->d_name);
		if (read_small(path, buf, sizeof(buf)) <= 0)
			continue;
		if (!(p = strstr(buf, "\nUid:")) ||
		    sscanf(p + 5, "%lu", &ruid) != 1 || ruid != (unsigned long)uid)
			continue;
		if ((p = strstr(buf, "\nThreads:")))
			sscanf(p + 9, "%lu", &threads);
		total += (long)threads;
	}
	closedir(d);
	return total;
}

static int check_nproc(struct so_limits *l, const struct so_logger *lg)
{
	const struct rlimit *r = &l->item[SO_LIM_NPROC].saved;
	rlim_t limit = r->rlim_cur;
	long used;

	/* The kernel does not apply RLIMIT_NPROC to root. */
	if (getuid() == 0 || r->rlim_cur == RLIM_INFINITY)
		return 0;
	if (r->rlim_max == RLIM_INFINITY || r->rlim_max > r->rlim_cur) {
		if (raise_soft(l, SO_LIM_NPROC, r->rlim_max, lg) != 0)
			return -1;
		limit = r->rlim_max;
		if (limit == RLIM_INFINITY)
			return 0;
	}
	used = count_user_threads(getuid());
	if (used < 0 || (rlim_t)used + SO_GO_THREADS <= limit)
		return 0;
	so_logf(lg, SO_LOG_ERROR,
		"not loading the library: uid %u runs %ld of the %lu threads "
		"RLIMIT_NPROC allows and the Go runtime needs up to %lu more; "
		"this task gets no OTEL_RESOURCE_ATTRIBUTES",
		(unsigned)getuid(), used, (unsigned long)limit, SO_GO_THREADS);
	return -1;
}

/* Checks one cgroup directory's pids.max against pids.current. */
static int check_pids_dir(const char *dir, const struct so_logger *lg)
{
	char path[4096 + 32], buf[64];
	unsigned long max, cur;

	snprintf(path, sizeof(path), "%s/pids.max", dir);
	if (read_small(path, buf, sizeof(buf)) <= 0 ||
	    sscanf(buf, "%lu", &max) != 1)
		return 0; /* no controller here, or "max" */
	snprintf(path, sizeof(path), "%s/pids.current", dir);
	if (read_small(path, buf, sizeof(buf)) <= 0 ||
	    sscanf(buf, "%lu", &cur) != 1)
		return 0;
	if (cur + SO_GO_THREADS <= max)
		return 0;
	so_logf(lg, SO_LOG_ERROR,
		"not loading the library: cgroup %s runs %lu of the %lu tasks "
		"its pids.max allows and the Go runtime needs up to %lu more; "
		"this task gets no OTEL_RESOURCE_ATTRIBUTES",
		dir, cur, max, SO_GO_THREADS);
	return -1;
}

/* Checks the pids controller of this process's cgroup and its ancestors,
 * for cgroup v2 ("0::/path") and the v1 pids hierarchy. */
static int check_pids_cgroup(const struct so_logger *lg)
{
	char buf[8192], *line, *save = NULL;

	if (read_small("/proc/self/cgroup", buf, sizeof(buf)) <= 0)
		return 0;
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		const char *base, *rel;
		char dir[4096];
		size_t baselen;

		if (!strncmp(line, "0::", 3)) {
			base = "/sys/fs/cgroup";
			rel = line + 3;
		} else {
			const char *c = strchr(line, ':');

			if (!c || strncmp(c + 1, "pids:", 5))
				continue;
			base = "/sys/fs/cgroup/pids";
			rel = c + 6;
		}
		if (rel[0] != '/' ||
		    snprintf(dir, sizeof(dir), "%s%s", base, rel) >=
			    (int)sizeof(dir))
			continue;
		baselen = strlen(base);
		/* Walk up to, but not including, the hierarchy root. */
		while (strlen(dir) > baselen) {
			char *slash;

			if (check_pids_dir(dir, lg) != 0)
				return -1;
			if (!(slash = strrchr(dir, '/')))
				break;
			*slash = '\0';
		}
	}
	return 0;
}

int so_limits_prepare(struct so_limits *l, const struct so_logger *lg)
{
	static const int resources[SO_LIM_COUNT] = {
		[SO_LIM_AS] = RLIMIT_AS,
		[SO_LIM_DATA] = RLIMIT_DATA,
		[SO_LIM_STACK] = RLIMIT_STACK,
		[SO_LIM_NPROC] = RLIMIT_NPROC,
	};
	unsigned long vsize = 0, data = 0;
	int i, known[SO_LIM_COUNT], finite = 0;

	memset(l, 0, sizeof(*l));
	for (i = 0; i < SO_LIM_COUNT; i++) {
		l->item[i].resource = resources[i];
		known[i] = getrlimit(resources[i], &l->item[i].saved) == 0;
		if (known[i] && l->item[i].saved.rlim_cur != RLIM_INFINITY)
			finite = 1;
	}
	/* Only read /proc when some limit is finite. */
	if (finite)
		process_usage(&vsize, &data);
	if (known[SO_LIM_AS] &&
	    check_space(l, SO_LIM_AS, vsize, SO_GO_ADDRESS_SPACE, lg) != 0)
		return -1;
	if (known[SO_LIM_DATA] &&
	    check_space(l, SO_LIM_DATA, data, SO_GO_DATA_SPACE, lg) != 0)
		return -1;
	if (known[SO_LIM_STACK])
		check_stack(l, lg);
	if (known[SO_LIM_NPROC] && check_nproc(l, lg) != 0)
		return -1;
	return check_pids_cgroup(lg);
}

void so_limits_restore(const struct so_limits *l, const struct so_logger *lg)
{
	int i;

	for (i = 0; i < SO_LIM_COUNT; i++) {
		if (!l->item[i].changed)
			continue;
		if (setrlimit(l->item[i].resource, &l->item[i].saved) != 0)
			so_logf(lg, SO_LOG_ERROR,
				"cannot restore the %s soft limit: %s",
				limit_name(l->item[i].resource),
				strerror(errno));
	}
}

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
