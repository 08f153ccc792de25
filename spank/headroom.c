/*
 * headroom.c - room for the helper in the task's cgroups (see headroom.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "headroom.h"

/* cgroup v1 writes "no limit" as the largest page-aligned long. */
#define NO_LIMIT (1ULL << 62)

/* The tightest spot found in one controller. */
struct tightest {
	unsigned long long room; /* ULLONG_MAX: no limit anywhere */
	unsigned long long limit, used;
	char dir[PATH_MAX];
};

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

/* A limit or usage file: a number, or "max" (no limit). */
static int read_value(const char *dir, const char *file,
		      unsigned long long *v)
{
	char path[PATH_MAX + 64], buf[64], *end;

	if (snprintf(path, sizeof(path), "%s/%s", dir, file) >= (int)sizeof(path) ||
	    read_small(path, buf, sizeof(buf)) <= 0)
		return -1;
	if (!strncmp(buf, "max", 3)) {
		*v = ULLONG_MAX;
		return 0;
	}
	errno = 0;
	*v = strtoull(buf, &end, 10);
	return errno || end == buf ? -1 : 0;
}

/* Looks at dir and every ancestor down to base for limit_file and
 * usage_file, keeping the least room in *t. */
static void walk(const char *base, const char *rel, const char *limit_file,
		 const char *usage_file, struct tightest *t)
{
	char dir[PATH_MAX];
	size_t baselen = strlen(base);

	if (snprintf(dir, sizeof(dir), "%s%s", base, rel) >= (int)sizeof(dir))
		return;
	while (strlen(dir) > 1 && dir[strlen(dir) - 1] == '/')
		dir[strlen(dir) - 1] = '\0';
	for (;;) {
		unsigned long long limit, used, room;
		char *slash;

		if (read_value(dir, limit_file, &limit) == 0 &&
		    read_value(dir, usage_file, &used) == 0 && limit < NO_LIMIT) {
			room = limit > used ? limit - used : 0;
			if (room < t->room) {
				t->room = room;
				t->limit = limit;
				t->used = used;
				snprintf(t->dir, sizeof(t->dir), "%s", dir);
			}
		}
		if (strlen(dir) <= baselen || !(slash = strrchr(dir, '/')) ||
		    (size_t)(slash - dir) < baselen)
			return;
		*slash = '\0';
	}
}

static int has_controller(const char *list, const char *name)
{
	size_t len = strlen(name);
	const char *p = list;

	while (p && *p) {
		const char *end = strchr(p, ',');
		size_t n = end ? (size_t)(end - p) : strlen(p);

		if (n == len && !strncmp(p, name, len))
			return 1;
		p = end ? end + 1 : NULL;
	}
	return 0;
}

int so_headroom_ok(const char *root, const char *cgroup_file,
		   const struct so_logger *lg)
{
	struct tightest mem = { .room = ULLONG_MAX }, pids = { .room = ULLONG_MAX };
	char buf[8192], base[PATH_MAX], *line, *save = NULL;

	if (read_small(cgroup_file, buf, sizeof(buf)) <= 0)
		return 1; /* no cgroups to ask */
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *controllers = strchr(line, ':'), *rel;

		if (!controllers || !(rel = strchr(controllers + 1, ':')))
			continue;
		*controllers++ = '\0';
		*rel++ = '\0';
		if (rel[0] != '/')
			continue;
		if (*controllers == '\0') {
			/* cgroup v2: at the root, or under unified/ on a
			 * hybrid host. */
			snprintf(base, sizeof(base), "%s/cgroup.controllers", root);
			if (access(base, F_OK) == 0)
				snprintf(base, sizeof(base), "%s", root);
			else
				snprintf(base, sizeof(base), "%s/unified", root);
			walk(base, rel, "memory.max", "memory.current", &mem);
			walk(base, rel, "pids.max", "pids.current", &pids);
			continue;
		}
		/* cgroup v1: mounted at root/<controller list>. */
		if (snprintf(base, sizeof(base), "%s/%s", root, controllers) >=
		    (int)sizeof(base))
			continue;
		if (has_controller(controllers, "memory"))
			walk(base, rel, "memory.limit_in_bytes",
			     "memory.usage_in_bytes", &mem);
		if (has_controller(controllers, "pids"))
			walk(base, rel, "pids.max", "pids.current", &pids);
	}
	if (mem.room < SO_HELPER_MEMORY) {
		so_logf(lg, SO_LOG_ERROR,
			"not starting the helper process: memory cgroup %s has "
			"%llu KiB left of its %llu KiB limit and the helper needs "
			"about %lu KiB; OTEL_RESOURCE_ATTRIBUTES left unchanged",
			mem.dir, mem.room >> 10, mem.limit >> 10,
			SO_HELPER_MEMORY >> 10);
		return 0;
	}
	if (pids.room < SO_HELPER_TASKS) {
		so_logf(lg, SO_LOG_ERROR,
			"not starting the helper process: pids cgroup %s runs "
			"%llu of its %llu tasks and the helper needs up to %lu; "
			"OTEL_RESOURCE_ATTRIBUTES left unchanged",
			pids.dir, pids.used, pids.limit, SO_HELPER_TASKS);
		return 0;
	}
	return 1;
}
