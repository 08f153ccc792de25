/*
 * helper.c - the task child's side of the helper process (see helper.h):
 * fork it, send it the environment, read its answer within the timeout,
 * reap it.
 *
 * Nothing here changes the task process beyond the call: no threads, no
 * signal dispositions or mask, no pending signal, no limits. The socket is
 * used with MSG_NOSIGNAL, so a helper that died cannot raise SIGPIPE in the
 * task, and the buffers are mappings of their own, unmapped before
 * returning.
 */
#define _GNU_SOURCE
/* First: it refuses an architecture before any system header can. */
#include "rawclone.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "fullio.h"
#include "fds.h"
#include "helper.h"
#include "helper_main.h"
#include "membound.h"
#include "pidfd.h"
#include "wire.h"

/*
 * The helper is started with a raw clone (clone_helper below) that leaves
 * the child's C library as glibc's own fork() does for a single-threaded
 * parent. That relies on glibc's internals: the thread descriptor's tid
 * field behind set_tid_address, the robust-futex list, and getpid() and
 * raise() asking the kernel rather than a cached pid (2.25 on). Another C
 * library (musl locks its thread list around fork, and a raw clone would
 * leave the child waiting on it forever) is refused at build time, rather
 * than at a task's start, as rawclone.h refuses an architecture whose
 * clone argument order it does not write out. uClibc defines __GLIBC__
 * too.
 */
#if !defined(__GLIBC__) || defined(__UCLIBC__) || \
	__GLIBC__ < 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ < 25)
#error "spank-otel needs glibc 2.25 or later: its helper is started with a raw clone that relies on glibc's fork-time internals (musl and other C libraries are not supported)"
#endif

#ifndef PR_GET_TID_ADDRESS
#define PR_GET_TID_ADDRESS 40
#endif

#define ENV_VAR "OTEL_RESOURCE_ATTRIBUTES"

/* The part of the timeout kept for killing and reaping a helper that did
 * not answer: a tenth, at most this much. Only a helper stuck in the
 * kernel (a hung file system) takes longer to go, and is left behind. */
#define KILL_RESERVE_US 100000LL

/* How long a helper that answered may take to end by itself before it is
 * killed: it exits right after sending. */
#define LINGER_US 5000LL

/* Requests are staged in a buffer of this size to send few, large
 * writes. */
#define STAGE_BYTES (64 * 1024)

/* The start of what the helper wrote to stderr: a Go runtime's fatal
 * error or a crash report. */
struct errtext {
	char buf[2048];
	size_t len;
	int truncated;
};

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static void drain_err(struct so_helper *h, struct errtext *e)
{
	char tmp[1024];

	while (h->err >= 0) {
		ssize_t n = read(h->err, tmp, sizeof(tmp));
		size_t room = sizeof(e->buf) - 1 - e->len, take;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n <= 0) {
			close_fd(&h->err); /* end of file: the helper is gone */
			return;
		}
		take = (size_t)n < room ? (size_t)n : room;
		memcpy(e->buf + e->len, tmp, take);
		so_sanitize_text(e->buf + e->len, take);
		e->len += take;
		e->buf[e->len] = '\0';
		if (take < (size_t)n)
			e->truncated = 1;
	}
}

/* Waits until fd has one of events (returns 1), the deadline (in us of
 * the monotonic clock) passes (0) or poll fails (-1), reading the helper's
 * stderr meanwhile so that the helper never blocks on it. */
static int wait_for(struct so_helper *h, int fd, short events,
		    long long deadline, struct errtext *e)
{
	for (;;) {
		struct pollfd p[2] = { { fd, events, 0 }, { h->err, POLLIN, 0 } };
		long long left = (deadline - so_monotonic_us() + 999) / 1000;
		int n;

		if (deadline <= so_monotonic_us())
			return 0;
		n = poll(p, h->err >= 0 ? 2 : 1, left > INT_MAX ? INT_MAX : (int)left);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (h->err >= 0 && p[1].revents)
			drain_err(h, e);
		if (p[0].revents)
			return 1;
	}
}

/* What so_io_full waits with on the task's side: the socket or the
 * deadline, whichever comes first, reading the helper's stderr meanwhile. */
struct io_wait {
	struct so_helper *h;
	long long deadline;
	struct errtext *e;
};

static int io_wait(void *ctx, int fd, short events)
{
	struct io_wait *w = ctx;

	return wait_for(w->h, fd, events, w->deadline, w->e);
}

