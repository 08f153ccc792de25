/*
 * cgroup.h - the cgroups of a process, as directories of this mount
 * namespace, cgroup v1 and v2 alike.
 *
 * The helper process uses it twice: to check that the task's cgroups have
 * room for it (headroom.h) and to move itself into them (helper_main.c).
 * /proc/PID/cgroup names a process's cgroup in each hierarchy relative to
 * the reader's cgroup namespace. The directory is looked for where Slurm
 * and systemd mount the hierarchies (/sys/fs/cgroup/<controllers>, the
 * unified one at /sys/fs/cgroup or /sys/fs/cgroup/unified) and taken only
 * if the process is listed in its cgroup.procs; else /proc/self/mountinfo
 * says where the hierarchy is mounted and from which of its directories.
 * mountinfo is read only then: generating it took 0.3-0.7 ms here, a
 * fifth of what the whole helper costs.
 * Tests pass fake files and trees.
 */
#ifndef SPANK_OTEL_CGROUP_H
#define SPANK_OTEL_CGROUP_H

#include <limits.h>
#include <stddef.h>
#include <sys/types.h>

/* Reads a small /proc or cgroup file whole into buf, NUL-terminated.
 * Returns its length, or -1 with errno set. */
ssize_t so_read_small(const char *path, char *buf, size_t len);

#define SO_CG_MAX 24 /* hierarchies; a v1 host has about 13 */

/* One line of /proc/PID/cgroup. */
struct so_cgroup {
	int id;                /* hierarchy id; 0 is the unified (v2) one */
	char controllers[128]; /* v1: "memory", "cpu,cpuacct", "name=systemd" */
	char path[PATH_MAX];   /* relative to the cgroup namespace's root */
};

struct so_cgroups {
	int n;
	struct so_cgroup cg[SO_CG_MAX];
};

/* Where to read: the real /proc and /sys, or a test's files. NULL
 * members mean the real ones. */
struct so_cgroup_files {
	const char *root;      /* /sys/fs/cgroup */
	const char *mountinfo; /* /proc/self/mountinfo */
	const char *task;      /* /proc/<task>/cgroup */
	const char *self;      /* /proc/self/cgroup */
};

/* Reads a /proc/PID/cgroup file. Returns 0, or -1 when it cannot be read
 * (errno set; no cgroups is n == 0, not an error). */
int so_cgroups_read(const char *file, struct so_cgroups *out);

/* The same from a descriptor of such a file not read yet: procfs writes
 * it at the first read, so it is the process's cgroups then, wherever it
 * was opened from (the helper opens its task's with root's capabilities,
 * which a /proc mounted with hidepid= and gid= asks for, and reads it
 * without them). */
int so_cgroups_read_fd(int fd, struct so_cgroups *out);

/* The directory of cg, which pid is in, and the length of its mount
 * point's part (mount_len may be NULL). Returns 0, or -1 when no such
 * directory is found: the hierarchy is not mounted here, or the path leaves
 * the mount (a cgroup outside this cgroup namespace). */
int so_cgroup_locate(const struct so_cgroup_files *f, const struct so_cgroup *cg,
		     pid_t pid, char *dir, size_t len, size_t *mount_len);

/* Does cg belong to a hierarchy with the named controller ("memory",
 * "pids")? The unified hierarchy has them all. */
int so_cgroup_has(const struct so_cgroup *cg, const char *controller);

/* Moves the calling process into every cgroup of task (the cgroups of the
 * process pid) whose path differs from the same hierarchy's in self. A
 * cgroup whose cgroup.procs root owns (Slurm made it) is joined with the
 * caller's rights; any other (on Slurm 22.05 the job's user owns the
 * step's directory and may make cgroups under it) with user as the
 * effective uid, so only where user could move a process itself;
 * (uid_t)-1: always the caller's rights. Returns
 * the number of cgroups joined, or -1 with why in err (the first failure;
 * the rest are not tried). */
int so_cgroups_join(const struct so_cgroup_files *f, const struct so_cgroups *task,
		    const struct so_cgroups *self, pid_t pid, uid_t user,
		    char *err, size_t len);

#endif
