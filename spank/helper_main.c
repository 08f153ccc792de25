/*
 * helper_main.c - the helper process: the only process in which the Go
 * library is ever loaded (see helper.h for the whole picture).
 *
 * It is forked from the task child in task_init_privileged, while that
 * still runs as root and before Slurm has placed the task, and it is born
 * with the job's user as its real uid (effective and saved uid root, to
 * place itself later; see so_helper_start): from its first instruction the
 * task, which Slurm switches to that user right after the callback, may
 * signal it, and the kernel delivers the parent-death signal from a parent
 * of that user. First it sheds what
 * it must not keep of slurmstepd's: default signal dispositions and an
 * empty mask, only its own descriptors, no core dumps. It waits for the
 * task's request (task_init, when the task is placed), watching the task
 * through a pidfd, and from the request on it has a deadline of its own (a
 * real-time alarm at the default action), so that it ends by itself
 * whatever happens during placement or the call. Still with root's
 * effective uid it moves itself into the task's cgroups, CPU mask and
 * process group, so that Slurm accounts, confines and kills it with the
 * task. Only then does it become the job's user with no capability left,
 * and load the library: neither the library's constructors nor the Go
 * runtime ever run with root's rights or outside the job's allocation. It
 * answers exactly one request and exits.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "cgroup.h"
#include "clock.h"
#include "fds.h"
#include "fullio.h"
#include "headroom.h"
#include "helper_main.h"
#include "membound.h"
#include "pidfd.h"
#include "privs.h"
#include "wire.h"

#ifndef PROC_SUPER_MAGIC
#define PROC_SUPER_MAGIC 0x9fa0
#endif

#define ENV_VAR "OTEL_RESOURCE_ATTRIBUTES"

/* The descriptors the helper keeps, at fixed numbers. */
enum { LIB_FD = 3, SOCK_FD = 4, FIRST_FREE_FD = 5 };

/* The helper's own messages, sent ahead of the library's log. */
struct notes {
	char text[4096];
	size_t len;
};

static void note(struct notes *n, char level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void note(struct notes *n, char level, const char *fmt, ...)
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

/* The helper's side of so_io_full: waits for the socket, or for the task
 * to end (its pidfd turns readable), which ends the wait with -1. No
 * deadline here: the alarm armed at the request bounds all of it, and
 * until the request nothing but the task's end or the socket's may end
 * the wait (the task may spend any time in other plugins' callbacks). */
static int helper_wait(void *ctx, int fd, short events)
{
	int task_fd = *(const int *)ctx;

	for (;;) {
		struct pollfd p[2] = { { fd, events, 0 }, { task_fd, POLLIN, 0 } };
		int n = poll(p, task_fd >= 0 ? 2 : 1, -1);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || (task_fd >= 0 && p[1].revents))
			return -1;
		if (p[0].revents)
			return 1;
	}
}

/* Where the helper watches its task: a pidfd, or -1 once it is closed
 * (before the library is loaded, which sees only its five descriptors). */
static int task_fd = -1;

/* The task's /proc/PID/cgroup, opened at the start, or -1: read by path. */
static int task_cg_fd = -1;

static int send_all(const void *buf, size_t len)
{
	return so_io_full(SOCK_FD, SO_IO_SEND, (void *)buf, len, helper_wait,
			  &task_fd);
}

static int recv_all(void *buf, size_t len)
{
	return so_io_full(SOCK_FD, SO_IO_RECV, buf, len, helper_wait, &task_fd);
}

/* Has the task ended? Checked between the steps of the placement, so
 * that a helper whose task went away does not go on joining its cgroups
 * (the parent-death signal ends it too; this does not depend on it). */
static int task_gone(void)
{
	struct pollfd p = { task_fd, POLLIN, 0 };

	return task_fd >= 0 && poll(&p, 1, 0) > 0;
}

/* Sends the answer and ends the helper. */
static void __attribute__((noreturn))
answer(enum so_status st, int rc, const char *value, const struct notes *n,
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
	if (send_all(&a, sizeof(a)) == 0 && send_all(value, value_len) == 0 &&
	    send_all(n->text, n->len) == 0)
		send_all(liblog, lib_len);
	_exit(0);
}