/* Sends all of buf. Returns 0, -1 when the helper is gone (or answered
 * early and closed), -2 at the deadline. */
static int send_full(struct so_helper *h, const void *buf, size_t len,
		     long long deadline, struct errtext *e)
{
	struct io_wait w = { h, deadline, e };

	return so_io_full(h->sock, SO_IO_SEND, (void *)buf, len, io_wait, &w);
}

/* Receives exactly len bytes: 0, -1 at end of file or on an error, -2 at
 * the deadline. */
static int recv_full(struct so_helper *h, void *buf, size_t len,
		     long long deadline, struct errtext *e)
{
	struct io_wait w = { h, deadline, e };

	return so_io_full(h->sock, SO_IO_RECV, buf, len, io_wait, &w);
}

/* Sends the request: a header, then every entry with its NUL, then (to
 * the step's helper, with_parts) the keys never written and the step's
 * node files. Returns as send_full, or -3 when the environment is too
 * large to be a real one. */
static int send_request(struct so_helper *h, const struct so_task_request *req,
			int with_parts, uint32_t helper_ms, long long deadline,
			struct errtext *e)
{
	struct so_wire_request rq;
	size_t count = 0, bytes = 0, used = 0, exclude_len = 0, node_len = 0;
	char **envp = req->envp, **p, *stage;
	int rc = 0;

	for (p = envp; p && *p; p++) {
		count++;
		bytes += strlen(*p) + 1;
	}
	if (bytes > SO_WIRE_MAX_ENV)
		return -3;
	if (with_parts) {
		exclude_len = req->exclude ? strlen(req->exclude) : 0;
		node_len = req->node_files ? (size_t)req->node_files_len : 0;
		if (exclude_len > SO_WIRE_MAX_EXCLUDE)
			exclude_len = 0; /* no admin writes 64 KiB of keys */
		if (node_len > (size_t)SO_NODE_FILES_MAX)
			node_len = 0;
	}
	memset(&rq, 0, sizeof(rq));
	rq.magic = SO_WIRE_REQUEST_MAGIC;
	rq.env_count = (uint32_t)count;
	rq.env_bytes = bytes;
	rq.deadline_ms = helper_ms;
	rq.exclude_bytes = (uint32_t)exclude_len;
	rq.task = *req;
	rq.task.envp = NULL;
	rq.task.exclude = NULL;
	rq.task.node_files = NULL;
	rq.task.node_files_len = node_len;

	stage = mmap(NULL, STAGE_BYTES, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (stage == MAP_FAILED) {
		/* Unbuffered: one write per entry. */
		rc = send_full(h, &rq, sizeof(rq), deadline, e);
		for (p = envp; rc == 0 && p && *p; p++)
			rc = send_full(h, *p, strlen(*p) + 1, deadline, e);
	} else {
		memcpy(stage, &rq, sizeof(rq));
		used = sizeof(rq);
		for (p = envp; rc == 0 && p && *p; p++) {
			size_t len = strlen(*p) + 1;

			if (used + len > STAGE_BYTES) {
				rc = send_full(h, stage, used, deadline, e);
				used = 0;
			}
			if (rc != 0)
				break;
			if (len > STAGE_BYTES) {
				rc = send_full(h, *p, len, deadline, e);
				continue;
			}
			memcpy(stage + used, *p, len);
			used += len;
		}
		if (rc == 0 && used > 0)
			rc = send_full(h, stage, used, deadline, e);
		munmap(stage, STAGE_BYTES);
	}
	if (rc == 0 && exclude_len)
		rc = send_full(h, req->exclude, exclude_len, deadline, e);
	if (rc == 0 && node_len)
		rc = send_full(h, req->node_files, node_len, deadline, e);
	return rc;
}

/* Where an answer broke the protocol. */
struct fault {
	size_t at;
	unsigned char byte;
};

/* The first control character of a value, which the canonical format
 * never has (it percent-encodes everything but A-Z a-z 0-9 - . _ ~): a
 * NUL would cut the value short, a newline would reach the environment and
 * split the log line. Returns 1 and where, or 0. */
static int control_char(const char *v, size_t len, struct fault *f)
{
	size_t i;

	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)v[i];

		if (c < 0x20 || c == 0x7f) {
			f->at = i;
			f->byte = c;
			return 1;
		}
	}
	return 0;
}

