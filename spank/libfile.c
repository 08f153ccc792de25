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

/* Checks one directory: owned by a trusted uid and not writable by group
 * or others (otherwise someone else could replace the file in it). */
static int check_dir(const char *path, const char *dir, uid_t trusted_uid,
		     const struct so_logger *lg)
{
	struct stat st;

	if (stat(dir, &st) != 0) {
		so_logf(lg, SO_LOG_ERROR, "refusing to load %s: cannot stat %s: %s",
			path, dir, strerror(errno));
		return -1;
	}
	if (!trusted_owner(st.st_uid, trusted_uid)) {
		so_logf(lg, SO_LOG_ERROR,
			"refusing to load %s: directory %s is owned by uid %u "
			"(only root or uid %u may own it)",
			path, dir, (unsigned)st.st_uid, (unsigned)trusted_uid);
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

/* Checks every directory from the file's own up to "/". */
static int check_dirs(const char *path, const char *resolved,
		      uid_t trusted_uid, const struct so_logger *lg)
{
	char dir[PATH_MAX];
	char *slash;

	if (snprintf(dir, sizeof(dir), "%s", resolved) >= (int)sizeof(dir))
		return -1;
	while ((slash = strrchr(dir, '/'))) {
		if (slash == dir) {
			dir[1] = '\0';
			return check_dir(path, dir, trusted_uid, lg);
		}
		*slash = '\0';
		if (check_dir(path, dir, trusted_uid, lg) != 0)
			return -1;
	}
	return 0;
}

/* The path the descriptor really refers to, after all symbolic links. */
static int resolve(int fd, const char *path, char *out, size_t len)
{
	char link[64];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, out, len - 1);
	if (n > 0 && out[0] == '/') {
		out[n] = '\0';
		/* A file removed since it was opened is named "... (deleted)". */
		if (!(n > 10 && !strcmp(out + n - 10, " (deleted)")))
			return 0;
	}
	if (len >= PATH_MAX && realpath(path, out))
		return 0;
	return -1;
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
	char resolved[PATH_MAX];
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
	/* O_NONBLOCK: a FIFO planted at the path must not hang the task. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
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
			"refusing to load %s: owned by uid %u%s (only root or "
			"uid %u may own it)",
			path, (unsigned)sb.st_uid,
			(sb.st_mode & S_IWUSR) ? " and writable by it" : "",
			(unsigned)trusted_uid);
		goto refuse;
	}
	if (sb.st_mode & (S_IWGRP | S_IWOTH)) {
		so_logf(lg, SO_LOG_ERROR,
			"refusing to load %s: writable by group or others "
			"(mode %04o)",
			path, (unsigned)(sb.st_mode & 07777));
		goto refuse;
	}
	if (resolve(fd, path, resolved, sizeof(resolved)) != 0) {
		so_logf(lg, SO_LOG_ERROR,
			"refusing to load %s: cannot resolve its directory",
			path);
		goto refuse;
	}
	if (check_dirs(path, resolved, trusted_uid, lg) != 0)
		goto refuse;
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