/* Default dispositions and an empty mask: the helper must not run
 * slurmstepd's handlers (they would write to slurmstepd's descriptors),
 * and the Go runtime installs its own. A signal that arrived while the
 * mask the helper was born with blocked it (its user may signal it from
 * birth) is discarded first: ignoring a signal drops it, and a pending
 * SIGQUIT would otherwise dump a core of a process that still holds
 * root's rights and slurmstepd's memory. */
static void reset_signals(void)
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

/* Before any signal can be delivered: no core file, and no dump of this
 * process at all (it holds root's rights and slurmstepd's memory until
 * it drops them). */
static void no_core(void)
{
	struct rlimit r = { 0, 0 };

	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	setrlimit(RLIMIT_CORE, &r);
}

/* Leaves exactly five descriptors: /dev/null as stdin, the stderr pipe as
 * stdout and stderr, the library at 3 and the socket at 4, both
 * close-on-exec (the library may run programs). Everything else slurmstepd
 * had open is closed. */
static int arrange_fds(int lib, int sock, int err)
{
	/* Copies above the five numbers first, so that no dup2 below
	 * overwrites a descriptor still to be copied. */
	int hi_lib = fcntl(lib, F_DUPFD_CLOEXEC, FIRST_FREE_FD);
	int hi_sock = fcntl(sock, F_DUPFD_CLOEXEC, FIRST_FREE_FD);
	int hi_err = fcntl(err, F_DUPFD_CLOEXEC, FIRST_FREE_FD);
	int null;

	if (hi_lib < 0 || hi_sock < 0 || hi_err < 0)
		return -1;
	if (dup2(hi_err, STDERR_FILENO) < 0 || dup2(hi_err, STDOUT_FILENO) < 0 ||
	    dup3(hi_lib, LIB_FD, O_CLOEXEC) < 0 ||
	    dup3(hi_sock, SOCK_FD, O_CLOEXEC) < 0)
		return -1;
	/* Only now: opened earlier, /dev/null could land on 3 or 4 and be
	 * overwritten, leaving stdin the library or the socket. */
	null = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (null < 0)
		return -1;
	if (null != STDIN_FILENO && dup2(null, STDIN_FILENO) < 0)
		return -1;
	/* Fails closed: a helper that may hold slurmstepd's sockets loads
	 * no library. */
	return so_close_from(FIRST_FREE_FD);
}

/* Soft limits up to the hard ones: the helper lives for one call and a Go
 * runtime that cannot map its heap or start a thread aborts. (RLIMIT_CORE
 * is 0 already: no_core.) */
static void own_limits(void)
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

/* When memory runs short the kernel's OOM killer must take the helper, the
 * one process of the job that costs nothing to lose. */
static void expendable(void)
{
	int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);

	if (fd >= 0) {
		if (write(fd, "1000", 4) != 4) {
			/* The task child's score stays; nothing else to do. */
		}
		close(fd);
	}
}

/* One CPU of the task's final mask: inside the job's allocation, and the
 * Go runtime sizes GOMAXPROCS, and so its threads, from the mask it starts
 * with. The CPU the helper runs on, when the mask has it: moving to
 * another one waits for that CPU's run queue, a whole time slice when it
 * is busy. Else the task index picks one, so that the helpers of one node
 * spread over its CPUs. Returns the CPU, or -1 when the helper keeps its
 * mask (said why in a debug note). */
static int one_cpu(pid_t task, int index, struct notes *n)
{
	cpu_set_t set, one;
	int count, cpu, k;

	if (sched_getaffinity(task, sizeof(set), &set) != 0) {
		note(n, SO_LINE_DEBUG, "helper keeps its CPU mask: sched_getaffinity of "
			     "the task: %s", strerror(errno));
		return -1;
	}
	count = CPU_COUNT(&set);
	if (count < 1)
		return -1;
	cpu = sched_getcpu();
	if (cpu < 0 || cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &set)) {
		k = (index < 0 ? 0 : index) % count;
		for (cpu = 0; cpu < CPU_SETSIZE; cpu++)
			if (CPU_ISSET(cpu, &set) && k-- == 0)
				break;
	}
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	if (sched_setaffinity(0, sizeof(one), &one) != 0) {
		note(n, SO_LINE_DEBUG, "helper cannot bind to CPU %d: %s", cpu,
		     strerror(errno));
		return -1;
	}
	return cpu;
}

