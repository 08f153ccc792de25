/*
 * nodefiles.c - the node's files the library's GPU search reads, recorded
 * once per step by a child process within a deadline (nodefiles.h; the
 * format is contract.h's SO_NODE_*).
 *
 * The child is a raw clone of slurmstepd, which runs several threads: it
 * makes system calls only, and writes the records into a shared mapping
 * of fixed size, never allocating (malloc's lock may be held by a thread
 * that does not exist in the child).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../cgo/contract.h"
#include "clock.h"
#include "fds.h"
#include "nodefiles.h"
#include "pidfd.h"
#include "rawclone.h"

/* Where the driver lists its GPUs, one directory per PCI address, each
 * with an information file; the library's detect/gpu reads the same. */
#define DRIVER_DIR "/proc/driver/nvidia/gpus"
/* A GPU's device node is /dev/nvidia<minor>. */
#define DEV_DIR "/dev"
#define DEV_PREFIX "nvidia"
/* The library reads no file larger than this (detect/gpu's maxFile). */
#define MAX_FILE (1L << 20)
/* Once the deadline has passed: how long a killed child may take to end,
 * at most (a tenth of the timeout, as the task's side of a helper keeps). */
#define KILL_RESERVE_US 100000LL

/* What the child and the step parent share. */
struct shared {
	int done;             /* the child finished: the fields below hold */
	int err;              /* its errno, or 0 */
	int records;          /* the number of records */
	int no_gpu;           /* the driver lists no GPU, or is absent */
	size_t len;           /* their bytes in buf */
	char current[PATH_MAX]; /* the name being read, for a stalled read */
	char buf[SO_NODE_FILES_MAX];
};

/* The records being written. */
struct rec {
	char *buf;
	size_t len;
	char *current;
};

/* Returns 0 when more bytes fit at the end of r, or -1 (E2BIG). */
static int reserve(struct rec *r, size_t more)
{
	if (more > (size_t)SO_NODE_FILES_MAX - r->len) {
		errno = E2BIG;
		return -1;
	}
	return 0;
}

/* Starts a record of kind for name: its header, with the length to be set
 * by end_record. Returns the offset of the length, or -1. */
static long begin_record(struct rec *r, char kind, const char *name)
{
	size_t n = strlen(name) + 1;
	long at;

	if (reserve(r, 1 + n + sizeof(uint32_t)) != 0)
		return -1;
	r->buf[r->len++] = kind;
	memcpy(r->buf + r->len, name, n);
	r->len += n;
	at = (long)r->len;
	memset(r->buf + r->len, 0, sizeof(uint32_t));
	r->len += sizeof(uint32_t);
	return at;
}

static void end_record(struct rec *r, long at)
{
	uint32_t len = (uint32_t)(r->len - (size_t)at - sizeof(uint32_t));

	memcpy(r->buf + at, &len, sizeof(len));
}

/* Drops the record begun at the length's offset at. */
static void drop_record(struct rec *r, long at, const char *name)
{
	r->len = (size_t)at - strlen(name) - 2;
}

static int add_record(struct rec *r, char kind, const char *name,
		      const void *data, size_t len)
{
	long at = begin_record(r, kind, name);

	if (at < 0 || reserve(r, len) != 0)
		return -1;
	if (len)
		memcpy(r->buf + r->len, data, len);
	r->len += len;
	end_record(r, at);
	return 0;
}

static int missing(int err) { return err == ENOENT || err == ENOTDIR; }

/* a + b + c into out, or -1 when it does not fit in PATH_MAX. */
static int join(char *out, const char *a, const char *b, const char *c)
{
	size_t la = strlen(a), lb = strlen(b), lc = strlen(c);

	if (la + lb + lc >= PATH_MAX)
		return -1;
	memcpy(out, a, la);
	memcpy(out + la, b, lb);
	memcpy(out + la + lb, c, lc + 1);
	return 0;
}

/* Opens root + name for reading after saying which name it is: should the
 * open or a read block, the step parent names the file. */
static int open_named(struct rec *r, const char *root, const char *name,
		      int flags, char *path)
{
	if (join(path, root, name, "") != 0) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(r->current, name, strlen(name) + 1);
	return open(path, flags | O_RDONLY | O_CLOEXEC | O_NOCTTY);
}

