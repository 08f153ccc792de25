/*
 * fusehang - a file whose reads never return, as a wedged GPU driver's
 * information file or a file on a hung NFS server: a FUSE file system
 * whose root is one regular file, mounted over MOUNTPOINT (a file), that
 * answers open and stat but never a read. A reader then waits in the
 * kernel without end, and SIGKILL does not free it (FUSE waits out a
 * request already sent to its server); it is freed when this program
 * ends, which aborts the connection.
 *
 *   fusehang [--mntns PID] MOUNTPOINT
 *
 * --mntns mounts in the mount namespace of process PID (a cluster node's
 * container) while the server runs here. Prints "ready" once mounted and
 * serves until SIGTERM or SIGINT, then unmounts. Test tool, not
 * installed.
 */
#define _GNU_SOURCE
#define FUSE_USE_VERSION 34
#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

static void file_attr(struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = FUSE_ROOT_ID;
	st->st_mode = S_IFREG | 0444;
	st->st_nlink = 1;
	st->st_size = 4096;
}

static void hang_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct stat st;

	(void)fi;
	if (ino != FUSE_ROOT_ID) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	file_attr(&st);
	fuse_reply_attr(req, &st, 0);
}

static void hang_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	(void)parent;
	(void)name;
	fuse_reply_err(req, ENOENT);
}

static void hang_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	/* Every read comes here, none from the page cache. */
	fi->direct_io = 1;
	fuse_reply_open(req, fi);
}

/* Never answered: the reader waits until the connection ends. */
static void hang_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		      struct fuse_file_info *fi)
{
	(void)req;
	(void)ino;
	(void)size;
	(void)off;
	(void)fi;
}

static const struct fuse_lowlevel_ops ops = {
	.lookup = hang_lookup,
	.getattr = hang_getattr,
	.open = hang_open,
	.read = hang_read,
};

int main(int argc, char **argv)
{
	char *fargv[] = { argv[0], "-o", "allow_other", NULL };
	struct fuse_args args = FUSE_ARGS_INIT(3, fargv);
	struct fuse_session *se;
	const char *mnt;
	int rc;

	if (argc == 4 && !strcmp(argv[1], "--mntns")) {
		char path[64], opts[128], dev[32];
		struct stat st;
		int ns, fd;

		/* /dev/fuse of this namespace: the node's has none. */
		if ((fd = open("/dev/fuse", O_RDWR | O_CLOEXEC)) < 0) {
			perror("/dev/fuse");
			return 1;
		}
		snprintf(path, sizeof(path), "/proc/%s/ns/mnt", argv[2]);
		if ((ns = open(path, O_RDONLY | O_CLOEXEC)) < 0 || setns(ns, CLONE_NEWNS) != 0) {
			perror(path);
			return 1;
		}
		close(ns);
		mnt = argv[3];
		if (stat(mnt, &st) != 0) {
			perror(mnt);
			return 1;
		}
		snprintf(opts, sizeof(opts), "fd=%d,rootmode=%o,user_id=0,group_id=0,allow_other",
			 fd, st.st_mode & S_IFMT);
		if (mount("fusehang", mnt, "fuse.fusehang", MS_NOSUID | MS_NODEV, opts) != 0) {
			perror("mount");
			return 1;
		}
		/* libfuse serves a file system mounted by its caller. */
		snprintf(dev, sizeof(dev), "/dev/fd/%d", fd);
		se = fuse_session_new(&args, &ops, sizeof(ops), NULL);
		if (!se || fuse_set_signal_handlers(se) != 0 || fuse_session_mount(se, dev) != 0) {
			fprintf(stderr, "fusehang: cannot serve %s\n", mnt);
			umount2(mnt, MNT_DETACH);
			return 1;
		}
	} else if (argc == 2) {
		mnt = argv[1];
		se = fuse_session_new(&args, &ops, sizeof(ops), NULL);
		if (!se || fuse_set_signal_handlers(se) != 0 || fuse_session_mount(se, mnt) != 0) {
			fprintf(stderr, "fusehang: cannot mount on %s\n", mnt);
			return 1;
		}
	} else {
		fprintf(stderr, "usage: fusehang [--mntns PID] MOUNTPOINT\n");
		return 2;
	}
	printf("ready\n");
	fflush(stdout);
	rc = fuse_session_loop(se);
	fuse_session_unmount(se);
	if (argc == 4)
		umount2(mnt, MNT_DETACH); /* mounted here, not by libfuse */
	fuse_remove_signal_handlers(se);
	fuse_session_destroy(se);
	return rc < 0 ? 1 : 0;
}