/* Moves the helper beside the task, which Slurm has placed by now (its
 * parent did setpgid, proctrack_g_add and the task plugins' cgroups and
 * CPU binding before letting the task run on to task_init): first a check
 * that the task's cgroups have room, then its cgroups (joining a cpuset
 * resets the CPU mask, so that comes first), one CPU of its mask, its
 * process group. Returns 0, or -1 with an error note. */
static int place(const struct so_helper_config *cfg, pid_t task,
		 struct notes *n)
{
	static struct so_cgroups task_cg, self_cg;
	const struct so_cgroup_files *f = &cfg->cgroup_files;
	char task_file[64], why[PATH_MAX + 256];
	int joined, cpu;
	pid_t pgid;

	snprintf(task_file, sizeof(task_file), "/proc/%d/cgroup", (int)task);
	if ((task_cg_fd >= 0 ? so_cgroups_read_fd(task_cg_fd, &task_cg)
			     : so_cgroups_read(f->task ? f->task : task_file, &task_cg)) != 0 ||
	    so_cgroups_read(f->self ? f->self : "/proc/self/cgroup", &self_cg) != 0) {
		note(n, SO_LINE_ERROR, "not loading the library: cannot read the task's "
			     "cgroups: %s; %s left unchanged",
		     strerror(errno), ENV_VAR);
		return -1;
	}
	if (!so_headroom_ok(f, &task_cg, task, cfg->helpers, why, sizeof(why))) {
		note(n, SO_LINE_ERROR, "not loading the library: %s; %s left unchanged",
		     why, ENV_VAR);
		return -1;
	}
	joined = so_cgroups_join(f, &task_cg, &self_cg, task,
				 cfg->drop_creds ? cfg->uid : (uid_t)-1, why,
				 sizeof(why));
	if (joined < 0) {
		note(n, SO_LINE_ERROR, "not loading the library: %s; %s left unchanged",
		     why, ENV_VAR);
		return -1;
	}
	cpu = one_cpu(task, cfg->cpu_index, n);
	pgid = getpgid(task);
	if (pgid > 0 && pgid != getpgid(0) && setpgid(0, pgid) != 0) {
		/* The task of a --pty step leads a session of its own. */
		note(n, SO_LINE_DEBUG, "helper stays out of the task's process group %d: %s",
		     (int)pgid, strerror(errno));
	}
	note(n, SO_LINE_DEBUG, "helper: joined %d cgroups of the task, CPU %d, process "
		     "group %d", joined, cpu, (int)getpgid(0));
	return 0;
}

/* The helper's own deadline: SIGALRM, at its default action (the
 * signals were reset, and neither a c-shared Go runtime nor the helper
 * handles it), ends the helper ms after the request came, wherever it is
 * then, stopped included. Only a process the v1 freezer froze does not
 * run to its end (it is in the task's freezer cgroup by then and is
 * thawed, and so ended, with the job). */
static void own_deadline(uint32_t ms)
{
	struct itimerval t;

	memset(&t, 0, sizeof(t));
	t.it_value.tv_sec = ms / 1000;
	t.it_value.tv_usec = (suseconds_t)(ms % 1000) * 1000;
	if (ms == 0)
		t.it_value.tv_usec = 1;
	setitimer(ITIMER_REAL, &t, NULL);
}

static int drop_creds(const struct so_helper_config *cfg, struct notes *n)
{
	struct so_creds c = { cfg->drop_creds, cfg->uid, cfg->gid, cfg->groups,
			      cfg->ngroups };
	char why[256];
	int bounding_kept = 0;

	if (so_privs_drop(&c, &bounding_kept, why, sizeof(why)) != 0) {
		note(n, SO_LINE_ERROR, "not loading the library: the helper process %s; "
			     "%s left unchanged", why, ENV_VAR);
		return -1;
	}
	if (bounding_kept)
		note(n, SO_LINE_DEBUG, "helper keeps its capability bounding set (no "
			     "CAP_SETPCAP); no_new_privs stands in for it");
	return 0;
}

/* The hard memory bound (membound.h), set in two stages: before the
 * library is loaded and once its runtime has started. Without it the
 * library is not loaded, or not called: an OOM kill in the job's cgroups
 * would cost the step more than the task's attributes. */
static void bound_memory(int (*stage)(char *, size_t), struct notes *n)
{
	char why[256];

	if (stage(why, sizeof(why)) != 0) {
		note(n, SO_LINE_ERROR, "not calling the library: %s; %s left unchanged",
		     why, ENV_VAR);
		answer(SO_HELPER_FAILED, -1, NULL, n, NULL);
	}
}

