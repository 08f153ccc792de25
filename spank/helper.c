/*
 * helper.c - the task child's side of the helper process (see helper.h):
 * fork it, send it the environment, read its answer within the timeout,
 * reap it.
 *
 * Nothing here changes the task process beyond the call: no threads, no
 * signal dispositions or mask, no limits. The socket is used with
 * MSG_NOSIGNAL, so a helper that died cannot raise SIGPIPE in the task, and
 * the buffers are mappings of their own, unmapped before returning.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "headroom.h"
#include "helper.h"
#include "helper_main.h"
#include "wire.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif

#define ENV_VAR "OTEL_RESOURCE_ATTRIBUTES"

/* How long a killed helper may take to be gone before it is left behind
 * (only a helper stuck in the kernel, e.g. on a hung file system, takes
 * that long). */
#define KILL_GRACE_MS 1000

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
		e->len += take;
		e->buf[e->len] = '\0';
		if (take < (size_t)n)
			e->truncated = 1;
	}
}

/* Waits until fd has one of events (returns 1), the deadline passes
 * (0) or poll fails (-1), reading the helper's stderr meanwhile so that
 * the helper never blocks on it. */
static int wait_for(struct so_helper *h, int fd, short events,
		    long long deadline, struct errtext *e)
{
	for (;;) {
		struct pollfd p[2] = { { fd, events, 0 }, { h->err, POLLIN, 0 } };
		long long left = deadline - so_monotonic_ms();
		int n;

		if (left <= 0)
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

/* Sends all of buf. Returns 0, -1 when the helper is gone (or answered
 * early and closed), -2 at the deadline. */
static int send_full(struct so_helper *h, const void *buf, size_t len,
		     long long deadline, struct errtext *e)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = send(h->sock, p, len, MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			int w = wait_for(h, h->sock, POLLOUT, deadline, e);

			if (w <= 0)
				return w == 0 ? -2 : -1;
			continue;
		}
		return -1;
	}
	return 0;
}

/* Receives exactly len bytes: 0, -1 at end of file or on an error, -2 at
 * the deadline. */
static int recv_full(struct so_helper *h, void *buf, size_t len,
		     long long deadline, struct errtext *e)
{
	char *p = buf;

	while (len > 0) {
		ssize_t n = recv(h->sock, p, len, MSG_DONTWAIT);

		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			int w = wait_for(h, h->sock, POLLIN, deadline, e);

			if (w <= 0)
				return w == 0 ? -2 : -1;
			continue;
		}
		return -1;
	}
	return 0;
}

/* Sends the request: a header, then every entry with its NUL. Returns as
 * send_full, or -3 when the environment is too large to be a real one. */
static int send_request(struct so_helper *h, char **envp, long max_env,
			long long deadline, struct errtext *e)
{
	struct so_wire_request rq;
	size_t count = 0, bytes = 0, used = 0;
	char **p, *stage;
	int rc = 0;

	for (p = envp; p && *p; p++) {
		count++;
		bytes += strlen(*p) + 1;
	}
	if (bytes > SO_WIRE_MAX_ENV)
		return -3;
	memset(&rq, 0, sizeof(rq));
	rq.magic = SO_WIRE_REQUEST_MAGIC;
	rq.env_count = (uint32_t)count;
	rq.env_bytes = bytes;
	rq.max_env_bytes = max_env;

	stage = mmap(NULL, STAGE_BYTES, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (stage == MAP_FAILED) {
		/* Unbuffered: one write per entry. */
		rc = send_full(h, &rq, sizeof(rq), deadline, e);
		for (p = envp; rc == 0 && p && *p; p++)
			rc = send_full(h, *p, strlen(*p) + 1, deadline, e);
		return rc;
	}
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
	return rc;
}

/* Reads the answer into one mapping. */
static enum so_status read_answer(struct so_helper *h, struct so_result *res,
				  long long deadline, struct errtext *e)
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
	    a.status > SO_HELPER_DIED)
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
	res->rc = a.rc;
	res->value = a.has_value ? map : NULL;
	res->value_len = a.value_len;
	res->log = a.log_len ? map + a.value_len + 1 : NULL;
	return (enum so_status)a.status;
}

/* Waits for the helper to end until the deadline. Returns 1 when it is
 * reaped (*wstatus is -1 when someone else reaped it), 0 when it still
 * runs. */
static int reap(struct so_helper *h, long long deadline, int *wstatus,
		struct errtext *e)
{
	for (;;) {
		pid_t r = waitpid(h->pid, wstatus, WNOHANG);

		if (r == h->pid)
			return 1;
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			/* ECHILD: reaped elsewhere (SIGCHLD ignored). */
			*wstatus = -1;
			return 1;
		}
		if (so_monotonic_ms() >= deadline)
			return 0;
		if (h->pidfd >= 0) {
			wait_for(h, h->pidfd, POLLIN, deadline, e);
		} else {
			struct timespec ts = { 0, 1000000 };

			drain_err(h, e);
			nanosleep(&ts, NULL);
		}
	}
}

static void kill_helper(struct so_helper *h)
{
	/* Through the pidfd where there is one: never a recycled pid. */
	if (h->pidfd >= 0 &&
	    syscall(SYS_pidfd_send_signal, h->pidfd, SIGKILL, NULL, 0) == 0)
		return;
	kill(h->pid, SIGKILL);
}

/* Ends the helper: waits until the deadline, then kills it. Returns 0
 * when it is gone and reaped, -1 when it was left behind. */
