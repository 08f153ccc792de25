/*
 * helperproc.c - what a process that loads the Go library does to itself,
 * and its side of the wire protocol (helperproc.h).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/statfs.h>
#include <sys/time.h>
#include <unistd.h>

#include "helperproc.h"

#ifndef PROC_SUPER_MAGIC
#define PROC_SUPER_MAGIC 0x9fa0
#endif

void so_note(struct so_notes *n, char level, const char *fmt, ...)
{
	size_t room = sizeof(n->text) - n->len;
	va_list ap;
	int w;

	if (room < 4)
		return;
	n->text[n->len++] = level;
	n->text[n->len++] = ' ';
	room -= 2;
	va_start(ap, fmt);
	w = vsnprintf(n->text + n->len, room, fmt, ap);
	va_end(ap);
	if (w < 0)
		w = 0;
	if ((size_t)w >= room - 1)
		w = (int)room - 2;
	n->len += (size_t)w;
	n->text[n->len++] = '\n';
}

/* A pending SIGQUIT would otherwise dump a core of a process that may
 * still hold root's rights and its parent's memory. */
void so_self_reset_signals(void)
{
	struct sigaction act;
	sigset_t none;
	int sig;

	memset(&act, 0, sizeof(act));
	sigemptyset(&act.sa_mask);
	for (sig = 1; sig < _NSIG; sig++) {
		if (sig == SIGKILL || sig == SIGSTOP)
			continue;
		act.sa_handler = SIG_IGN;
		sigaction(sig, &act, NULL); /* fails on glibc's own */
		act.sa_handler = SIG_DFL;
		sigaction(sig, &act, NULL);
	}
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
}

void so_self_no_core(void)
{
	struct rlimit r = { 0, 0 };

	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	setrlimit(RLIMIT_CORE, &r);
}

void so_self_own_limits(void)
{
	static const int raise[] = { RLIMIT_AS, RLIMIT_DATA, RLIMIT_STACK,
				     RLIMIT_NPROC };
	struct rlimit r = { 0, 0 };
	size_t i;

	for (i = 0; i < sizeof(raise) / sizeof(raise[0]); i++) {
		if (getrlimit(raise[i], &r) != 0 || r.rlim_cur == r.rlim_max)
			continue;
		r.rlim_cur = r.rlim_max;
		setrlimit(raise[i], &r);
	}
}

void so_self_expendable(void)
{
	int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);

	if (fd >= 0) {
		if (write(fd, "1000", 4) != 4) {
			/* The inherited score stays; nothing else to do. */
		}
		close(fd);
	}
}

void so_self_deadline(uint32_t ms)
{
	struct itimerval t;

	memset(&t, 0, sizeof(t));
	if (ms != SO_NO_DEADLINE) {
		t.it_value.tv_sec = ms / 1000;
		t.it_value.tv_usec = (suseconds_t)(ms % 1000) * 1000;
		if (ms == 0)
			t.it_value.tv_usec = 1;
	}
	setitimer(ITIMER_REAL, &t, NULL);
}

static int recv_all(const struct so_channel *ch, void *buf, size_t len)
{
	return so_io_full(ch->fd, SO_IO_RECV, buf, len, ch->wait, ch->ctx);
}

static int send_all(const struct so_channel *ch, const void *buf, size_t len)
{
	return so_io_full(ch->fd, SO_IO_SEND, (void *)buf, len, ch->wait,
			  ch->ctx);
}

int so_read_request(const struct so_channel *ch, struct so_wire_request *rq)
{
	if (recv_all(ch, rq, sizeof(*rq)) != 0)
		return 1;
	if (rq->magic != SO_WIRE_REQUEST_MAGIC || rq->env_bytes > SO_WIRE_MAX_ENV ||
	    rq->env_count > rq->env_bytes)
		return -1;
	return 0;
}