/* Reads the answer into one mapping. */
static enum so_status read_answer(struct so_helper *h, struct so_result *res,
				  long long deadline, struct errtext *e,
				  struct fault *f)
{
	struct so_wire_answer a;
	char *map;
	size_t len;
	int r;

	r = recv_full(h, &a, sizeof(a), deadline, e);
	if (r != 0)
		return r == -2 ? SO_TIMEOUT : SO_HELPER_DIED;
	if (a.magic != SO_WIRE_ANSWER_MAGIC || a.value_len > SO_WIRE_MAX_VALUE ||
	    a.log_len > SO_WIRE_MAX_LOG || a.status < SO_CALLED ||
	    a.status > SO_HELPER_DIED || (!a.has_value && a.value_len))
		return SO_HELPER_DIED;
	len = (size_t)a.value_len + 1 + a.log_len + 1;
	map = mmap(NULL, len, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED)
		return SO_HELPER_FAILED;
	res->map = map;
	res->map_len = len;
	r = recv_full(h, map, a.value_len, deadline, e);
	if (r == 0)
		r = recv_full(h, map + a.value_len + 1, a.log_len, deadline, e);
	if (r != 0)
		return r == -2 ? SO_TIMEOUT : SO_HELPER_DIED;
	map[a.value_len] = '\0';
	map[a.value_len + 1 + a.log_len] = '\0';
	if (control_char(map, a.value_len, f))
		return SO_BAD_ANSWER;
	so_sanitize_text(map + a.value_len + 1, a.log_len);
	res->rc = a.rc;
	res->value = a.has_value ? map : NULL;
	res->value_len = a.value_len;
	res->log = a.log_len ? map + a.value_len + 1 : NULL;
	return (enum so_status)a.status;
}

/* How the helper ended. */
struct end {
	int known; /* 0: reaped elsewhere, or not gone */
	int code;  /* CLD_EXITED, CLD_KILLED, CLD_DUMPED */
	int status;
	int kill_errno; /* why SIGKILL could not be sent, or 0 */
};

/* Waits for the helper to end until the deadline. Returns 1 when it is
 * reaped, 0 when it still runs. The helper is a clone child (exit signal
 * 0): only a wait with __WALL sees it, and it is never reaped
 * automatically, so until this reaps it its pid is still its own. */
static int reap(struct so_helper *h, long long deadline, struct end *end,
		struct errtext *e)
{
	for (;;) {
		siginfo_t si;
		int r;

		memset(&si, 0, sizeof(si));
		r = waitid(P_PIDFD, (id_t)h->pidfd, &si, WEXITED | WNOHANG | __WALL);
		if (r < 0 && errno == EINVAL) /* Linux 5.3: no P_PIDFD */
			r = waitid(P_PID, (id_t)h->pid, &si,
				   WEXITED | WNOHANG | __WALL);
		if (r == 0 && si.si_pid != 0) {
			end->known = 1;
			end->code = si.si_code;
			end->status = si.si_status;
			return 1;
		}
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return 1; /* ECHILD: reaped by a wait with __WALL */
		if (so_monotonic_us() >= deadline)
			return 0;
		/* The pidfd becomes readable when the helper ends. */
		wait_for(h, h->pidfd, POLLIN, deadline, e);
	}
}

/* Through the pidfd only: never a pid that may have been recycled. */
static void kill_helper(struct so_helper *h, struct end *end)
{
	if (syscall(SYS_pidfd_send_signal, h->pidfd, SIGKILL, NULL, 0) != 0 &&
	    errno != ESRCH)
		end->kill_errno = errno;
}

/* Puts a SIGCHLD taken by forget_stop_notices back where it most likely
 * was: raise() and tgkill() send to the thread, everything else (the
 * kernel's notices, kill(), sigqueue()) to the process. The siginfo is
 * the original's; a process may queue any si_code to itself. */
static void requeue_sigchld(siginfo_t *si)
{
	pid_t self = getpid();

	if (si->si_code == SI_TKILL)
		syscall(SYS_rt_tgsigqueueinfo, self, (pid_t)syscall(SYS_gettid),
			SIGCHLD, si);
	else
		syscall(SYS_rt_sigqueueinfo, self, SIGCHLD, si);
}

