/*
 * cgroup.c - the cgroups of a process, as directories (see cgroup.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cgroup.h"

/* Reads fd to its end (at most len - 1 bytes) into buf, NUL-terminated.
 * Returns the length, or -1 with errno set. */
static ssize_t read_small_fd(int fd, char *buf, size_t len)
{
	ssize_t n, total = 0;

	while ((size_t)total + 1 < len) {
		n = read(fd, buf + total, len - 1 - (size_t)total);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0)
			break;
		total += n;
	}
	buf[total] = '\0';
	return total;
}

ssize_t so_read_small(const char *path, char *buf, size_t len)
{
	ssize_t total;
	int fd = open(path, O_RDONLY | O_CLOEXEC), e;

	if (fd < 0)
		return -1;
	total = read_small_fd(fd, buf, len);
	e = errno;
	close(fd);
	errno = e;
	return total;
}

/* Parses the lines of a /proc/PID/cgroup file in buf (changed). */
static void parse_cgroups(char *buf, struct so_cgroups *out)
{
	char *line, *save = NULL;

	out->n = 0;
	for (line = strtok_r(buf, "\n", &save); line && out->n < SO_CG_MAX;
	     line = strtok_r(NULL, "\n", &save)) {
		struct so_cgroup *cg = &out->cg[out->n];
		char *ctl = strchr(line, ':'), *path, *end;

		if (!ctl || !(path = strchr(ctl + 1, ':')))
			continue;
		*ctl++ = '\0';
		*path++ = '\0';
		cg->id = (int)strtol(line, &end, 10);
		if (end == line || *end || path[0] != '/' ||
		    snprintf(cg->controllers, sizeof(cg->controllers), "%s",
			     ctl) >= (int)sizeof(cg->controllers) ||
		    snprintf(cg->path, sizeof(cg->path), "%s", path) >=
			    (int)sizeof(cg->path))
			continue;
		out->n++;
	}
}

int so_cgroups_read(const char *file, struct so_cgroups *out)
{
	static char buf[16384];

	out->n = 0;
	if (so_read_small(file, buf, sizeof(buf)) < 0)
		return -1;
	parse_cgroups(buf, out);
	return 0;
}

/* Is name one of the comma-separated words of list? */
static int has_word(const char *list, const char *name)
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

int so_cgroup_has(const struct so_cgroup *cg, const char *controller)
{
	return cg->id == 0 || has_word(cg->controllers, controller);
}

/* Undoes mountinfo's octal escapes (\040 for a space) in place. */
static void unescape(char *s)
{
	char *w = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' &&
		    s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
			*w++ = (char)((s[1] - '0') << 6 | (s[2] - '0') << 3 |
				      (s[3] - '0'));
			s += 3;
		} else {
			*w++ = *s;
		}
	}
	*w = '\0';
}

/* Do the super options of a v1 mount name exactly this hierarchy's
 * controllers? ("rw,cpu,cpuacct" for "cpu,cpuacct".) */
static int same_hierarchy(const char *superopts, const char *controllers)
{
	const char *p = controllers;

	while (p && *p) {
		const char *end = strchr(p, ',');
		char word[64];
		size_t n = end ? (size_t)(end - p) : strlen(p);

		if (n >= sizeof(word))
			return 0;
		memcpy(word, p, n);
		word[n] = '\0';
		if (!has_word(superopts, word))
			return 0;
		p = end ? end + 1 : NULL;
	}
	return controllers[0] != '\0';
}

/* Is prefix a leading run of whole components of path? */
static int under(const char *path, const char *prefix)
{
	size_t n = strlen(prefix);

	if (!strcmp(prefix, "/"))
		return 1;
	return !strncmp(path, prefix, n) && (path[n] == '\0' || path[n] == '/');
}

/* A path a cgroup can really have: no "." or ".." component (the kernel
 * writes "/.." for a cgroup outside the reader's namespace). */
static int plain_path(const char *p)
{
	while (*p) {
		const char *end;
		size_t n;

		while (*p == '/')
			p++;
		end = strchr(p, '/');
		n = end ? (size_t)(end - p) : strlen(p);
		if ((n == 1 && p[0] == '.') || (n == 2 && !strncmp(p, "..", 2)))
			return 0;
		p += n;
	}
	return 1;
}

/* The directory of cg from where mountinfo says its hierarchy is
 * mounted. */