static int finish(struct so_helper *h, long long deadline, int *wstatus,
		  struct errtext *e)
{
	int gone;

	/* A helper still waiting for a request or still sending sees the
	 * end of the socket and exits. */
	close_fd(&h->sock);
	gone = reap(h, deadline, wstatus, e);

	if (!gone) {
		kill_helper(h);
		gone = reap(h, so_monotonic_ms() + KILL_GRACE_MS, wstatus, e);
	}
	drain_err(h, e);
	close_fd(&h->err);
	close_fd(&h->pidfd);
	h->pid = -1;
	return gone ? 0 : -1;
}

/* How the helper ended, for a log line. */
static void describe_end(int wstatus, char *buf, size_t len)
{
	if (wstatus == -1)
		snprintf(buf, len, "ended");
	else if (WIFSIGNALED(wstatus))
		snprintf(buf, len, "was killed by signal %d (%s)",
			 WTERMSIG(wstatus), strsignal(WTERMSIG(wstatus)));
	else if (WIFEXITED(wstatus))
		snprintf(buf, len, "exited with status %d", WEXITSTATUS(wstatus));
	else
		snprintf(buf, len, "ended (wait status %#x)", wstatus);
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

static void emit_stderr(const struct errtext *e, const struct so_logger *lg)
{
	const char *p = e->buf;

	while (*p) {
		const char *end = strchr(p, '\n');
		int n = end ? (int)(end - p) : (int)strlen(p);

		if (n > 0)
			so_logf(lg, SO_LOG_DEBUG, "helper stderr: %.*s", n, p);
		p = end ? end + 1 : p + n;
	}
	if (e->truncated)
		so_logf(lg, SO_LOG_DEBUG, "helper stderr: (more not shown)");
}

int so_helper_start(struct so_helper *h, const struct so_helper_config *cfg,
		    const struct so_logger *lg)
{
	int sv[2], ep[2];
	pid_t task = getpid(), pid;

	h->pid = -1;
	h->sock = h->err = h->pidfd = -1;
	if (!so_headroom_ok("/sys/fs/cgroup", "/proc/self/cgroup", lg))
		return -1;
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
	pid = fork();
	if (pid < 0) {
		so_logf(lg, SO_LOG_ERROR, "cannot start the helper process: "
			"fork: %s; %s left unchanged", strerror(errno), ENV_VAR);
		close(sv[0]);
		close(sv[1]);
		close(ep[0]);
		close(ep[1]);
		return -1;
	}
	if (pid == 0) {
		close(sv[0]);
		close(ep[0]);
		so_helper_main(cfg, task, sv[1], ep[1]);
	}
	close(sv[1]);
	close(ep[1]);
	/* Only this end: the helper's stderr must stay blocking. */
	fcntl(ep[0], F_SETFL, O_NONBLOCK);
	h->pid = pid;
	h->sock = sv[0];
	h->err = ep[0];
	h->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	return 0;
}

enum so_status so_helper_call(struct so_helper *h, char **envp,
			      long max_env_bytes, int timeout_ms,
			      struct so_result *res, const struct so_logger *lg)
{
	struct errtext e = { .len = 0 };
	long long start = so_monotonic_ms(), deadline = start + timeout_ms;
	enum so_status st;
	char end[96], line[512];
	int wstatus = 0, sent, left_behind;

	memset(res, 0, sizeof(*res));
	res->rc = SO_RC_ERROR;
	if (h->pid < 0)
		return SO_HELPER_FAILED;
	e.buf[0] = '\0';

	sent = send_request(h, envp, max_env_bytes, deadline, &e);
	if (sent == -2)
		st = SO_TIMEOUT;
	else if (sent == -3)
		st = SO_HELPER_FAILED;
	else /* sent, or the helper answered early and closed */
		st = read_answer(h, res, deadline, &e);
	/* A helper that answered, or sees the socket close, exits at once;
	 * one that timed out or broke its answer is killed. */
	left_behind = finish(h, st == SO_TIMEOUT || st == SO_HELPER_DIED
					? 0 : deadline,
			     &wstatus, &e);

	describe_end(wstatus, end, sizeof(end));
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
			"the helper process %s before it answered%s%s; %s left "
			"unchanged", end, line[0] ? ": " : "", line, ENV_VAR);
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
	emit_stderr(&e, lg);
	if (left_behind)
		so_logf(lg, SO_LOG_ERROR,
			"the helper process did not end within %d ms of "
			"SIGKILL; left behind", KILL_GRACE_MS);
	so_logf(lg, SO_LOG_DEBUG, "helper %s in %lld ms (%s)",
		so_status_name(st), so_monotonic_ms() - start, end);
	if (st != SO_CALLED)
		so_result_free(res);
	return st;
}

void so_helper_discard(struct so_helper *h)
{
	struct errtext e = { .len = 0 };
	int wstatus;

	if (h->pid < 0)
		return;
	finish(h, 0, &wstatus, &e);
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
		    (line[0] == 'E' || line[0] == 'V' || line[0] == 'D' ||
		     line[0] == 'I')) {
			enum so_level lv = line[0] == 'E'   ? SO_LOG_ERROR
					   : line[0] == 'I' ? SO_LOG_INFO
					   : line[0] == 'V' ? SO_LOG_VERBOSE
							    : SO_LOG_DEBUG;

			so_logf(lg, lv, "%.*s", len - 2, line + 2);
		} else if (len > 0) {
			so_logf(lg, SO_LOG_VERBOSE, "%.*s", len, line);
		}
		line = end ? end + 1 : NULL;
	}
}