/*
 * Exit signal 0 covers only the helper's end: the kernel tells a parent
 * of every stop and continue of a child with SIGCHLD whatever its exit
 * signal (unless the parent ignores SIGCHLD or set SA_NOCLDSTOP), and a
 * task that blocks SIGCHLD would carry one sent by a `kill -STOP` of the
 * helper through execve. Once the helper is reaped (or left behind) this
 * takes back a pending SIGCHLD whose siginfo names it. A handler that the
 * task left unblocked has already run; nothing can undo that.
 *
 * A standard signal does not queue: one pending SIGCHLD may also stand for
 * a later change of another child, which the kernel merged into it. So
 * when any child of the task still has a change to report (waitid with
 * WNOWAIT, which leaves it to be reported), SIGCHLD stays pending with
 * that child's details. Private pending signals are taken before the
 * process's, so at most two are taken and each is put back where it was.
 */
static void forget_stop_notices(pid_t helper)
{
	struct timespec zero = { 0, 0 };
	sigset_t pending, chld;
	siginfo_t si[2];
	int n = 0, i, dropped = 0;

	if (helper <= 0 || sigpending(&pending) != 0 ||
	    !sigismember(&pending, SIGCHLD))
		return;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	while (n < 2 && sigtimedwait(&chld, &si[n], &zero) == SIGCHLD)
		n++;
	for (i = 0; i < n; i++) {
		int notice = si[i].si_pid == helper &&
			     (si[i].si_code == CLD_STOPPED ||
			      si[i].si_code == CLD_CONTINUED ||
			      si[i].si_code == CLD_TRAPPED);

		if (notice)
			dropped = 1;
		else
			requeue_sigchld(&si[i]);
	}
	if (dropped && n == 1) {
		siginfo_t other;

		memset(&other, 0, sizeof(other));
		if (waitid(P_ALL, 0, &other, WEXITED | WSTOPPED | WCONTINUED |
						     WNOHANG | WNOWAIT) == 0 &&
		    other.si_pid != 0) {
			other.si_signo = SIGCHLD;
			requeue_sigchld(&other);
		}
	}
}

/* Ends the helper: lets it end by itself until natural_until, then kills
 * it and reaps it until deadline. Returns 0 when it is gone and reaped,
 * -1 when it was left behind. */
static int finish(struct so_helper *h, long long natural_until,
		  long long deadline, struct end *end, struct errtext *e)
{
	int gone;

	/* A helper still waiting for a request or still sending sees the
	 * end of the socket and exits. */
	close_fd(&h->sock);
	gone = reap(h, natural_until < deadline ? natural_until : deadline,
		    end, e);
	if (!gone) {
		kill_helper(h, end);
		gone = reap(h, deadline, end, e);
	}
	drain_err(h, e);
	close_fd(&h->err);
	close_fd(&h->pidfd);
	forget_stop_notices(h->pid);
	h->pid = -1;
	return gone ? 0 : -1;
}

/* How the helper ended, for a log line. */
static void describe_end(const struct end *end, char *buf, size_t len)
{
	if (!end->known)
		snprintf(buf, len, "ended");
	else if (end->code == CLD_KILLED || end->code == CLD_DUMPED)
		snprintf(buf, len, "was killed by signal %d (%s)", end->status,
			 strsignal(end->status));
	else if (end->code == CLD_EXITED)
		snprintf(buf, len, "exited with status %d", end->status);
	else
		snprintf(buf, len, "ended (code %d, status %d)", end->code,
			 end->status);
}

/* The first line of the helper's stderr that says something: Go's fatal
 * errors start with "fatal error:" or "panic:", a crash with "SIG...". */
static void first_line(const struct errtext *e, char *buf, size_t len)
{
	const char *p = e->buf;

	buf[0] = '\0';
	while (*p) {
		const char *end = strchr(p, '\n');
		size_t n = end ? (size_t)(end - p) : strlen(p);

		if (n > 0) {
			snprintf(buf, len, "%.*s", (int)n, p);
			return;
		}
		p = end ? end + 1 : p + n;
	}
}

void so_emit_stderr(const char *text, int truncated, const struct so_logger *lg)
{
	const char *p = text;

	while (*p) {
		const char *end = strchr(p, '\n');
		int n = end ? (int)(end - p) : (int)strlen(p);

		if (n > 0)
			so_logf(lg, SO_LOG_DEBUG, "helper stderr: %.*s", n, p);
		p = end ? end + 1 : p + n;
	}
	if (truncated)
		so_logf(lg, SO_LOG_DEBUG, "helper stderr: (more not shown)");
}

