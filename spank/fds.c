/*
 * fds.c - descriptors and directories without allocation (fds.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fds.h"

#ifndef SYS_close_range
#define SYS_close_range 436
#endif

/* getdents64's record (the kernel's struct linux_dirent64). */
struct dirent64_rec {
	uint64_t ino;
	int64_t off;
	unsigned short reclen;
	unsigned char type;
	char name[];
};

int so_dir_each(int dirfd, int (*fn)(const char *name, void *arg), void *arg)
{
	char buf[4096] __attribute__((aligned(8)));
	long n;

	while ((n = syscall(SYS_getdents64, dirfd, buf, sizeof(buf))) > 0) {
		long off = 0;

		while (off < n) {
			struct dirent64_rec *d = (void *)(buf + off);
			int rc;

			off += d->reclen;
			if ((rc = fn(d->name, arg)) != 0)
				return rc;
		}
	}
	return n < 0 ? -1 : 0;
}

struct closing {
	int first, dir, closed;
};

static int close_named(const char *name, void *arg)
{
	struct closing *c = arg;
	int fd = 0;

	if (*name < '0' || *name > '9')
		return 0;
	for (; *name >= '0' && *name <= '9' && fd < 1 << 24; name++)
		fd = fd * 10 + (*name - '0');
	if (fd >= c->first && fd != c->dir && close(fd) == 0)
		c->closed = 1;
	return 0;
}

int so_close_from(int first)
{
	struct closing c = { first, -1, 1 };

	if (syscall(SYS_close_range, (unsigned)first, ~0U, 0) == 0)
		return 0;
	/* Kernels before 5.9: /proc/self/fd, read again until a pass
	 * closes nothing (closing while reading may skip a name). */
	while (c.closed) {
		int rc;

		c.closed = 0;
		c.dir = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (c.dir < 0)
			return -1;
		rc = so_dir_each(c.dir, close_named, &c);
		close(c.dir);
		if (rc < 0)
			return -1;
	}
	return 0;
}

void so_fd_id(int fd, unsigned long long id[2])
{
	struct stat st;

	id[0] = id[1] = 0;
	if (fd >= 0 && fstat(fd, &st) == 0) {
		id[0] = (unsigned long long)st.st_dev;
		id[1] = (unsigned long long)st.st_ino;
	}
}
