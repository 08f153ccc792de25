/*
 * procstate.c - snapshots of a process's state (see procstate.h).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "procstate.h"

/* The C library sets SA_RESTORER on every handler it installs; it is not
 * part of what a program sees as the disposition. */
#ifndef SA_RESTORER
#define SA_RESTORER 0x04000000
#endif

#define FNV_OFFSET 1469598103934665603ULL

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;

	while (n--) {
		h ^= *b++;
		h *= 1099511628211ULL;
	}
	return h;
}

/* Reads a /proc file through buf, calling line() for each line. */
static void each_line(const char *path, char *buf, size_t len,
		      void (*line)(const char *, size_t, void *), void *ctx)
{
	size_t have = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return;
	for (;;) {
		ssize_t n = read(fd, buf + have, len - have);
		char *start = buf, *nl;

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		have += (size_t)n;
		while ((nl = memchr(start, '\n', have - (size_t)(start - buf)))) {
			line(start, (size_t)(nl - start), ctx);
			start = nl + 1;
		}
		have -= (size_t)(start - buf);
		memmove(buf, start, have);
		if (have == len) { /* a line longer than buf: take it whole */
			line(buf, have, ctx);
			have = 0;
		}
	}
	if (have)
		line(buf, have, ctx);
	close(fd);
}

struct maps_ctx {
	struct so_procstate *s;
	unsigned flags;
};

static void maps_line(const char *l, size_t n, void *p)
{
	struct maps_ctx *c = p;

	if ((c->flags & SO_PS_NO_HEAP) && n >= 6 &&
	    !memcmp(l + n - 6, "[heap]", 6))
		return;
	c->s->maps = fnv(c->s->maps, l, n);
	c->s->map_count++;
}

static void status_line(const char *l, size_t n, void *p)
{
	struct so_procstate *s = p;

	if (n > 8 && !memcmp(l, "Threads:", 8))
		s->threads = atoi(l + 8);
	if (n > 6 && !memcmp(l, "Umask:", 6))
		s->umask = (int)strtol(l + 6, NULL, 8);
}

static void oom_line(const char *l, size_t n, void *p)
{
	struct so_procstate *s = p;

	(void)n;
	s->oom_score_adj = atoi(l);
}

extern char **environ;

static void children_line(const char *l, size_t n, void *p)
{
	struct so_procstate *s = p;
	size_t i;
	int in_word = 0;

	for (i = 0; i < n; i++) {
		if (l[i] != ' ' && !in_word)
			s->children++;
		in_word = l[i] != ' ';
	}
}

/* Descriptors without opendir(), which allocates. */
static void take_fds(struct so_procstate *s, int skip_fd)
{
	char buf[4096], path[64], target[4096];
	int dir = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	size_t len;
	long n;

	if (dir < 0)
		return;
	while ((n = syscall(SYS_getdents64, dir, buf, sizeof(buf))) > 0) {
		long off = 0;

		while (off < n) {
			struct dirent64 *d = (struct dirent64 *)(buf + off);
			int fd = atoi(d->d_name);
			ssize_t t;

			off += d->d_reclen;
			if (d->d_name[0] == '.' || fd == dir || fd == skip_fd)
				continue;
			snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
			t = readlink(path, target, sizeof(target));
			s->fds = fnv(s->fds, &fd, sizeof(fd));
			/* "socket:[1234]" and "pipe:[5678]" by kind only, so
			 * two tasks can be compared. */
			if (t > 0 && target[t - 1] == ']' && memchr(target, '[', (size_t)t))
				t = (char *)memchr(target, '[', (size_t)t) - target;
			if (t > 0)
				s->fds = fnv(s->fds, target, (size_t)t);
			s->fd_count++;
			len = strlen(s->fd_list);
			snprintf(s->fd_list + len, sizeof(s->fd_list) - len,
				 "%s%d", len ? "," : "", fd);
		}
	}
	close(dir);
}