/* Checks that the descriptors are still the helper's; one that another
 * plugin closed or replaced is forgotten, never used or closed (it is
 * not the plugin's any more). Returns 1 when all are intact; otherwise
 * logs once, ends the helper through its pidfd when that one is intact
 * (else the helper ends with its task, which it watches) and returns 0. */
static int fds_intact(struct so_helper *h, long long deadline,
		      const struct so_logger *lg)
{
	int *fds[3] = { &h->sock, &h->err, &h->pidfd };
	const char *what[3] = { "socket", "stderr pipe", "pidfd" };
	struct errtext e = { .len = 0 };
	struct end end = { 0, 0, 0, 0 };
	char lost[96] = "";
	size_t n = 0;
	int i;

	for (i = 0; i < 3; i++) {
		unsigned long long now[2];

		so_fd_id(*fds[i], now);
		/* Before Linux 6.9 every pidfd is one inode: there this
		 * tells a pidfd from another file only. /proc is no help:
		 * a container plugin may have given the task its own. */
		if (now[0] == h->ids[i][0] && now[1] == h->ids[i][1])
			continue;
		n += (size_t)snprintf(lost + n, sizeof(lost) - n, "%s%s %d",
				      n ? ", " : "", what[i], *fds[i]);
		if (n >= sizeof(lost))
			n = sizeof(lost) - 1;
		*fds[i] = -1;
	}
	if (!lost[0])
		return 1;
	so_logf(lg, SO_LOG_ERROR, "a plugin that ran between "
		"task_init_privileged and task_init closed or replaced the "
		"helper's %s; %s left unchanged", lost, ENV_VAR);
	if (h->pidfd >= 0) {
		finish(h, 0, deadline, &end, &e);
	} else {
		close_fd(&h->sock);
		close_fd(&h->err);
		h->pid = -1;
	}
	return 0;
}

/* The number of threads of the calling process, from /proc/self/stat
 * (field 20, after the command name in parentheses); -1 when unknown. */
static int thread_count(void)
{
	char buf[1024], *p;
	int field;

	if (so_read_small("/proc/self/stat", buf, sizeof(buf)) <= 0 ||
	    !(p = strrchr(buf, ')')))
		return -1;
	for (field = 2; field < 20 && p; field++)
		p = strchr(p + 1, ' ');
	return p ? atoi(p + 1) : -1;
}

/*
 * Forks like fork(2), but as a clone child with exit signal 0 and a pidfd
 * returned by the same system call, so there is no moment at which the
 * task holds the helper's pid without a pidfd to it.
 *
 * glibc's fork() cannot do that, so this is a raw clone, made to leave the
 * child's C library as glibc's fork leaves it for a single-threaded parent:
 * the kernel writes the child's thread id into glibc's thread descriptor
 * (the address glibc registered with set_tid_address, read back with
 * PR_GET_TID_ADDRESS), as fork itself asks it to, and the child registers
 * the parent's robust-futex list head again. What fork does beyond that
 * (running atfork handlers, resetting the locks of other threads) has
 * nothing to do in a single-threaded parent, and so_helper_start refuses
 * a parent with more threads: one of them could hold malloc's lock.
 */
static pid_t clone_helper(int *pidfd)
{
	int *tid = NULL;
	void *head = NULL;
	size_t head_len = 0;
	long pid;

	if (prctl(PR_GET_TID_ADDRESS, &tid, 0, 0, 0) != 0)
		return -1;
	if (!tid) {
		errno = ENOTSUP;
		return -1;
	}
	syscall(SYS_get_robust_list, 0, &head, &head_len);
	pid = so_raw_clone(CLONE_CHILD_SETTID | CLONE_CHILD_CLEARTID, pidfd, tid);
	if (pid == 0 && head)
		syscall(SYS_set_robust_list, head, head_len);
	return (pid_t)pid;
}

/*
 * The helper is born with the job's user as its real uid: the task child
 * (root here) takes that real uid for the instant of the clone, effective
 * and saved uid unchanged, and takes its own back right after. kill()
 * lets a sender signal a target whose real or saved uid is the sender's,
 * and the kernel sends the parent-death signal only where the dying
 * parent could: so from the helper's first instruction the task, which
 * Slurm makes that user right after this callback, can kill it, and its
 * end kills the helper. A change of the real uid alone leaves the task's
 * parent-death signal, dumpability and capabilities as they were. Returns
 * 1 with the task's real uid in *ruid when it lent it, 0 when there was
 * nothing to do or it could not (a task child that is not root: the
 * helper's own credential change then says why, if it matters).
 */
