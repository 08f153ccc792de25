/*
 * nodefiles.c - the node's files the library's GPU search reads, recorded
 * once per step (nodefiles.h; the format is contract.h's SO_NODE_*).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "../cgo/contract.h"
#include "nodefiles.h"

/* Where the driver lists its GPUs, one directory per PCI address, each
 * with an information file; the library's detect/gpu reads the same. */
#define DRIVER_DIR "/proc/driver/nvidia/gpus"
/* A GPU's device node is /dev/nvidia<minor>. */
#define DEV_DIR "/dev"
#define DEV_PREFIX "nvidia"
/* The library reads no file larger than this (detect/gpu's maxFile). */
#define MAX_FILE (1L << 20)

/* Makes room for more bytes at the end of nf. Returns 0, or -1 (E2BIG)
 * past SO_NODE_FILES_MAX, or on no memory. */
static int reserve(struct so_node_files *nf, size_t more)
{
	size_t cap;
	char *buf;

	if (more > (size_t)SO_NODE_FILES_MAX - nf->len) {
		errno = E2BIG;
		return -1;
	}
	if (nf->len + more <= nf->cap)
		return 0;
	cap = nf->cap ? nf->cap : 4096;
	while (cap < nf->len + more)
		cap *= 2;
	if (!(buf = realloc(nf->buf, cap)))
		return -1;
	nf->buf = buf;
	nf->cap = cap;
	return 0;
}

/* Starts a record of kind for name: its header, with the length to be set
 * by end_record. Returns the offset of the length, or -1. */
static long begin_record(struct so_node_files *nf, char kind, const char *name)
{
	size_t n = strlen(name) + 1;
	long at;

	if (reserve(nf, 1 + n + sizeof(uint32_t)) != 0)
		return -1;
	nf->buf[nf->len++] = kind;
	memcpy(nf->buf + nf->len, name, n);
	nf->len += n;
	at = (long)nf->len;
	memset(nf->buf + nf->len, 0, sizeof(uint32_t));
	nf->len += sizeof(uint32_t);
	return at;
}

static void end_record(struct so_node_files *nf, long at)
{
	uint32_t len = (uint32_t)(nf->len - (size_t)at - sizeof(uint32_t));

	memcpy(nf->buf + at, &len, sizeof(len));
}

/* Drops the record begun at the length's offset at. */
static void drop_record(struct so_node_files *nf, long at, const char *name)
{
	nf->len = (size_t)at - strlen(name) - 2;
}

static int add_record(struct so_node_files *nf, char kind, const char *name,
		      const void *data, size_t len)
{
	long at = begin_record(nf, kind, name);

	if (at < 0 || reserve(nf, len) != 0)
		return -1;
	memcpy(nf->buf + nf->len, data, len);
	nf->len += len;
	end_record(nf, at);
	return 0;
}

static int missing(int err) { return err == ENOENT || err == ENOTDIR; }

/* root + name, or -1 when it does not fit. */
static int join(char *out, const char *root, const char *name)
{
	int n = snprintf(out, PATH_MAX, "%s%s", root, name);

	return n < 0 || n >= PATH_MAX ? -1 : 0;
}

/* Records the regular file name: its contents, or absent. Any other
 * outcome (unreadable, not a regular file, too large) is left to the
 * library, which reads it again and says why. Returns -1 only when the
 * records would be too large. */
static int record_file(struct so_node_files *nf, const char *root,
		       const char *name)
{
	char path[PATH_MAX];
	struct stat st;
	long at;
	ssize_t r = 0;
	int fd, rc = 0;

	if (join(path, root, name) != 0)
		return 0;
	/* O_NONBLOCK: a FIFO put in place of a file must not block. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return missing(errno) ? add_record(nf, SO_NODE_ABSENT, name, NULL, 0) : 0;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > MAX_FILE) {
		close(fd);
		return 0;
	}
	if ((at = begin_record(nf, SO_NODE_FILE, name)) < 0) {
		close(fd);
		return -1;
	}
	/* Files in /proc say size 0: read to the end. */
	for (;;) {
		if (reserve(nf, 4096) != 0) {
			rc = -1;
			break;
		}
		r = read(fd, nf->buf + nf->len, 4096);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		nf->len += (size_t)r;
		if (nf->len - (size_t)at - sizeof(uint32_t) > (size_t)MAX_FILE)
			break;
	}
	if (rc == 0 && r == 0 &&
	    nf->len - (size_t)at - sizeof(uint32_t) <= (size_t)MAX_FILE)
		end_record(nf, at);
	else
		drop_record(nf, at, name);
	close(fd);
	return rc;
}

/* Records what stat says of name, never opening it: a GPU's device node
 * may initialise the GPU on open. */
static int record_stat(struct so_node_files *nf, const char *root,
		       const char *name)
{
	char path[PATH_MAX];
	struct stat st;
	uint32_t dev[2];

	if (join(path, root, name) != 0)
		return 0;
	if (stat(path, &st) != 0)
		return missing(errno) ? add_record(nf, SO_NODE_ABSENT, name, NULL, 0) : 0;
	if (!S_ISCHR(st.st_mode))
		return add_record(nf, SO_NODE_OTHER, name, NULL, 0);
	dev[0] = major(st.st_rdev);
	dev[1] = minor(st.st_rdev);
	return add_record(nf, SO_NODE_CHARDEV, name, dev, sizeof(dev));
}