/* Waits for the request's header: the task is in task_init. Returns 0,
 * or -1 when it is not a request. Ends the helper when the task went away
 * or execs without calling. */
static int read_header(struct so_wire_request *rq)
{
	if (recv_all(rq, sizeof(*rq)) != 0)
		_exit(0);
	if (rq->magic != SO_WIRE_REQUEST_MAGIC || rq->env_bytes > SO_WIRE_MAX_ENV ||
	    rq->env_count > rq->env_bytes)
		return -1;
	return 0;
}

/* Reads the task's environment that follows the header. */
static char **read_env(const struct so_wire_request *rq)
{
	char *data, **envp, *p, *end;
	size_t i;

	data = malloc(rq->env_bytes + 1);
	envp = calloc(rq->env_count + 1, sizeof(char *));
	if (!data || !envp)
		return NULL; /* errno ENOMEM: over the memory bound */
	if (recv_all(data, rq->env_bytes) != 0) {
		errno = EPROTO;
		return NULL;
	}
	data[rq->env_bytes] = '\0';
	for (i = 0, p = data, end = data + rq->env_bytes; p < end; i++) {
		if (i == rq->env_count) {
			errno = EPROTO;
			return NULL;
		}
		envp[i] = p;
		p += strlen(p) + 1;
	}
	if (i != rq->env_count) {
		errno = EPROTO;
		return NULL;
	}
	return envp;
}

