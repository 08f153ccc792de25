/*
 * libfile.c - open the Go library file and check that it may be loaded
 * (see libfile.h).
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "libfile.h"

static int trusted_owner(uid_t uid, uid_t trusted_uid)
{
	return uid == 0 || uid == trusted_uid;
}

/* Who may own the file and its directories, for the refusal's message:
 * "root", or "root or uid N" when slurmstepd runs as another user. */
static const char *owners(uid_t trusted_uid, char *buf, size_t len)
{
	if (trusted_uid == 0)
		return "root";
	snprintf(buf, len, "root or uid %u", (unsigned)trusted_uid);
	return buf;
}

/* Checks one directory: owned by a trusted uid and not writable by group
 * or others (otherwise someone else could replace the file in it). */
static int check_dir(const char *path, const char *dir, uid_t trusted_uid,
		     const struct so_logger *lg)
{
	struct stat st;
	char who[32];

	if (stat(dir, &st) != 0) {
		so_logf(lg, SO_LOG_ERROR, "refusing to load %s: cannot stat %s: %s",
			path, dir, strerror(errno));
		return -1;
	}
	if (!trusted_owner(st.st_uid, trusted_uid)) {
		so_logf(lg, SO_LOG_ERROR,
			"refusing to load %s: directory %s is owned by uid %u "
			"(only %s may own it)",
			path, dir, (unsigned)st.st_uid,
			owners(trusted_uid, who, sizeof(who)));
		return -1;
	}
	if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		so_logf(lg, SO_LOG_ERROR,
			"refusing to load %s: directory %s is writable by group "
			"or others (mode %04o)",
			path, dir, (unsigned)(st.st_mode & 07777));
		return -1;
	}
	return 0;
}

/*
 * Resolves path one component at a time, as the kernel would, checking
 * every directory a name is looked up in on the way: those of the
 * resolved path and those holding a symbolic link that was followed. A
 * link in a directory a user can write is refused even when it points to
 * a safe file: the user could point it elsewhere before the next step.
 * Fills resolved with a path free of links, "." and "..". Returns
 * SO_CALLED, or SO_OPEN_FAILED / SO_REFUSED (logged).
 */
static enum so_status walk(const char *path, uid_t trusted_uid, char *resolved,
			   size_t len, const struct so_logger *lg)
{
	char todo[2 * PATH_MAX], cur[PATH_MAX], target[PATH_MAX];
	char *rest = todo;
	int hops = 0;

	if (snprintf(todo, sizeof(todo), "%s", path) >= (int)sizeof(todo))
		goto too_long;
	cur[0] = '\0'; /* "/" */
	if (check_dir(path, "/", trusted_uid, lg) != 0)
		return SO_REFUSED;
	for (;;) {
		char name[NAME_MAX + 1], next[PATH_MAX];
		size_t n;
		struct stat st;
		ssize_t t;

		while (*rest == '/')
			rest++;
		if (!*rest)
			break;
		n = strcspn(rest, "/");
		if (n > NAME_MAX) {
			errno = ENAMETOOLONG;
			goto cannot;
		}
		memcpy(name, rest, n);
		name[n] = '\0';
		rest += n;
		if (!strcmp(name, "."))
			continue;
		if (!strcmp(name, "..")) {
			/* cur has no link in it: its parent is a prefix. */
			char *slash = strrchr(cur, '/');

			if (slash)
				*slash = '\0';
			continue;
		}
		if (snprintf(next, sizeof(next), "%s/%s", cur, name) >= (int)sizeof(next))
			goto too_long;
		if (lstat(next, &st) != 0)
			goto cannot;
		if (S_ISLNK(st.st_mode)) {
			char more[2 * PATH_MAX];

			if (++hops > 40) {
				errno = ELOOP;
				goto cannot;
			}
			t = readlink(next, target, sizeof(target) - 1);
			if (t <= 0)
				goto cannot;
			target[t] = '\0';
			if (snprintf(more, sizeof(more), "%s%s", target, rest) >=
			    (int)sizeof(more))
				goto too_long;
			memcpy(todo, more, strlen(more) + 1);
			rest = todo;
			if (target[0] == '/')
				cur[0] = '\0';
			continue;
		}
		memcpy(cur, next, strlen(next) + 1);
		while (*rest == '/')
			rest++;
		if (!*rest)
			break; /* the file itself: checked on its descriptor */
		if (!S_ISDIR(st.st_mode)) {
			errno = ENOTDIR;
			goto cannot;
		}
		if (check_dir(path, cur, trusted_uid, lg) != 0)
			return SO_REFUSED;
	}
	if (snprintf(resolved, len, "%s", cur[0] ? cur : "/") >= (int)len)
		goto too_long;
	return SO_CALLED;
cannot:
	so_logf(lg, SO_LOG_ERROR, "cannot open %s: %s", path, strerror(errno));
	return SO_OPEN_FAILED;
too_long:
	so_logf(lg, SO_LOG_ERROR, "refusing to load %s: path too long", path);
	return SO_REFUSED;
}