static int lend_uid(const struct so_helper_config *cfg, uid_t *ruid)
{
	uid_t euid, suid;

	if (!cfg->drop_creds || getresuid(ruid, &euid, &suid) != 0 ||
	    *ruid == cfg->uid)
		return 0;
	return syscall(SYS_setresuid, cfg->uid, (uid_t)-1, (uid_t)-1) == 0;
}

int so_helper_start(struct so_helper *h, const struct so_helper_config *cfg,
		    const struct so_logger *lg)
{
	sigset_t all, old;
	int sv[2], ep[2], pidfd = -1, threads, probe, lent;
	pid_t task = getpid(), pid;
	uid_t ruid;

	h->pid = -1;
	h->sock = h->err = h->pidfd = -1;
	/* Kernels before 5.3 have neither pidfd_open nor a pidfd that polls;
	 * without one the task could only signal a bare pid. */
	probe = (int)syscall(SYS_pidfd_open, task, 0);
	if (probe < 0) {
		so_logf(lg, SO_LOG_ERROR, "not starting the helper process: "
			"this kernel has no pidfd_open (Linux 5.3 or later "
			"needed): %s; %s left unchanged", strerror(errno),
			ENV_VAR);
		return -1;
	}
	close(probe);
	threads = thread_count();
	if (threads != 1) {
		so_logf(lg, SO_LOG_ERROR, "not starting the helper process: the "
			"task process runs %d threads (started by a plugin "
			"before spank-otel?), and a process forked from it "
			"could hang on a lock another thread holds; %s left "
			"unchanged", threads, ENV_VAR);
		return -1;
	}
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
		so_logf(lg, SO_LOG_ERROR, "cannot start the helper process: "
			"socketpair: %s; %s left unchanged", strerror(errno),
			ENV_VAR);
		return -1;
	}
	if (pipe2(ep, O_CLOEXEC) != 0) {
		so_logf(lg, SO_LOG_ERROR, "cannot start the helper process: "
			"pipe: %s; %s left unchanged", strerror(errno), ENV_VAR);
		close(sv[0]);
		close(sv[1]);
		return -1;
	}
	/* No handler of the task's may run in the child before it resets
	 * them; the task's mask is back as it was right after. */
	sigfillset(&all);
	sigprocmask(SIG_SETMASK, &all, &old);
	lent = lend_uid(cfg, &ruid);
	pid = clone_helper(&pidfd);
	if (pid == 0) {
		close(sv[0]);
		close(ep[0]);
		so_helper_main(cfg, task, sv[1], ep[1]);
	}
	if (lent)
		syscall(SYS_setresuid, ruid, (uid_t)-1, (uid_t)-1);
	sigprocmask(SIG_SETMASK, &old, NULL);
	close(sv[1]);
	close(ep[1]);
	if (pid < 0 || pidfd < 0) {
		if (pid > 0) {
			/* No pidfd after all: the helper sees the socket
			 * close and exits; its pid is the task's until this
			 * reaps it. */
			close(sv[0]);
			close(ep[0]);
			while (waitpid(pid, NULL, __WALL) < 0 && errno == EINTR)
				;
			errno = ENOSYS;
		} else {
			close(sv[0]);
			close(ep[0]);
		}
		so_logf(lg, SO_LOG_ERROR, "cannot start the helper process: "
			"clone: %s; %s left unchanged", strerror(errno), ENV_VAR);
		return -1;
	}
	/* Only this end: the helper's stderr must stay blocking. */
	fcntl(ep[0], F_SETFL, O_NONBLOCK);
	h->pid = pid;
	h->sock = sv[0];
	h->err = ep[0];
	h->pidfd = pidfd;
	so_fd_id(h->sock, h->ids[0]);
	so_fd_id(h->err, h->ids[1]);
	so_fd_id(h->pidfd, h->ids[2]);
	return 0;
}