char **so_read_env(const struct so_channel *ch, const struct so_wire_request *rq)
{
	char *data, **envp, *p, *end;
	size_t i;

	data = malloc(rq->env_bytes + 1);
	envp = calloc(rq->env_count + 2, sizeof(char *));
	if (!data || !envp) {
		free(data);
		free(envp);
		errno = ENOMEM;
		return NULL;
	}
	/* The block's start, for so_free_env, past the terminating NULL. */
	envp[rq->env_count + 1] = data;
	if (recv_all(ch, data, rq->env_bytes) != 0)
		goto damaged;
	data[rq->env_bytes] = '\0';
	for (i = 0, p = data, end = data + rq->env_bytes; p < end; i++) {
		if (i == rq->env_count)
			goto damaged;
		envp[i] = p;
		p += strlen(p) + 1;
	}
	if (i != rq->env_count)
		goto damaged;
	return envp;
damaged:
	free(data);
	free(envp);
	errno = EPROTO;
	return NULL;
}

void so_free_env(char **envp)
{
	size_t i;

	if (!envp)
		return;
	for (i = 0; envp[i]; i++)
		;
	free(envp[i + 1]);
	free(envp);
}

int so_send_answer(const struct so_channel *ch, enum so_status st, int rc,
		   const char *value, const struct so_notes *n,
		   const char *liblog)
{
	struct so_wire_answer a;
	size_t value_len = value ? strlen(value) : 0;
	size_t lib_len = liblog ? strlen(liblog) : 0;

	if (value_len > SO_WIRE_MAX_VALUE) {
		/* Far beyond what execve() takes for one variable. */
		value = NULL;
		value_len = 0;
		rc = -1;
		lib_len = 0;
		liblog = NULL;
	}
	if (n->len + lib_len > SO_WIRE_MAX_LOG)
		lib_len = SO_WIRE_MAX_LOG - n->len;
	memset(&a, 0, sizeof(a));
	a.magic = SO_WIRE_ANSWER_MAGIC;
	a.status = (int32_t)st;
	a.rc = rc;
	a.has_value = value != NULL;
	a.value_len = (uint32_t)value_len;
	a.log_len = (uint32_t)(n->len + lib_len);
	if (send_all(ch, &a, sizeof(a)) != 0 || send_all(ch, value, value_len) != 0 ||
	    send_all(ch, n->text, n->len) != 0 || send_all(ch, liblog, lib_len) != 0)
		return -1;
	return 0;
}

enum so_status so_load_library(int fd, const char *name, int no_abi,
			       struct so_notes *n, void **handle,
			       so_task_env_fn **fn)
{
	struct statfs sf;
	char path[32];
	so_abi_fn *abi;
	void *h;
	int v;

	if (statfs("/proc/self/fd", &sf) != 0 || sf.f_type != PROC_SUPER_MAGIC) {
		so_note(n, SO_LINE_ERROR, "refusing to load %s: /proc is not procfs in "
				  "this mount namespace", name);
		return SO_REFUSED;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	dlerror();
	if (!(h = dlopen(path, RTLD_NOW | RTLD_LOCAL))) {
		const char *e = dlerror();

		so_note(n, SO_LINE_ERROR, "cannot load %s: %s", name,
			e ? e : "unknown error");
		return SO_LOAD_FAILED;
	}
	abi = (so_abi_fn *)dlsym(h, "spank_otel_abi");
	*fn = (so_task_env_fn *)dlsym(h, "spank_otel_task_env");
	if ((!abi && !no_abi) || !*fn) {
		so_note(n, SO_LINE_ERROR, "cannot use %s: it does not export %s", name,
			*fn ? "spank_otel_abi" : "spank_otel_task_env");
		return SO_SYMBOL_MISSING;
	}
	/* abi() returns once the Go runtime has started. */
	if (abi && (v = abi()) != SO_ABI_VERSION) {
		so_note(n, SO_LINE_ERROR, "cannot use %s: library ABI %d, this plugin "
				  "needs ABI %d (install matching versions)",
			name, v, SO_ABI_VERSION);
		return SO_ABI_MISMATCH;
	}
	*handle = h;
	return SO_CALLED;
}
