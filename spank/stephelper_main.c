/*
 * stephelper_main.c - spank-otel-helper, the step's helper: one process per
 * step on a node that loads the Go library once and answers every task of
 * the step (issue 43, section 3; docs/design.md, "A clean helper image").
 *
 * It is a fresh image: its parent executes it from a descriptor checked as
 * lib= is (execveat with AT_EMPTY_PATH), so no byte of slurmstepd's memory
 * (its heap, the job credential, under auth/slurm the cluster's key) is in
 * the process that parses the tasks' input. Its parent also gives it the
 * job's credentials, no_new_privs and a parent-death signal before the
 * exec, and these descriptors:
 *
 *   0          /dev/null
 *   1, 2       where its own failures go (a Go runtime's fatal error)
 *   3          the library, opened and checked in the step parent
 *   4 .. 4+n-1 one stream socket per task of the step on the node
 *
 * Usage: spank-otel-helper TASKS LIBRARY-NAME [--no-abi-check]
 *
 * LIBRARY-NAME is the library's path, for messages only: the library is
 * loaded through descriptor 3. Each socket carries at most one request
 * (wire.h): the header, the task's environment, the keys never written and
 * the step's node files (so_wire_request says how many bytes of each), and
 * gets one answer. A request is answered within its deadline_ms, or the
 * alarm ends the helper: the tasks still waiting then get no attributes,
 * which is all a task ever loses to the plugin. The helper ends when every
 * socket is closed (each task has asked, exec'd or gone), or with its
 * parent.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
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
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/capability.h>

#include "clock.h"
#include "cgroup.h"
#include "fds.h"
#include "headroom.h"
#include "helperproc.h"
#include "membound.h"

#define LIB_FD 3
#define FIRST_SOCK_FD 4
/* More tasks on one node than Slurm's own limit of tasks per node. */
#define MAX_TASKS 4096

#define ENV_VAR "OTEL_RESOURCE_ATTRIBUTES"

/* Frees what earlier calls left (contract.h); optional. */
typedef void so_collect_fn(void);

/* A socket is waited on with no deadline of its own: the alarm armed at
 * each request bounds the whole exchange. */
static int wait_ready(void *ctx, int fd, short events)
{
	(void)ctx;
	for (;;) {
		struct pollfd p = { fd, events, 0 };
		int n = poll(&p, 1, -1);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (p.revents & (events | POLLHUP | POLLERR))
			return 1;
	}
}

/* When the garbage of earlier calls is given back (spank_otel_collect):
 * once no request has come for COLLECT_IDLE_MS, or at once after
 * COLLECT_CALLS requests or COLLECT_BYTES of them, whichever comes first.
 * The call's memory bound (8 MiB) holds the garbage of several ordinary
 * calls (tens of KiB each) and of one of the largest. */
#define COLLECT_IDLE_MS 20
#define COLLECT_CALLS 16u
#define COLLECT_BYTES (2ULL << 20)

/* What the helper knows once it has started. */
struct step_helper {
	const char *lib_name;
	int no_abi;              /* --no-abi-check */
	int tried;               /* load() ran */
	so_task_env_fn *fn;      /* NULL: the library could not be used */
	so_collect_fn *collect;  /* NULL: the library has no collector */
	/* Requests answered, and their bytes, since the last collection. */
	unsigned uncollected_calls;
	unsigned long long uncollected_bytes;
	enum so_status load_st;  /* why fn is NULL */
	struct so_notes load_notes;
	long long load_us;
};

/* Reads len bytes that follow a request into a new string (NUL-ended), or
 * sets *out NULL when len is 0. Returns 0, or -1 (errno ENOMEM or
 * EPROTO). */
static int read_part(const struct so_channel *ch, uint64_t len, uint64_t max,
		     char **out)
{
	char *p;

	*out = NULL;
	if (len == 0)
		return 0;
	if (len > max) {
		errno = EPROTO;
		return -1;
	}
	if (!(p = malloc(len + 1))) {
		errno = ENOMEM;
		return -1;
	}
	if (so_io_full(ch->fd, SO_IO_RECV, p, len, ch->wait, ch->ctx) != 0) {
		free(p);
		errno = EPROTO;
		return -1;
	}
	p[len] = '\0';
	*out = p;
	return 0;
}

/* Loads the library once, at the first request, under the memory bound's
 * two stages. Not before: by then Slurm has set the job's and the step's
 * limits (task_g_pre_setuid comes after the helper's start), and the
 * helper checks that its cgroups, the step parent's (step_Y/slurm on
 * cgroup v2, under the job's limits), have room for it: an OOM kill there
 * would count against the step. A library that cannot be used is not
 * fatal: every task that asks is told why. */