/* Records the names in directory name. Returns the offset of the record's
 * data with *len its length, 0 when the directory cannot be read (absent
 * recorded), or -1 when the records would be too large. */
static long record_dir(struct so_node_files *nf, const char *root,
		       const char *name, size_t *len)
{
	char path[PATH_MAX];
	struct dirent *d;
	DIR *dir;
	long at;

	*len = 0;
	if (join(path, root, name) != 0)
		return 0;
	if (!(dir = opendir(path)))
		return missing(errno) && add_record(nf, SO_NODE_ABSENT, name, NULL, 0) != 0 ? -1 : 0;
	if ((at = begin_record(nf, SO_NODE_DIR, name)) < 0) {
		closedir(dir);
		return -1;
	}
	errno = 0;
	while ((d = readdir(dir))) {
		size_t n = strlen(d->d_name) + 1;

		if (!strcmp(d->d_name, ".") || !strcmp(d->d_name, ".."))
			continue;
		if (reserve(nf, n) != 0) {
			closedir(dir);
			return -1;
		}
		memcpy(nf->buf + nf->len, d->d_name, n);
		nf->len += n;
	}
	if (errno != 0) {
		drop_record(nf, at, name);
		closedir(dir);
		return 0;
	}
	closedir(dir);
	end_record(nf, at);
	*len = nf->len - (size_t)at - sizeof(uint32_t);
	return at + (long)sizeof(uint32_t);
}

/* Records the information file of each GPU the driver lists. */
static int record_driver(struct so_node_files *nf, const char *root)
{
	char name[PATH_MAX];
	size_t len, off;
	long data = record_dir(nf, root, DRIVER_DIR, &len);

	if (data < 0)
		return -1;
	if (data == 0 || len == 0) {
		/* No driver, or one without GPUs: nothing to find. */
		errno = ENOENT;
		return -1;
	}
	/* The names move with the buffer as it grows: walk by offset. */
	for (off = 0; off < len;) {
		const char *entry = nf->buf + data + off;
		size_t n = strlen(entry) + 1;
		int w = snprintf(name, sizeof(name), DRIVER_DIR "/%s/information",
				 entry);

		off += n;
		if (w > 0 && w < (int)sizeof(name) && record_file(nf, root, name) != 0)
			return -1;
	}
	return 0;
}

/* Records the stat of every /dev/nvidia<N>: gres.conf names its GPUs by
 * these nodes. */
static int record_devices(struct so_node_files *nf, const char *root)
{
	struct dirent *d;
	char path[PATH_MAX], name[sizeof(DEV_DIR "/") + sizeof(d->d_name)];
	DIR *dir;
	int rc = 0;

	if (join(path, root, DEV_DIR) != 0 || !(dir = opendir(path)))
		return 0;
	while (rc == 0 && (d = readdir(dir))) {
		const char *p = d->d_name;

		if (strncmp(p, DEV_PREFIX, sizeof(DEV_PREFIX) - 1))
			continue;
		p += sizeof(DEV_PREFIX) - 1;
		if (!*p || strspn(p, "0123456789") != strlen(p))
			continue;
		snprintf(name, sizeof(name), DEV_DIR "/%s", d->d_name);
		rc = record_stat(nf, root, name);
	}
	closedir(dir);
	return rc;
}

/* Records the configuration files in the directory of slurm_conf. */
static int record_conf(struct so_node_files *nf, const char *root,
		       const char *slurm_conf)
{
	static const char *const files[] = { "gres.conf", "cgroup.conf" };
	const char *slash;
	char name[PATH_MAX];
	size_t dir;
	unsigned i;

	if (!slurm_conf || slurm_conf[0] != '/' ||
	    !(slash = strrchr(slurm_conf, '/')))
		return 0;
	dir = (size_t)(slash - slurm_conf) + 1;
	if (dir + sizeof("fake_gpus.conf") > sizeof(name))
		return 0;
	memcpy(name, slurm_conf, dir);
	/* slurmd's test setup: the library only needs to know it is absent. */
	strcpy(name + dir, "fake_gpus.conf");
	if (record_stat(nf, root, name) != 0)
		return -1;
	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		strcpy(name + dir, files[i]);
		if (record_file(nf, root, name) != 0)
			return -1;
	}
	return 0;
}

int so_node_files_read(struct so_node_files *nf, const char *root,
		       const char *slurm_conf)
{
	int records = 0, err;
	size_t off;

	memset(nf, 0, sizeof(*nf));
	errno = 0;
	if (record_driver(nf, root) != 0 || record_devices(nf, root) != 0 ||
	    record_conf(nf, root, slurm_conf) != 0) {
		err = errno ? errno : E2BIG;
		so_node_files_free(nf);
		errno = err;
		return -1;
	}
	for (off = 0; off < nf->len; records++) {
		uint32_t len;

		off += 1 + strlen(nf->buf + off + 1) + 1;
		memcpy(&len, nf->buf + off, sizeof(len));
		off += sizeof(len) + len;
	}
	return records;
}

void so_node_files_free(struct so_node_files *nf)
{
	free(nf->buf);
	memset(nf, 0, sizeof(*nf));
}