void so_helper_main(const struct so_helper_config *cfg, pid_t task, int sock,
		    int err)
{
	const struct so_lib *lib = cfg->lib;
	struct so_creds creds = { cfg->drop_creds, cfg->uid, cfg->gid, cfg->groups,
				  cfg->ngroups };
	struct so_wire_request rq;
	struct notes n = { .len = 0 };
	char narrow_err[256];
	int narrowed;
	struct statfs sf;
	struct stat sb;
	so_abi_fn *abi;
	so_task_env_fn *fn;
	char **envp, *value = NULL, *liblog = NULL, path[32];
	long long placing, loading, called;
	int rc;
	void *h;

	/* Born with the job's user as its real uid (so_helper_start). Dies
	 * with the task; the task may have ended before this was set. */
	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	if (getppid() != task)
		_exit(0);
	no_core();
	reset_signals();
	if (arrange_fds(lib->fd, sock, err) != 0)
		_exit(127); /* no socket to answer on */
	/* The watch on the task, independent of the parent-death signal
	 * (which a credential change clears): opened while the task is
	 * still the parent, so that it names the task and no recycled pid. */
	task_fd = (int)syscall(SYS_pidfd_open, task, 0);
	if (task_fd < 0 || getppid() != task)
		_exit(0);
	/* Opened with root's capabilities, which reading another user's
	 * /proc/PID needs where /proc hides it (hidepid= with gid=); read at
	 * placement (cgroup.h). From here on the helper keeps only those its
	 * credential change needs (privs.h), or refuses the request. */
	if (!cfg->cgroup_files.task) {
		snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)task);
		task_cg_fd = open(path, O_RDONLY | O_CLOEXEC);
	}
	narrowed = so_privs_narrow(&creds, narrow_err, sizeof(narrow_err)) == 0;
	prctl(PR_SET_NAME, "spank-otel", 0, 0, 0);
	own_limits();
	expendable();

	/* The rest needs the task placed: Slurm does that after
	 * task_init_privileged and before task_init. */
	if (read_header(&rq) != 0) {
		note(&n, SO_LINE_ERROR, "the helper process received a damaged request");
		answer(SO_HELPER_FAILED, -1, NULL, &n, NULL);
	}
	if (!narrowed) {
		note(&n, SO_LINE_ERROR, "not loading the library: the helper process %s; "
			     "%s left unchanged", narrow_err, ENV_VAR);
		answer(SO_HELPER_FAILED, -1, NULL, &n, NULL);
	}
	own_deadline(rq.deadline_ms);
	placing = so_monotonic_us();
	if (task_gone())
		_exit(0);
	if (place(cfg, task, &n) != 0)
		answer(SO_HELPER_FAILED, -1, NULL, &n, NULL);
	if (task_gone())
		_exit(0);
	if (drop_creds(cfg, &n) != 0)
		answer(SO_HELPER_FAILED, -1, NULL, &n, NULL);
	/* Cleared by the credential change: set again, then make sure the
	 * task did not die in between. */
	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	if (getppid() != task)
		_exit(0);
	placing = so_monotonic_us() - placing;

	/* The descriptor crossed a fork and Slurm's code: it must still be
	 * the file that was checked. */
	if (fstat(LIB_FD, &sb) != 0 || sb.st_dev != lib->dev ||
	    sb.st_ino != lib->ino) {
		note(&n, SO_LINE_ERROR, "not loading %s: its descriptor was closed or "
			      "reused", lib->path);
		answer(SO_OPEN_FAILED, -1, NULL, &n, NULL);
	}
	/* dlopen() needs a path; /proc/self/fd/N names the checked file only
	 * where /proc is the kernel's. The helper is in the mount namespace
	 * the task child had in task_init_privileged: slurmstepd's, or the
	 * job's own that Slurm's job_container/namespace plugin made (as
	 * root) and joined before that callback. A container plugin joins a
	 * namespace its user controls only in task_init, after the fork.
	 * Still, make sure. */
	if (statfs("/proc/self/fd", &sf) != 0 || sf.f_type != PROC_SUPER_MAGIC) {
		note(&n, SO_LINE_ERROR, "refusing to load %s: /proc is not procfs in this "
			      "mount namespace", lib->path);
		answer(SO_REFUSED, -1, NULL, &n, NULL);
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", LIB_FD);
	bound_memory(so_membound_load, &n);
	/* The library sees only the five descriptors; from here on the
	 * parent-death signal and the alarm stand for the watch. */
	close(task_fd);
	task_fd = -1;
	if (task_cg_fd >= 0)
		close(task_cg_fd);
	loading = so_monotonic_us();
	dlerror();
	if (!(h = dlopen(path, RTLD_NOW | RTLD_LOCAL))) {
		const char *e = dlerror();

		note(&n, SO_LINE_ERROR, "cannot load %s: %s", lib->path,
		     e ? e : "unknown error");
		answer(SO_LOAD_FAILED, -1, NULL, &n, NULL);
	}
	abi = (so_abi_fn *)dlsym(h, "spank_otel_abi");
	fn = (so_task_env_fn *)dlsym(h, "spank_otel_task_env");
	if ((!abi && !(cfg->flags & SO_FLAG_NO_ABI_CHECK)) || !fn) {
		note(&n, SO_LINE_ERROR, "cannot use %s: it does not export %s", lib->path,
		     fn ? "spank_otel_abi" : "spank_otel_task_env");
		answer(SO_SYMBOL_MISSING, -1, NULL, &n, NULL);
	}
	if (abi && (rc = abi()) != SO_ABI_VERSION) {
		note(&n, SO_LINE_ERROR, "cannot use %s: library ABI %d, this plugin needs "
			      "ABI %d (install matching versions)",
		     lib->path, rc, SO_ABI_VERSION);
		answer(SO_ABI_MISMATCH, -1, NULL, &n, NULL);
	}
	/* abi() returns once the Go runtime has started. */
	loading = so_monotonic_us() - loading;
	bound_memory(so_membound_call, &n);

	errno = 0;
	if (!(envp = read_env(&rq))) {
		if (errno == ENOMEM)
			note(&n, SO_LINE_ERROR, "the task's environment (%u bytes) does "
				      "not fit in the helper's memory bound of %llu MiB "
				      "for the call; %s left unchanged",
			     (unsigned)rq.env_bytes, SO_HELPER_CALL_MEMORY >> 20, ENV_VAR);
		else
			note(&n, SO_LINE_ERROR, "the helper process received a damaged request");
		answer(SO_HELPER_FAILED, -1, NULL, &n, NULL);
	}
	called = so_monotonic_us();
	rq.task.envp = envp;
	rq.task.exclude = cfg->exclude;
	rq.task.node_files = cfg->node_files;
	rq.task.node_files_len = cfg->node_files ? cfg->node_files_len : 0;
	rc = fn(&rq.task, &value, &liblog);
	called = so_monotonic_us() - called;
	/* All of it is on the task's way to execve now. */
	note(&n, SO_LINE_DEBUG, "helper: placed in %lld us, library loaded and started "
		      "in %lld us, call %lld us",
	     placing, loading, called);
	answer(SO_CALLED, rc, value, &n, liblog);
}