static void load(struct step_helper *sh, int no_abi)
{
	static struct so_cgroups self;
	struct so_cgroup_files real = { 0 };
	char why[PATH_MAX + 256];
	void *h = NULL;
	long long t;

	sh->tried = 1;
	sh->load_st = SO_HELPER_FAILED;
	if (so_cgroups_read("/proc/self/cgroup", &self) != 0) {
		so_note(&sh->load_notes, SO_LINE_ERROR, "not loading the library: cannot "
				     "read the helper's cgroups: %s; %s left unchanged",
			strerror(errno), ENV_VAR);
		return;
	}
	if (!so_headroom_ok(&real, &self, getpid(), why, sizeof(why))) {
		so_note(&sh->load_notes, SO_LINE_ERROR, "not loading the library: %s; %s "
				     "left unchanged", why, ENV_VAR);
		return;
	}
	if (so_membound_load(why, sizeof(why)) != 0) {
		so_note(&sh->load_notes, SO_LINE_ERROR, "not loading the library: %s; %s "
				     "left unchanged", why, ENV_VAR);
		return;
	}
	t = so_monotonic_us();
	sh->load_st = so_load_library(LIB_FD, sh->lib_name, no_abi,
				      &sh->load_notes, &h, &sh->fn);
	sh->load_us = so_monotonic_us() - t;
	if (sh->load_st != SO_CALLED) {
		sh->fn = NULL;
		return;
	}
	if (so_membound_call(why, sizeof(why)) != 0) {
		so_note(&sh->load_notes, SO_LINE_ERROR, "not calling the library: %s; %s "
				     "left unchanged", why, ENV_VAR);
		sh->load_st = SO_HELPER_FAILED;
		sh->fn = NULL;
		return;
	}
	sh->collect = (so_collect_fn *)dlsym(h, "spank_otel_collect");
}

/* Answers the one request on ch. Returns 0 when the socket is done with
 * (answered, or the task went away), -1 when it broke the protocol. */
static int serve(struct step_helper *sh, const struct so_channel *ch)
{
	struct so_wire_request rq;
	struct so_notes n = { .len = 0 };
	char **envp = NULL, *exclude = NULL, *node = NULL;
	char *value = NULL, *liblog = NULL;
	long long called;
	int rc;

	rc = so_read_request(ch, &rq);
	if (rc > 0)
		return 0;
	if (rc < 0) {
		so_note(&n, SO_LINE_ERROR, "the step's helper received a damaged request");
		so_send_answer(ch, SO_HELPER_FAILED, -1, NULL, &n, NULL);
		return -1;
	}
	/* A tenth past the task's own deadline: the task gives up first and
	 * says so (timeout=); a call still running then is stuck, and the
	 * helper ends itself. */
	so_self_deadline(rq.deadline_ms + rq.deadline_ms / 10);
	if (!sh->tried)
		load(sh, sh->no_abi);
	if (!sh->fn) {
		so_send_answer(ch, sh->load_st, -1, NULL, &sh->load_notes, NULL);
		so_self_deadline(SO_NO_DEADLINE);
		return 0;
	}
	errno = 0;
	if (!(envp = so_read_env(ch, &rq)) ||
	    read_part(ch, rq.exclude_bytes, SO_WIRE_MAX_EXCLUDE, &exclude) != 0 ||
	    read_part(ch, rq.task.node_files_len, SO_NODE_FILES_MAX, &node) != 0) {
		if (errno == ENOMEM)
			so_note(&n, SO_LINE_ERROR, "the task's request (%u bytes of "
					   "environment) does not fit in the helper's "
					   "memory bound; %s left unchanged",
				(unsigned)rq.env_bytes, ENV_VAR);
		else
			so_note(&n, SO_LINE_ERROR, "the step's helper received a damaged "
					   "request");
		so_send_answer(ch, SO_HELPER_FAILED, -1, NULL, &n, NULL);
		so_free_env(envp);
		free(exclude);
		so_self_deadline(SO_NO_DEADLINE);
		return -1;
	}
	rq.task.envp = envp;
	rq.task.exclude = exclude;
	rq.task.node_files = node;
	called = so_monotonic_us();
	rc = sh->fn(&rq.task, &value, &liblog);
	called = so_monotonic_us() - called;
	so_note(&n, SO_LINE_DEBUG, "step helper: library loaded and started in %lld us "
			   "(once for the step), call %lld us",
		sh->load_us, called);
	so_send_answer(ch, SO_CALLED, rc, value, &n, liblog);
	so_self_deadline(SO_NO_DEADLINE);
	sh->uncollected_calls++;
	sh->uncollected_bytes += rq.env_bytes + rq.task.node_files_len;
	/* The library's strings are the C heap's (C.CString). */
	free(value);
	free(liblog);
	so_free_env(envp);
	free(exclude);
	free(node);
	return 0;
}