/* Records the regular file name: its contents, or absent. Any other
 * outcome (unreadable, not a regular file, too large for a record or for
 * what room the records have left) is left to the library, which reads it
 * again and says why: one large file (a site's shared gres.conf) costs its
 * own record only. Returns 0. */
static int record_file(struct rec *r, const char *root, const char *name)
{
	char path[PATH_MAX];
	struct stat st;
	long at;
	ssize_t n = 0;
	int fd, full = 0;

	/* O_NONBLOCK: a FIFO put in place of a file must not block. */
	fd = open_named(r, root, name, O_NONBLOCK, path);
	if (fd < 0) {
		if (missing(errno))
			add_record(r, SO_NODE_ABSENT, name, NULL, 0);
		return 0;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > MAX_FILE ||
	    (at = begin_record(r, SO_NODE_FILE, name)) < 0) {
		close(fd);
		return 0;
	}
	/* Files in /proc say size 0: read to the end. */
	for (;;) {
		size_t room = (size_t)SO_NODE_FILES_MAX - r->len;

		if (room == 0) {
			full = 1;
			break;
		}
		n = read(fd, r->buf + r->len, room < 4096 ? room : 4096);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		r->len += (size_t)n;
		if (r->len - (size_t)at - sizeof(uint32_t) > (size_t)MAX_FILE)
			break;
	}
	if (!full && n == 0 &&
	    r->len - (size_t)at - sizeof(uint32_t) <= (size_t)MAX_FILE)
		end_record(r, at);
	else
		drop_record(r, at, name);
	close(fd);
	return 0;
}

/* Records what stat says of name, never opening it: a GPU's device node
 * may initialise the GPU on open. */
static int record_stat(struct rec *r, const char *root, const char *name)
{
	char path[PATH_MAX];
	struct stat st;
	uint32_t dev[2];

	if (join(path, root, name, "") != 0)
		return 0;
	memcpy(r->current, name, strlen(name) + 1);
	if (stat(path, &st) != 0)
		return missing(errno) ? add_record(r, SO_NODE_ABSENT, name, NULL, 0) : 0;
	if (!S_ISCHR(st.st_mode))
		return add_record(r, SO_NODE_OTHER, name, NULL, 0);
	dev[0] = major(st.st_rdev);
	dev[1] = minor(st.st_rdev);
	return add_record(r, SO_NODE_CHARDEV, name, dev, sizeof(dev));
}

/* Appends each entry's name but "." and "..", NUL-terminated. */
static int append_name(const char *name, void *arg)
{
	struct rec *r = arg;
	size_t n = strlen(name) + 1;

	if (!strcmp(name, ".") || !strcmp(name, ".."))
		return 0;
	if (reserve(r, n) != 0)
		return -2;
	memcpy(r->buf + r->len, name, n);
	r->len += n;
	return 0;
}

/* Records the names in directory name. Returns the offset of the record's
 * data with *len its length, 0 when the directory cannot be read (absent
 * recorded), or -1 when the records would be too large. */
static long record_dir(struct rec *r, const char *root, const char *name,
		       size_t *len)
{
	char path[PATH_MAX];
	long at;
	int fd, rc;

	*len = 0;
	if ((fd = open_named(r, root, name, O_DIRECTORY, path)) < 0)
		return missing(errno) && add_record(r, SO_NODE_ABSENT, name, NULL, 0) != 0 ? -1 : 0;
	if ((at = begin_record(r, SO_NODE_DIR, name)) < 0) {
		close(fd);
		return -1;
	}
	rc = so_dir_each(fd, append_name, r);
	close(fd);
	if (rc == -2)
		return -1;
	if (rc != 0) {
		drop_record(r, at, name);
		return 0;
	}
	end_record(r, at);
	*len = r->len - (size_t)at - sizeof(uint32_t);
	return at + (long)sizeof(uint32_t);
}

/* Records the information file of each GPU the driver lists, and sets
 * *no_gpu when it lists none or is absent (nodefiles.h: such a node is
 * recorded all the same). */
