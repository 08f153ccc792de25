/*
 * cgroup.h - the cgroups of a process, as directories of this mount
 * namespace, cgroup v1 and v2 alike.
 *
 * The step's helper uses it to check that its cgroups, the step parent's,
 * have room for it (headroom.h).
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
};

/* Reads a /proc/PID/cgroup file. Returns 0, or -1 when it cannot be read
 * (errno set; no cgroups is n == 0, not an error). */
int so_cgroups_read(const char *file, struct so_cgroups *out);

/* The directory of cg, which pid is in, and the length of its mount
 * point's part (mount_len may be NULL). Returns 0, or -1 when no such
 * directory is found: the hierarchy is not mounted here, or the path leaves
 * the mount (a cgroup outside this cgroup namespace). */
int so_cgroup_locate(const struct so_cgroup_files *f, const struct so_cgroup *cg,
		     pid_t pid, char *dir, size_t len, size_t *mount_len);

/* Does cg belong to a hierarchy with the named controller ("memory",
 * "pids")? The unified hierarchy has them all. */
int so_cgroup_has(const struct so_cgroup *cg, const char *controller);

#endif