/* Reads exactly len bytes at off. */
static int read_at(int fd, void *buf, size_t len, off_t off)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = pread(fd, (char *)buf + got, len - got,
				  off + (off_t)got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		got += (size_t)n;
	}
	return 0;
}

/*
 * dlopen() maps the segments a file's program headers describe; when the
 * file is shorter than they say (a truncated copy), touching the missing
 * part kills the process with SIGBUS inside dlopen(). So check that every
 * segment lies within the file. Files that are not 64-bit ELF are left to
 * dlopen(), which reports them cleanly.
 */
static int check_elf_size(int fd, off_t size, const char *path,
			  const struct so_logger *lg)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph;
	unsigned i;

	if (size < (off_t)sizeof(eh) || read_at(fd, &eh, sizeof(eh), 0) != 0 ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64)
		return 0;
	if (eh.e_phentsize != sizeof(ph) || eh.e_phoff > (Elf64_Off)size ||
	    (Elf64_Off)eh.e_phnum * sizeof(ph) > (Elf64_Off)size - eh.e_phoff) {
		so_logf(lg, SO_LOG_ERROR,
			"cannot load %s: damaged ELF file (program headers "
			"outside the file)", path);
		return -1;
	}
	for (i = 0; i < eh.e_phnum; i++) {
		if (read_at(fd, &ph, sizeof(ph),
			    (off_t)(eh.e_phoff + (Elf64_Off)i * sizeof(ph))))
			return -1;
		if (ph.p_type != PT_LOAD && ph.p_type != PT_DYNAMIC)
			continue;
		if (ph.p_offset > (Elf64_Off)size ||
		    ph.p_filesz > (Elf64_Off)size - ph.p_offset) {
			so_logf(lg, SO_LOG_ERROR,
				"cannot load %s: truncated ELF file (a segment "
				"ends at byte %llu, the file has %llu)",
				path,
				(unsigned long long)(ph.p_offset + ph.p_filesz),
				(unsigned long long)size);
			return -1;
		}
	}
	return 0;
}

enum so_status so_lib_open(struct so_lib *lib, const char *path,
			   uid_t trusted_uid, const struct so_logger *lg)
{
	char resolved[PATH_MAX], who[32];
	struct stat sb;
	enum so_status st;
	int fd;

	lib->fd = -1;
	lib->path = path ? path : "(null)";
	if (!path || path[0] != '/') {
		so_logf(lg, SO_LOG_ERROR,
			"refusing to load %s: not an absolute path",
			lib->path);
		return SO_REFUSED;
	}
	st = walk(path, trusted_uid, resolved, sizeof(resolved), lg);
	if (st != SO_CALLED)
		return st;
	/* The name resolved above, which no link can redirect now that
	 * every directory on the way is safe. O_NONBLOCK: a FIFO planted at
	 * the path must not hang the task. */
	fd = open(resolved, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY | O_NOFOLLOW);
	if (fd < 0) {
		so_logf(lg, SO_LOG_ERROR, "cannot open %s: %s", path,
			strerror(errno));
		return SO_OPEN_FAILED;
	}
	st = SO_REFUSED;
	if (fstat(fd, &sb) != 0) {
		so_logf(lg, SO_LOG_ERROR, "refusing to load %s: fstat: %s",
			path, strerror(errno));
		goto refuse;
	}
	if (!S_ISREG(sb.st_mode)) {
		so_logf(lg, SO_LOG_ERROR,
			"refusing to load %s: not a regular file", path);
		goto refuse;
	}
	if (!trusted_owner(sb.st_uid, trusted_uid)) {
		so_logf(lg, SO_LOG_ERROR,
			"refusing to load %s: owned by uid %u%s (only %s may "
			"own it)",
			path, (unsigned)sb.st_uid,
			(sb.st_mode & S_IWUSR) ? " and writable by it" : "",
			owners(trusted_uid, who, sizeof(who)));
		goto refuse;
	}
	if (sb.st_mode & (S_IWGRP | S_IWOTH)) {
		so_logf(lg, SO_LOG_ERROR,
			"refusing to load %s: writable by group or others "
			"(mode %04o)",
			path, (unsigned)(sb.st_mode & 07777));
		goto refuse;
	}
	if (check_elf_size(fd, sb.st_size, path, lg) != 0) {
		st = SO_LOAD_FAILED;
		goto refuse;
	}
	lib->fd = fd;
	lib->dev = sb.st_dev;
	lib->ino = sb.st_ino;
	return SO_CALLED;
refuse:
	close(fd);
	return st;
}