static int record_driver(struct rec *r, const char *root, int *no_gpu)
{
	char name[PATH_MAX];
	size_t len, off;
	long data = record_dir(r, root, DRIVER_DIR, &len);

	if (data < 0)
		return -1;
	*no_gpu = data == 0 || len == 0;
	/* The records grow behind the names: walk by offset. */
	for (off = 0; off < len;) {
		const char *entry = r->buf + data + off;

		off += strlen(entry) + 1;
		if (join(name, DRIVER_DIR "/", entry, "/information") == 0 &&
		    record_file(r, root, name) != 0)
			return -1;
	}
	return 0;
}

struct devices {
	struct rec *r;
	const char *root;
};

/* Records the stat of a /dev entry named nvidia<N>. */
static int record_device(const char *entry, void *arg)
{
	struct devices *d = arg;
	const char *p = entry;
	char name[PATH_MAX];

	if (strncmp(p, DEV_PREFIX, sizeof(DEV_PREFIX) - 1))
		return 0;
	p += sizeof(DEV_PREFIX) - 1;
	if (!*p || strspn(p, "0123456789") != strlen(p))
		return 0;
	if (join(name, DEV_DIR "/", entry, "") != 0)
		return 0;
	return record_stat(d->r, d->root, name) != 0 ? -2 : 0;
}

/* Records the stat of every /dev/nvidia<N>: gres.conf names its GPUs by
 * these nodes. */
static int record_devices(struct rec *r, const char *root)
{
	struct devices d = { r, root };
	char path[PATH_MAX];
	int fd, rc;

	if ((fd = open_named(r, root, DEV_DIR, O_DIRECTORY, path)) < 0)
		return 0;
	rc = so_dir_each(fd, record_device, &d);
	close(fd);
	return rc == -2 ? -1 : 0;
}

/* Records the configuration files in the directory of slurm_conf. */
static int record_conf(struct rec *r, const char *root, const char *slurm_conf)
{
	static const char *const files[] = { "gres.conf", "cgroup.conf" };
	const char *slash;
	char dir[PATH_MAX], name[PATH_MAX];
	size_t n;
	unsigned i;

	if (!slurm_conf || slurm_conf[0] != '/' ||
	    !(slash = strrchr(slurm_conf, '/')))
		return 0;
	n = (size_t)(slash - slurm_conf) + 1;
	if (n >= sizeof(dir))
		return 0;
	memcpy(dir, slurm_conf, n);
	dir[n] = '\0';
	/* slurmd's test setup: the library only needs to know it is absent. */
	if (join(name, dir, "fake_gpus.conf", "") == 0 &&
	    record_stat(r, root, name) != 0)
		return -1;
	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++)
		if (join(name, dir, files[i], "") == 0 &&
		    record_file(r, root, name) != 0)
			return -1;
	return 0;
}

static int count_records(const char *buf, size_t len)
{
	size_t off;
	int records = 0;

	for (off = 0; off < len; records++) {
		uint32_t n;

		off += 1 + strlen(buf + off + 1) + 1;
		memcpy(&n, buf + off, sizeof(n));
		off += sizeof(n) + n;
	}
	return records;
}

/* The child: blocks every signal (slurmstepd's handlers write to
 * slurmstepd's descriptors), closes every descriptor (one it kept, a
 * stalled child would keep: srun's I/O sockets among them), takes the
 * effective ids as all its ids (the task's user may then signal it),
 * records, and says so through the shared mapping. */
static void __attribute__((noreturn))
recorder(struct shared *sh, const char *root, const char *slurm_conf)
{
	struct rec r = { sh->buf, 0, sh->current };
	uid_t uid = geteuid();
	gid_t gid = getegid();
	sigset_t all;
	int err = 0;

	sigfillset(&all);
	syscall(SYS_rt_sigprocmask, SIG_SETMASK, &all, NULL, _NSIG / 8);
	/* Its name in ps, where an admin finds one the kernel holds. */
	prctl(PR_SET_NAME, SO_NODE_READER_NAME, 0, 0, 0);
	if (so_close_from(0) != 0 ||
	    syscall(SYS_setresgid, gid, gid, gid) != 0 ||
	    syscall(SYS_setresuid, uid, uid, uid) != 0 ||
	    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0)
		err = errno ? errno : EPERM;
	else if (record_driver(&r, root, &sh->no_gpu) != 0 || record_devices(&r, root) != 0 ||
		 record_conf(&r, root, slurm_conf) != 0)
		err = errno ? errno : E2BIG;
	sh->err = err;
	sh->len = err ? 0 : r.len;
	sh->records = err ? 0 : count_records(r.buf, r.len);
	__atomic_store_n(&sh->done, 1, __ATOMIC_RELEASE);
	syscall(SYS_exit_group, 0);
	__builtin_unreachable();
}

