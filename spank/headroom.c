/*
 * headroom.c - room for the step's helper in its cgroups (see headroom.h).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "headroom.h"

/* cgroup v1 writes "no limit" as the largest page-aligned long. */
#define NO_LIMIT (1ULL << 62)

/* The files of one controller in one cgroup version. */
struct files {
	const char *limit, *usage;
	const char *kind; /* the limit's name in a message */
	/* memory.stat keys of the file pages, and of those of them that
	 * are dirty or under writeback; NULL for pids */
	const char *active_file, *inactive_file, *dirty, *writeback;
};

static const struct files mem_v1 = { "memory.limit_in_bytes",
				      "memory.usage_in_bytes", "limit",
				      "total_active_file", "total_inactive_file",
				      "total_dirty", "total_writeback" };
/* Where swap is accounted (swapaccount=1), v1 charges memory and swap
 * against one more limit: a job at it cannot swap out to make room. */
static const struct files memsw_v1 = { "memory.memsw.limit_in_bytes",
				       "memory.memsw.usage_in_bytes",
				       "memory+swap limit",
				       "total_active_file", "total_inactive_file",
				       "total_dirty", "total_writeback" };
static const struct files mem_v2 = { "memory.max", "memory.current", "limit",
				      "active_file", "inactive_file",
				      "file_dirty", "file_writeback" };
static const struct files pids_any = { "pids.max", "pids.current", "limit",
					NULL, NULL, NULL, NULL };

/* The tightest spot found in one controller. */
struct tightest {
	unsigned long long room; /* ULLONG_MAX: no limit anywhere */
	unsigned long long limit, used, cache;
	const char *kind;
	char dir[PATH_MAX];
};

/* A limit or usage file: a number, or "max" (no limit). */
static int read_value(const char *dir, const char *file,
		      unsigned long long *v)
{
	char path[PATH_MAX + 64], buf[64], *end;

	if (snprintf(path, sizeof(path), "%s/%s", dir, file) >= (int)sizeof(path) ||
	    so_read_small(path, buf, sizeof(buf)) <= 0)
		return -1;
	if (!strncmp(buf, "max", 3)) {
		*v = ULLONG_MAX;
		return 0;
	}
	errno = 0;
	*v = strtoull(buf, &end, 10);
	return errno || end == buf ? -1 : 0;
}

/* The page cache of dir that the kernel can drop at once: its file pages
 * less those dirty or under writeback, which must reach the disk first
 * (and may not, in time, on a slow file system); 0 when unknown. */
static unsigned long long page_cache(const char *dir, const struct files *f)
{
	static char buf[8192];
	char path[PATH_MAX + 64], *line, *save = NULL;
	unsigned long long file = 0, busy = 0;

	if (!f->active_file ||
	    snprintf(path, sizeof(path), "%s/memory.stat", dir) >= (int)sizeof(path) ||
	    so_read_small(path, buf, sizeof(buf)) <= 0)
		return 0;
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *sp = strchr(line, ' ');

		if (!sp)
			continue;
		*sp = '\0';
		if (!strcmp(line, f->active_file) || !strcmp(line, f->inactive_file))
			file += strtoull(sp + 1, NULL, 10);
		else if (!strcmp(line, f->dirty) || !strcmp(line, f->writeback))
			busy += strtoull(sp + 1, NULL, 10);
	}
	return file > busy ? file - busy : 0;
}

/* Looks at dir and every ancestor down to its mount point (the first
 * mount_len bytes), keeping the least room in *t. */
static void walk(const char *start, size_t mount_len, const struct files *f,
		 struct tightest *t)
{
	char dir[PATH_MAX];

	snprintf(dir, sizeof(dir), "%s", start);
	for (;;) {
		unsigned long long limit, used, cache, room;
		char *slash;

		if (read_value(dir, f->limit, &limit) == 0 &&
		    read_value(dir, f->usage, &used) == 0 && limit < NO_LIMIT) {
			cache = page_cache(dir, f);
			if (cache > used)
				cache = used;
			room = limit > used - cache ? limit - (used - cache) : 0;
			if (room < t->room) {
				t->room = room;
				t->limit = limit;
				t->used = used;
				t->cache = cache;
				t->kind = f->kind;
				snprintf(t->dir, sizeof(t->dir), "%s", dir);
			}
		}
		if (strlen(dir) <= mount_len || !(slash = strrchr(dir, '/')) ||
		    (size_t)(slash - dir) < mount_len)
			return;
		*slash = '\0';
	}
}

/* Is controller bound to a v1 hierarchy of task? Then the unified one
 * does not have it (a hybrid host). */
static int in_v1(const struct so_cgroups *task, const char *controller)
{
	int i;

	for (i = 0; i < task->n; i++)
		if (task->cg[i].id != 0 && so_cgroup_has(&task->cg[i], controller))
			return 1;
	return 0;
}

int so_headroom_ok(const struct so_cgroup_files *f, const struct so_cgroups *task,
		   pid_t pid, char *why, size_t len)
{
	struct tightest mem = { .room = ULLONG_MAX }, pids = { .room = ULLONG_MAX };
	unsigned long long need_mem = SO_HELPER_MEMORY, need_tasks = SO_HELPER_TASKS;
	char dir[PATH_MAX];
	size_t mount_len;
	int i;

	for (i = 0; i < task->n; i++) {
		const struct so_cgroup *cg = &task->cg[i];
		int v2 = cg->id == 0;
		int memory = so_cgroup_has(cg, "memory") && !(v2 && in_v1(task, "memory"));
		int tasks = so_cgroup_has(cg, "pids") && !(v2 && in_v1(task, "pids"));

		/* The root cgroup has no limits (and listing its processes to
		 * find the directory would read every process of the host). */
		if ((!memory && !tasks) || !strcmp(cg->path, "/"))
			continue;
		if (so_cgroup_locate(f, cg, pid, dir, sizeof(dir), &mount_len) != 0)
			continue; /* not mounted here: no limit to read */
		if (memory)
			walk(dir, mount_len, v2 ? &mem_v2 : &mem_v1, &mem);
		if (memory && !v2)
			walk(dir, mount_len, &memsw_v1, &mem);
		if (tasks)
			walk(dir, mount_len, &pids_any, &pids);
	}
	if (mem.room < need_mem) {
		snprintf(why, len,
			 "memory cgroup %s has %llu KiB left of its %llu KiB "
			 "%s (%llu KiB in use, %llu KiB of that clean page "
			 "cache) and the helper needs about %llu KiB",
			 mem.dir, mem.room >> 10, mem.limit >> 10, mem.kind,
			 mem.used >> 10, mem.cache >> 10, need_mem >> 10);
		return 0;
	}
	if (pids.room < need_tasks) {
		snprintf(why, len,
			 "pids cgroup %s runs %llu of its %llu tasks and the "
			 "helper needs up to %llu",
			 pids.dir, pids.used, pids.limit, need_tasks);
		return 0;
	}
	return 1;
}