static void collect(struct step_helper *sh)
{
	sh->collect();
	sh->uncollected_calls = 0;
	sh->uncollected_bytes = 0;
}

/* The one CPU it runs on: the Go runtime sizes GOMAXPROCS, and so its
 * threads, from the mask it starts with, and the helper answers one task
 * at a time. A CPU it cannot tell keeps the mask. */
static void one_cpu(void)
{
	cpu_set_t one;
	int cpu = sched_getcpu();

	if (cpu < 0 || cpu >= CPU_SETSIZE)
		return;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	sched_setaffinity(0, sizeof(one), &one);
}

/* Any capability permitted or effective? (Also when it cannot tell.) */
static int has_capabilities(void)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &h, d) != 0)
		return 1;
	return d[0].permitted || d[1].permitted || d[0].effective || d[1].effective;
}

static void __attribute__((noreturn)) refuse(const char *why)
{
	fprintf(stderr, "spank-otel-helper: %s\n", why);
	_exit(2);
}

/* The deadline's signal (so_self_deadline) ends the helper as its default
 * action does, saying why first: the tasks still waiting see only their
 * sockets close, and the step parent logs this line. */
static void deadline_passed(int sig)
{
	static const char why[] = "a call ran past its task's deadline (timeout=); "
				  "the step's helper ended itself\n";
	ssize_t r = write(2, why, sizeof(why) - 1);

	(void)r;
	signal(sig, SIG_DFL);
	raise(sig); /* delivered on return, as the default action */
}

int main(int argc, char **argv)
{
	struct step_helper sh;
	struct pollfd *p;
	char *end;
	long tasks;
	int open_count, i;

	/* First: nothing may dump this process (its parent made it the
	 * job's user, who could otherwise read its core). */
	so_self_no_core();
	so_self_reset_signals();
	signal(SIGALRM, deadline_passed);
	if (argc < 3 || argc > 4 || (argc == 4 && strcmp(argv[3], "--no-abi-check")))
		refuse("usage: spank-otel-helper TASKS LIBRARY-NAME [--no-abi-check]");
	errno = 0;
	tasks = strtol(argv[1], &end, 10);
	if (errno || *end || tasks < 1 || tasks > MAX_TASKS)
		refuse("TASKS must be a number from 1 to 4096");
	/* What its parent promised, checked: it runs as the job's user and
	 * can gain nothing by exec. */
	if (prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1)
		refuse("no_new_privs is not set; started other than by spank-otel");
	if (getuid() != geteuid() || getgid() != getegid())
		refuse("real and effective ids differ");
	if (has_capabilities())
		refuse("it holds capabilities; started other than by spank-otel");
	/* Only its own descriptors, none inherited by what the library may
	 * run. */
	if (so_close_from(FIRST_SOCK_FD + (int)tasks) != 0)
		refuse("cannot close the descriptors it was not given");
	for (i = LIB_FD; i < FIRST_SOCK_FD + tasks; i++)
		if (fcntl(i, F_SETFD, FD_CLOEXEC) != 0)
			refuse("a descriptor it needs is not open");
	prctl(PR_SET_NAME, "spank-otel", 0, 0, 0);
	so_self_own_limits();
	so_self_expendable();
	one_cpu();

	memset(&sh, 0, sizeof(sh));
	sh.lib_name = argv[2];
	sh.no_abi = argc == 4;

	p = calloc((size_t)tasks, sizeof(*p));
	if (!p)
		refuse("out of memory");
	for (i = 0; i < tasks; i++) {
		p[i].fd = FIRST_SOCK_FD + i;
		p[i].events = POLLIN;
	}
	open_count = (int)tasks;
	while (open_count > 0) {
		/* With garbage to give back, wait for the next request only so
		 * long: the tasks of a step ask in a burst, and a collection
		 * is not to delay one of them. */
		int idle_ms = sh.collect && sh.uncollected_calls ? COLLECT_IDLE_MS : -1;
		int r = poll(p, (nfds_t)tasks, idle_ms);

		if (r == 0) {
			collect(&sh);
			continue;
		}
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			refuse("poll failed");
		for (i = 0; i < tasks; i++) {
			struct so_channel ch = { p[i].fd, wait_ready, NULL };

			if (p[i].fd < 0 || !p[i].revents)
				continue;
			serve(&sh, &ch);
			/* One request per socket: the task is done with it. */
			close(p[i].fd);
			p[i].fd = -1;
			p[i].revents = 0;
			open_count--;
		}
		/* Within a burst only when the calls since the last collection
		 * may have used much of the memory bound's room. */
		if (sh.collect && open_count > 0 &&
		    (sh.uncollected_calls >= COLLECT_CALLS ||
		     sh.uncollected_bytes >= COLLECT_BYTES))
			collect(&sh);
	}
	return 0;
}