/* Waits until the child ends or the deadline passes. Returns 1 when it
 * ended (and reaps it), 0 when it has not. */
static int wait_end(int pidfd, pid_t pid, long long deadline)
{
	for (;;) {
		struct pollfd p = { pidfd, POLLIN, 0 };
		long long left = deadline - so_monotonic_us();
		siginfo_t si;
		int r;

		if (left <= 0)
			return 0;
		r = poll(&p, 1, (int)((left + 999) / 1000));
		if (r < 0 && errno != EINTR)
			return 0;
		if (r <= 0)
			continue;
		memset(&si, 0, sizeof(si));
		if (waitid(P_PIDFD, (id_t)pidfd, &si, WEXITED | __WALL) < 0 &&
		    errno == EINVAL) /* Linux 5.3: no P_PIDFD */
			waitid(P_PID, (id_t)pid, &si, WEXITED | __WALL);
		return 1;
	}
}

/* The records of a stalled recording: one, naming the file. */
static int stalled(struct so_node_files *nf, const struct shared *sh)
{
	char name[PATH_MAX];
	size_t n;

	/* The child stopped writing the name before it blocked. */
	memcpy(name, sh->current, sizeof(name));
	name[sizeof(name) - 1] = '\0';
	n = strlen(name) + 1;
	if ((nf->buf = malloc(1 + n + sizeof(uint32_t)))) {
		nf->buf[0] = SO_NODE_STALLED;
		memcpy(nf->buf + 1, name, n);
		memset(nf->buf + 1 + n, 0, sizeof(uint32_t));
		nf->len = 1 + n + sizeof(uint32_t);
	}
	errno = ETIMEDOUT;
	return -1;
}

int so_node_files_record(struct so_node_files *nf, const char *root,
			 const char *slurm_conf, int timeout_ms)
{
	long long start = so_monotonic_us();
	long long timeout = (long long)timeout_ms * 1000, reserve = timeout / 10;
	struct shared *sh;
	sigset_t all, old;
	int pidfd = -1, rc = -1, err;
	long pid;

	memset(nf, 0, sizeof(*nf));
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		return -1;
	if (reserve > KILL_RESERVE_US)
		reserve = KILL_RESERVE_US;
	/* No handler of slurmstepd's may run in the child before it blocks
	 * them all; this thread's mask is back right after. */
	sigfillset(&all);
	sigprocmask(SIG_SETMASK, &all, &old);
	pid = so_raw_clone(&pidfd);
	if (pid == 0)
		recorder(sh, root, slurm_conf);
	err = errno;
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (pid < 0) {
		munmap(sh, sizeof(*sh));
		errno = err;
		return -1;
	}
	if (!wait_end(pidfd, (pid_t)pid, start + timeout - reserve)) {
		rc = stalled(nf, sh);
		syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
		if (!wait_end(pidfd, (pid_t)pid, start + timeout))
			nf->left_behind = (pid_t)pid;
		err = ETIMEDOUT;
	} else if (!__atomic_load_n(&sh->done, __ATOMIC_ACQUIRE)) {
		err = ECHILD; /* killed before it finished */
	} else if (sh->err) {
		err = sh->err;
	} else if ((nf->buf = malloc(sh->len ? sh->len : 1))) {
		memcpy(nf->buf, sh->buf, sh->len);
		nf->len = sh->len;
		nf->no_gpu = sh->no_gpu;
		rc = sh->records;
	} else {
		err = ENOMEM;
	}
	close(pidfd);
	munmap(sh, sizeof(*sh));
	errno = err;
	return rc;
}

const char *so_node_files_stalled(const struct so_node_files *nf)
{
	return nf->buf && nf->len && nf->buf[0] == SO_NODE_STALLED ? nf->buf + 1
								   : NULL;
}

void so_node_files_free(struct so_node_files *nf)
{
	free(nf->buf);
	memset(nf, 0, sizeof(*nf));
}