enum so_status so_helper_call(struct so_helper *h,
			      const struct so_task_request *req, int timeout_ms,
			      struct so_result *res, const struct so_logger *lg)
{
	struct errtext e = { .len = 0 };
	struct end end = { 0, 0, 0, 0 };
	struct fault f = { 0, 0 };
	long long start = so_monotonic_us(), timeout = (long long)timeout_ms * 1000;
	long long deadline = start + timeout, reserve, answer_by, natural_until;
	enum so_status st;
	char how[96], line[512];
	int sent, left_behind;

	memset(res, 0, sizeof(*res));
	res->rc = SO_RC_ERROR;
	if (h->pid < 0 || !fds_intact(h, deadline, lg))
		return SO_HELPER_FAILED;
	e.buf[0] = '\0';
	/* timeout= bounds all of it: the answer comes in the first nine
	 * tenths, the rest is for killing and reaping. */
	reserve = timeout / 10 < KILL_RESERVE_US ? timeout / 10 : KILL_RESERVE_US;
	answer_by = deadline - reserve;

	/* The helper ends itself once the task has given up on it: after the
	 * whole timeout and the reserve again, so that a helper the task can
	 * kill is killed by the task, and the log says so. */
	sent = send_request(h, req, 0, (uint32_t)((timeout + reserve) / 1000),
			    answer_by, &e);
	if (sent == -2)
		st = SO_TIMEOUT;
	else if (sent == -3)
		st = SO_HELPER_FAILED;
	else /* sent, or the helper answered early and closed */
		st = read_answer(h, res, answer_by, &e, &f);
	/* A helper that answered ends at once; one that timed out, broke the
	 * protocol or was not asked is killed now; one whose answer broke off
	 * is dying, and may end by itself within the answer's time (so that
	 * its exit status can be told). */
	if (st == SO_TIMEOUT || st == SO_BAD_ANSWER || sent == -3)
		natural_until = 0;
	else if (st == SO_HELPER_DIED)
		natural_until = answer_by;
	else
		natural_until = so_monotonic_us() + LINGER_US;
	left_behind = finish(h, natural_until, deadline, &end, &e);

	describe_end(&end, how, sizeof(how));
	first_line(&e, line, sizeof(line));
	switch (st) {
	case SO_TIMEOUT:
		so_logf(lg, SO_LOG_ERROR,
			"the helper process did not answer within %d ms "
			"(timeout=); killed it; %s left unchanged%s%s",
			timeout_ms, ENV_VAR, line[0] ? ": " : "", line);
		break;
	case SO_HELPER_DIED:
		so_logf(lg, SO_LOG_ERROR,
			"the helper process %s before it answered%s%s%s; %s left "
			"unchanged", how, line[0] ? ": " : "", line,
			so_membound_note(e.buf), ENV_VAR);
		break;
	case SO_BAD_ANSWER:
		so_logf(lg, SO_LOG_ERROR,
			"the helper process answered a value with control "
			"character 0x%02x at byte %zu (the library broke the "
			"protocol); killed it; %s left unchanged",
			f.byte, f.at, ENV_VAR);
		break;
	default:
		if (sent == -3) {
			so_logf(lg, SO_LOG_ERROR,
				"the task environment is larger than execve() "
				"accepts; %s left unchanged", ENV_VAR);
			break;
		}
		/* The helper answered and said why, if anything failed. */
		so_emit_library_log(res->log, lg);
		break;
	}
	so_emit_stderr(e.buf, e.truncated, lg);
	if (left_behind) {
		if (end.kill_errno)
			so_logf(lg, SO_LOG_ERROR,
				"the helper process could not be killed (%s) "
				"and did not end within %d ms (timeout=); "
				"left behind", strerror(end.kill_errno),
				timeout_ms);
		else
			so_logf(lg, SO_LOG_ERROR,
				"the helper process did not end within %d ms "
				"(timeout=) of SIGKILL; left behind",
				timeout_ms);
	}
	so_logf(lg, SO_LOG_DEBUG, "helper %s in %lld us (%s)",
		so_status_name(st), so_monotonic_us() - start, how);
	if (st != SO_CALLED)
		so_result_free(res);
	return st;
}