static int mountinfo_dir(const char *mountinfo, const struct so_cgroup *cg,
			 char *dir, size_t len, size_t *mount_len)
{
	static char buf[65536];
	char *line, *save = NULL;
	int found = -1;

	if (so_read_small(mountinfo, buf, sizeof(buf)) < 0)
		return -1;
	/* The last match wins: a later mount on the same mount point hides
	 * an earlier one. */
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		/* id parent maj:min root mountpoint opts [optional...] - type
		 * source superopts */
		char *f[6], *dash, *type, *source, *superopts, *s = NULL;
		const char *rest;
		int i;

		if (!(dash = strstr(line, " - ")))
			continue;
		*dash = '\0';
		for (i = 0; i < 6; i++)
			if (!(f[i] = strtok_r(i ? NULL : line, " ", &s)))
				break;
		if (i < 5)
			continue;
		s = NULL;
		type = strtok_r(dash + 3, " ", &s);
		source = strtok_r(NULL, " ", &s);
		superopts = strtok_r(NULL, " ", &s);
		if (!type || !source || !superopts)
			continue;
		if (cg->id == 0 ? strcmp(type, "cgroup2") != 0
				: (strcmp(type, "cgroup") != 0 ||
				   !same_hierarchy(superopts, cg->controllers)))
			continue;
		unescape(f[3]);
		unescape(f[4]);
		if (!under(cg->path, f[3]))
			continue;
		rest = strcmp(f[3], "/") ? cg->path + strlen(f[3]) : cg->path;
		found = snprintf(dir, len, "%s%s", f[4],
				 strcmp(rest, "/") ? rest : "") < (int)len
				? 0
				: -1;
		if (mount_len)
			*mount_len = strlen(f[4]);
	}
	return found;
}

/* The directory of cg where Slurm and systemd mount hierarchies: v1 at
 * root/<controllers> (root/<name> for a named one), the unified one at
 * root itself or, next to v1 ones, at root/unified; each from the
 * hierarchy's root, as seen from this cgroup namespace. */
static int conventional_dir(const char *root, const struct so_cgroup *cg,
			    char *dir, size_t len, size_t *mount_len)
{
	char base[PATH_MAX];
	int n;

	if (cg->id != 0)
		n = snprintf(base, sizeof(base), "%s/%s", root,
			     strncmp(cg->controllers, "name=", 5)
				     ? cg->controllers
				     : cg->controllers + 5);
	else {
		n = snprintf(base, sizeof(base), "%s/cgroup.controllers", root);
		if (n < (int)sizeof(base) && access(base, F_OK) == 0)
			n = snprintf(base, sizeof(base), "%s", root);
		else
			n = snprintf(base, sizeof(base), "%s/unified", root);
	}
	if (n >= (int)sizeof(base) ||
	    snprintf(dir, len, "%s%s", base, strcmp(cg->path, "/") ? cg->path : "") >=
		    (int)len)
		return -1;
	if (mount_len)
		*mount_len = strlen(base);
	return 0;
}

/* Is pid listed in dir/cgroup.procs? */
static int lists(const char *dir, pid_t pid)
{
	static char buf[65536];
	char path[PATH_MAX + 16], want[24];
	const char *p;
	size_t n;

	if (snprintf(path, sizeof(path), "%s/cgroup.procs", dir) >= (int)sizeof(path) ||
	    so_read_small(path, buf, sizeof(buf)) < 0)
		return 0;
	n = (size_t)snprintf(want, sizeof(want), "%d", (int)pid);
	for (p = buf; *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : p + strlen(p))
		if (!strncmp(p, want, n) && (p[n] == '\n' || p[n] == '\0'))
			return 1;
	return 0;
}

int so_cgroup_locate(const struct so_cgroup_files *f, const struct so_cgroup *cg,
		     pid_t pid, char *dir, size_t len, size_t *mount_len)
{
	if (!plain_path(cg->path))
		return -1;
	if (conventional_dir(f->root ? f->root : "/sys/fs/cgroup", cg, dir, len,
			     mount_len) == 0 &&
	    lists(dir, pid))
		return 0;
	if (mountinfo_dir(f->mountinfo ? f->mountinfo : "/proc/self/mountinfo",
			  cg, dir, len, mount_len) == 0 &&
	    lists(dir, pid))
		return 0;
	return -1;
}