void so_procstate_take(struct so_procstate *s, unsigned flags, int skip_fd)
{
	static char buf[16384];
	struct maps_ctx mc = { s, flags };
	char path[64];
	sigset_t mask;
	stack_t ss;
	int sig, r;

	memset(s, 0, sizeof(*s));
	s->sigaction = s->sigmask = s->pending = s->altstack = s->limits =
		s->maps = s->fds = s->cwd = s->env = FNV_OFFSET;
	s->umask = -1;
	for (sig = 1; sig < _NSIG; sig++) {
		struct sigaction a;

		if (sig == SIGKILL || sig == SIGSTOP ||
		    sigaction(sig, NULL, &a) != 0)
			continue;
		a.sa_flags &= ~SA_RESTORER;
		s->sigaction = fnv(s->sigaction, &sig, sizeof(sig));
		if (a.sa_flags & SA_SIGINFO)
			s->sigaction = fnv(s->sigaction, &a.sa_sigaction,
					   sizeof(a.sa_sigaction));
		else
			s->sigaction = fnv(s->sigaction, &a.sa_handler,
					   sizeof(a.sa_handler));
		s->sigaction = fnv(s->sigaction, &a.sa_flags, sizeof(a.sa_flags));
		for (r = 1; r < _NSIG; r++) {
			unsigned char m = sigismember(&a.sa_mask, r) == 1;

			s->sigaction = fnv(s->sigaction, &m, 1);
		}
		if (sig == SIGPIPE)
			s->ignored_pipe = !(a.sa_flags & SA_SIGINFO) &&
					  a.sa_handler == SIG_IGN;
	}
	if (pthread_sigmask(SIG_SETMASK, NULL, &mask) == 0)
		for (sig = 1; sig < _NSIG; sig++) {
			unsigned char m = sigismember(&mask, sig) == 1;

			s->sigmask = fnv(s->sigmask, &m, 1);
		}
	/* sigpending() has both the thread's and the process's. */
	if (sigpending(&mask) == 0)
		for (sig = 1; sig < _NSIG; sig++) {
			unsigned char m = sigismember(&mask, sig) == 1;
			const char *name = sigabbrev_np(sig);
			size_t len = strlen(s->pending_list);

			s->pending = fnv(s->pending, &m, 1);
			if (m)
				snprintf(s->pending_list + len,
					 sizeof(s->pending_list) - len, "%s%s",
					 len ? ":" : "", name ? name : "?");
		}
	if (sigaltstack(NULL, &ss) == 0) {
		int disabled = !!(ss.ss_flags & SS_DISABLE);

		s->altstack = fnv(s->altstack, &disabled, sizeof(disabled));
		if (!disabled) {
			s->altstack = fnv(s->altstack, &ss.ss_sp, sizeof(ss.ss_sp));
			s->altstack = fnv(s->altstack, &ss.ss_size,
					  sizeof(ss.ss_size));
		}
	}
	for (r = 0; r < RLIM_NLIMITS; r++) {
		struct rlimit l;

		if (getrlimit(r, &l) == 0)
			s->limits = fnv(s->limits, &l, sizeof(l));
	}
	each_line("/proc/self/status", buf, sizeof(buf), status_line, s);
	each_line("/proc/self/oom_score_adj", buf, sizeof(buf), oom_line, s);
	if (getcwd(buf, sizeof(buf)))
		s->cwd = fnv(s->cwd, buf, strlen(buf));
	for (r = 0; environ && environ[r]; r++)
		s->env = fnv(s->env, environ[r], strlen(environ[r]) + 1);
	each_line("/proc/self/maps", buf, sizeof(buf), maps_line, &mc);
	snprintf(path, sizeof(path), "/proc/self/task/%d/children", getpid());
	each_line(path, buf, sizeof(buf), children_line, s);
	take_fds(s, skip_fd);
}

void so_procstate_format(const struct so_procstate *s, char *buf, size_t len)
{
	snprintf(buf, len,
		 "threads=%d children=%d sigaction=%016llx sigpipe=%s "
		 "sigmask=%016llx pending=%s altstack=%016llx limits=%016llx "
		 "maps=%016llx/%d fds=%016llx/%d fd_list=%s umask=%04o "
		 "cwd=%016llx oom_score_adj=%d env=%016llx",
		 s->threads, s->children, (unsigned long long)s->sigaction,
		 s->ignored_pipe ? "ignored" : "not-ignored",
		 (unsigned long long)s->sigmask,
		 s->pending_list[0] ? s->pending_list : "-",
		 (unsigned long long)s->altstack,
		 (unsigned long long)s->limits, (unsigned long long)s->maps,
		 s->map_count, (unsigned long long)s->fds, s->fd_count,
		 s->fd_list[0] ? s->fd_list : "-", s->umask & 07777,
		 (unsigned long long)s->cwd, s->oom_score_adj,
		 (unsigned long long)s->env);
}

static void append(char *diff, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void append(char *diff, size_t len, const char *fmt, ...)
{
	size_t used = strlen(diff);
	va_list ap;

	if (used + 1 >= len)
		return;
	va_start(ap, fmt);
	vsnprintf(diff + used, len - used, fmt, ap);
	va_end(ap);
}

int so_procstate_diff(const struct so_procstate *a,
		      const struct so_procstate *b, char *diff, size_t len)
{
	int n = 0;

	if (diff && len)
		diff[0] = '\0';
#define DIFF_INT(f)                                                        \
	if (a->f != b->f) {                                                \
		append(diff, len, #f " %d -> %d; ", a->f, b->f);           \
		n++;                                                       \
	}
#define DIFF_HASH(f)                                                       \
	if (a->f != b->f) {                                                \
		append(diff, len, #f "; ");                                \
		n++;                                                       \
	}
	DIFF_INT(threads)
	DIFF_INT(children)
	DIFF_HASH(sigaction)
	DIFF_HASH(sigmask)
	if (a->pending != b->pending) {
		append(diff, len, "pending %s -> %s; ",
		       a->pending_list[0] ? a->pending_list : "-",
		       b->pending_list[0] ? b->pending_list : "-");
		n++;
	}
	DIFF_HASH(altstack)
	DIFF_HASH(limits)
	DIFF_INT(map_count)
	DIFF_HASH(maps)
	DIFF_INT(fd_count)
	DIFF_HASH(fds)
	DIFF_INT(umask)
	DIFF_HASH(cwd)
	DIFF_INT(oom_score_adj)
	DIFF_HASH(env)
#undef DIFF_INT
#undef DIFF_HASH
	return n;
}