enum so_status so_step_helper_call(struct so_step_end *end,
				   const struct so_task_request *req,
				   int timeout_ms, struct so_result *res,
				   const struct so_logger *lg)
{
	struct so_helper h = { .pid = -1, .sock = end->fd, .err = -1, .pidfd = -1 };
	struct errtext e = { .len = 0 };
	struct fault f = { 0, 0 };
	long long start = so_monotonic_us();
	long long deadline = start + (long long)timeout_ms * 1000;
	unsigned long long now[2];
	enum so_status st;
	int sent;

	memset(res, 0, sizeof(*res));
	res->rc = SO_RC_ERROR;
	e.buf[0] = '\0';
	end->fd = -1;
	so_fd_id(h.sock, now);
	if (now[0] != end->id[0] || now[1] != end->id[1]) {
		so_logf(lg, SO_LOG_ERROR, "a plugin that ran between "
			"task_init_privileged and task_init closed or replaced the "
			"socket %d to the step's helper; %s left unchanged", h.sock,
			ENV_VAR);
		return SO_HELPER_FAILED;
	}
	/* The helper ends itself a tenth past this deadline: a call still
	 * running then is stuck. */
	sent = send_request(&h, req, 1, (uint32_t)timeout_ms, deadline, &e);
	if (sent == -2)
		st = SO_TIMEOUT;
	else if (sent == -3)
		st = SO_HELPER_FAILED;
	else
		st = read_answer(&h, res, deadline, &e, &f);
	close_fd(&h.sock);
	switch (st) {
	case SO_TIMEOUT:
		so_logf(lg, SO_LOG_ERROR, "the step's helper did not answer within %d "
			"ms (timeout=); %s left unchanged", timeout_ms, ENV_VAR);
		break;
	case SO_HELPER_DIED:
		so_logf(lg, SO_LOG_ERROR, "the step's helper ended before it answered "
			"(how, where known, is logged at the step's end); %s left unchanged",
			ENV_VAR);
		break;
	case SO_BAD_ANSWER:
		so_logf(lg, SO_LOG_ERROR, "the step's helper answered a value with "
			"control character 0x%02x at byte %zu (the library broke "
			"the protocol); %s left unchanged", f.byte, f.at, ENV_VAR);
		break;
	default:
		if (sent == -3) {
			so_logf(lg, SO_LOG_ERROR, "the task environment is larger than "
				"execve() accepts; %s left unchanged", ENV_VAR);
			break;
		}
		so_emit_library_log(res->log, lg);
		break;
	}
	so_logf(lg, SO_LOG_DEBUG, "step helper %s in %lld us", so_status_name(st),
		so_monotonic_us() - start);
	if (st != SO_CALLED)
		so_result_free(res);
	return st;
}

void so_helper_discard(struct so_helper *h, int timeout_ms)
{
	struct errtext e = { .len = 0 };
	struct end end = { 0, 0, 0, 0 };

	if (h->pid < 0 || !fds_intact(h, so_monotonic_us() + (long long)timeout_ms * 1000, NULL))
		return;
	finish(h, 0, so_monotonic_us() + (long long)timeout_ms * 1000, &end, &e);
}

void so_result_free(struct so_result *res)
{
	if (res->map)
		munmap(res->map, res->map_len);
	res->map = NULL;
	res->map_len = 0;
	res->value = NULL;
	res->log = NULL;
}

void so_emit_library_log(const char *log, const struct so_logger *lg)
{
	const char *line = log;

	while (line && *line) {
		const char *end = strchr(line, '\n');
		int len = end ? (int)(end - line) : (int)strlen(line);

		if (len >= 2 && line[1] == ' ' &&
		    (line[0] == SO_LINE_ERROR || line[0] == SO_LINE_INFO ||
		     line[0] == SO_LINE_VERBOSE || line[0] == SO_LINE_DEBUG)) {
			enum so_level lv = line[0] == SO_LINE_ERROR  ? SO_LOG_ERROR
					   : line[0] == SO_LINE_INFO ? SO_LOG_INFO
					   : line[0] == SO_LINE_VERBOSE
					       ? SO_LOG_VERBOSE
					       : SO_LOG_DEBUG;

			so_logf(lg, lv, "%.*s", len - 2, line + 2);
		} else if (len > 0) {
			so_logf(lg, SO_LOG_VERBOSE, "%.*s", len, line);
		}
		line = end ? end + 1 : NULL;
	}
}

static void sanitize(char *s, size_t len, int keep_newlines)
{
	size_t i;

	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if ((c < 0x20 && !(keep_newlines && (c == '\n' || c == '\t'))) || c == 0x7f)
			s[i] = '?';
	}
}

void so_sanitize_text(char *s, size_t len) { sanitize(s, len, 1); }

void so_sanitize_line(char *s, size_t len) { sanitize(s, len, 0); }
