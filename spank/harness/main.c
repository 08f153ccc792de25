/*
 * spank-otel-harness - run the spank-otel library exactly as the SPANK
 * plugin does, outside Slurm.
 *
 * The library is opened and checked in this process (the plugin does that
 * in the slurmstepd parent). A forked "task child" then starts the helper
 * process (the plugin's task_init_privileged), optionally becomes another
 * user and enters a user and mount namespace of its own with a forged /proc
 * (what a container plugin before spank-otel's task_init can do), and asks
 * the helper for the value (task_init). The same libfile.c, helper.c and
 * helper_main.c as the plugin are compiled in.
 *
 *   spank-otel-harness --lib PATH [options]      one task, report on stdout
 *   spank-otel-harness --bench N --lib PATH      N tasks, nanoseconds and
 *                                                page faults each
 *   spank-otel-harness --cgroup-check DIR --pid N [--join]
 *                                                the cgroup code on a fake
 *                                                tree, no process, no root
 *
 * The report has one item per line: status=, rc=, value= (or value_len=),
 * log= (one per library log line), msg <level> (the plugin's log lines),
 * state= (the task child before starting the helper against after the
 * call: same, or what changed), before=/after= summaries, ignored=.
 * The exit code is the status number (0 = called), or 128+signal when the
 * task child itself died.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../budget.h"
#include "../cgroup.h"
#include "../headroom.h"
#include "../helper.h"
#include "../libfile.h"
#include "../nodefiles.h"
#include "../pidfd.h"
#include "../solog.h"
#include "../wire.h"
#include "procstate.h"

extern char **environ;

#define MAX_SETUP 64

struct rlimit_setup {
	int resource;
	struct rlimit value;
};

/* Signals named on the command line, for one setting. */
struct signals {
	int sig[MAX_SETUP];
	int n;
};

/* How the task child ends before task_init, if it does. */
enum { TASK_CALLS, TASK_EXITS, TASK_KILLED };

struct config {
	const char *lib;
	const char *env_file;
	const char *exclude;
	long max_env;
	int timeout_ms;
	uid_t trusted_uid;
	long as_uid, as_gid;
	int task_index;
	unsigned local_tasks; /* the step's tasks on the node (--local-tasks) */
	int open_in_child;
	int reuse_fd;
	const char *proc_overlay; /* library the forged /proc points to */
	int load_in_task;         /* the old design, as a control */
	int show_value_len;
	unsigned flags;
	long bench;
	struct signals ignore, block, handle, raise_sig;
	struct rlimit_setup rl[MAX_SETUP];
	int nrl;
	/* what an earlier plugin may leave in the task child */
	int keepcaps;
	long securebits;
	int thread;
	const char *deny; /* --deny: capset or capbset-drop */
	/* the user the task becomes between the callbacks, when it is not
	 * the helper's (--task-user) */
	long task_uid, task_gid;
	/* where slurmstepd's parent puts the task between the callbacks */
	const char *place_cgroup[MAX_SETUP];
	int nplace_cgroup;
	const char *place_cpus;
	int place_pgid;
	int lib_fd; /* move the checked library to this descriptor */
	/* --watch-helper: the parent looks at the helper while it lives and
	 * waits this long for it to be gone once the task child has ended */
	int watch_ms;
	int watch_w, watch_r; /* task child: pid out, go-ahead in */
	int task_end;         /* --task-exits, --task-killed */
	int stop_helper;      /* --stop-helper */
	int request_only;     /* --request-only */
	const char *task_cgroup_file; /* --task-cgroup-file */
	/* --node-files, --dump-node-files: below which root the node's
	 * files are read ("/" for this machine), and what was read */
	const char *node_root;
	int dump_node_files;
	struct so_node_files node_files;
	/* --cgroup-check */
	const char *cgroup_check;
	long check_pid;
	int check_join;
};

/* Log lines are kept until the report: printing while the task child is
 * being measured would change its memory map. */
static char msgs[65536];
static size_t msgs_len;

static void keep_emit(void *ctx, enum so_level level, const char *msg)
{
	int n;

	(void)ctx;
	n = snprintf(msgs + msgs_len, sizeof(msgs) - msgs_len,
		     "msg %s spank-otel: %s\n", so_level_name(level), msg);
	if (n > 0 && (size_t)n < sizeof(msgs) - msgs_len)
		msgs_len += (size_t)n;
}

static void print_emit(void *ctx, enum so_level level, const char *msg)
{
	(void)ctx;
	printf("msg %s spank-otel: %s\n", so_level_name(level), msg);
}

/* --bench: errors only, on stderr at once, so that a refused library or a
 * task without a value says why and the timings on stdout stay clean. */
static void error_emit(void *ctx, enum so_level level, const char *msg)
{
	(void)ctx;
	if (level == SO_LOG_ERROR)
		fprintf(stderr, "spank-otel-harness: %s\n", msg);
}

static const struct so_logger keep_logger = { keep_emit, NULL };
static const struct so_logger print_logger = { print_emit, NULL };
static const struct so_logger error_logger = { error_emit, NULL };

static void die(const char *fmt, const char *arg)
{
	fprintf(stderr, "spank-otel-harness: ");
	fprintf(stderr, fmt, arg);
	fputc('\n', stderr);
	exit(64);
}

static int parse_signal(const char *s)
{
	char *end = NULL;
	long n = strtol(s, &end, 10);
	int sig;

	if (end != s && *end == '\0' && n > 0 && n < _NSIG)
		return (int)n;
	if (!strncasecmp(s, "SIG", 3))
		s += 3;
	for (sig = 1; sig < _NSIG; sig++) {
		const char *abbrev = sigabbrev_np(sig);

		if (abbrev && !strcasecmp(abbrev, s))
			return sig;
	}
	die("unknown signal \"%s\"", s);
	return -1;
}

/* Appends the signal an option names to its list. */
static void add_signal(struct signals *list, const char *option, const char *arg)
{
	if (list->n >= MAX_SETUP)
		die("too many %s", option);
	list->sig[list->n++] = parse_signal(arg);
}

static rlim_t parse_size(const char *s)
{
	char *end = NULL;
	unsigned long long v;

	if (!strcasecmp(s, "unlimited") || !strcasecmp(s, "inf"))
		return RLIM_INFINITY;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		die("bad size \"%s\"", s);
	switch (*end) {
	case 'k': case 'K':
		v <<= 10, end++;
		break;
	case 'm': case 'M':
		v <<= 20, end++;
		break;
	case 'g': case 'G':
		v <<= 30, end++;
		break;
	}
	if (*end)
		die("bad size \"%s\"", s);
	return (rlim_t)v;
}

/* RES=SOFT:HARD, e.g. AS=512M:unlimited */
static void parse_rlimit(struct config *c, const char *spec)
{
	static const struct { const char *name; int res; } names[] = {
		{ "AS", RLIMIT_AS }, { "DATA", RLIMIT_DATA },
		{ "STACK", RLIMIT_STACK }, { "NPROC", RLIMIT_NPROC },
		{ "NOFILE", RLIMIT_NOFILE },
	};
	char buf[128], *eq, *colon;
	size_t i;

	if (c->nrl >= MAX_SETUP)
		die("too many --setrlimit%s", "");
	snprintf(buf, sizeof(buf), "%s", spec);
	if (!(eq = strchr(buf, '=')) || !(colon = strchr(eq, ':')))
		die("--setrlimit wants RES=SOFT:HARD, not \"%s\"", spec);
	*eq = *colon = '\0';
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcasecmp(buf, names[i].name))
			break;
	if (i == sizeof(names) / sizeof(names[0]))
		die("unknown limit \"%s\"", buf);
	c->rl[c->nrl].resource = names[i].res;
	c->rl[c->nrl].value.rlim_cur = parse_size(eq + 1);
	c->rl[c->nrl].value.rlim_max = parse_size(colon + 1);
	c->nrl++;
}

/* Reads "K=V" entries separated by NUL bytes (like /proc/PID/environ) or,
 * when the file has none, by newlines. */
static char **read_env_file(const char *path)
{
	FILE *f = fopen(path, "re");
	char *data = NULL, **env, *p, *end, sep;
	size_t len = 0, cap = 0, n = 0, i;

	if (!f)
		die("cannot open %s", path);
	for (;;) {
		size_t got;

		if (cap - len < 4096) {
			cap = cap ? cap * 2 : 65536;
			if (!(data = realloc(data, cap + 1)))
				die("out of memory%s", "");
		}
		got = fread(data + len, 1, cap - len, f);
		len += got;
		if (got == 0)
			break;
	}
	fclose(f);
	data[len] = '\0';
	sep = memchr(data, '\0', len) ? '\0' : '\n';
	for (i = 0; i < len; i++)
		if (data[i] == sep)
			n++;
	if (!(env = calloc(n + 2, sizeof(char *))))
		die("out of memory%s", "");
	n = 0;
	for (p = data, end = data + len; p < end;) {
		char *q = memchr(p, sep, (size_t)(end - p));

		if (!q)
			q = end;
		*q = '\0';
		if (*p)
			env[n++] = p;
		p = q + 1;
	}
	env[n] = NULL;
	return env;
}

static long long now_ns(void);

/* Signals a --handle handler saw in the task. */
static volatile sig_atomic_t handled[_NSIG];

static void count_signal(int sig)
{
	handled[sig]++;
}

static void *idle_thread(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

#if defined(__x86_64__)
#define NATIVE_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define NATIVE_ARCH AUDIT_ARCH_AARCH64
#endif

/* --deny: a seccomp filter, inherited by the helper, makes every capset,
 * or every prctl(PR_CAPBSET_DROP), fail with EPERM (what a site's policy
 * can do), so that the helper cannot narrow its capabilities. */
static void deny_call(const char *name)
{
	int any = !strcmp(name, "capset");
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NATIVE_ARCH, 0, 5),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, any ? SYS_capset : SYS_prctl, 0, 3),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
		any ? (struct sock_filter)BPF_STMT(BPF_JMP | BPF_JA, 0)
		    : (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PR_CAPBSET_DROP, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { sizeof(f) / sizeof(f[0]), f };

	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) != 0) {
		fprintf(stderr, "--deny: seccomp: %s\n", strerror(errno));
		_exit(65);
	}
}

/* The task child's state as Slurm and earlier plugins leave it: signals,
 * mask, pending signals, limits, capabilities kept across setuid, threads. */
static void setup_task(const struct config *c)
{
	sigset_t set;
	int i;

	for (i = 0; i < c->ignore.n; i++)
		signal(c->ignore.sig[i], SIG_IGN);
	for (i = 0; i < c->handle.n; i++) {
		struct sigaction sa;

		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = count_signal;
		sa.sa_flags = SA_RESTART;
		sigaction(c->handle.sig[i], &sa, NULL);
	}
	sigemptyset(&set);
	for (i = 0; i < c->block.n; i++)
		sigaddset(&set, c->block.sig[i]);
	if (c->block.n)
		sigprocmask(SIG_BLOCK, &set, NULL);
	for (i = 0; i < c->raise_sig.n; i++)
		raise(c->raise_sig.sig[i]); /* pending when blocked */
	for (i = 0; i < c->nrl; i++)
		if (setrlimit(c->rl[i].resource, &c->rl[i].value) != 0) {
			fprintf(stderr, "setrlimit: %s\n", strerror(errno));
			_exit(65);
		}
	if (c->keepcaps && prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) != 0) {
		fprintf(stderr, "PR_SET_KEEPCAPS: %s\n", strerror(errno));
		_exit(65);
	}
	if (c->securebits >= 0 &&
	    prctl(PR_SET_SECUREBITS, c->securebits, 0, 0, 0) != 0) {
		fprintf(stderr, "PR_SET_SECUREBITS: %s\n", strerror(errno));
		_exit(65);
	}
	if (c->deny)
		deny_call(c->deny);
	if (c->thread) {
		pthread_t t;

		if (pthread_create(&t, NULL, idle_thread, NULL) != 0) {
			fprintf(stderr, "pthread_create failed\n");
			_exit(65);
		}
	}
}

/* What slurmstepd's parent does to the task between the two callbacks:
 * its cgroups, CPU mask, process group. */
static void place_task(const struct config *c)
{
	int i;

	for (i = 0; i < c->nplace_cgroup; i++) {
		char path[PATH_MAX], pid[24];
		int fd;

		snprintf(path, sizeof(path), "%s/cgroup.procs", c->place_cgroup[i]);
		snprintf(pid, sizeof(pid), "%d", (int)getpid());
		fd = open(path, O_WRONLY | O_CLOEXEC);
		if (fd < 0 || write(fd, pid, strlen(pid)) < 0) {
			fprintf(stderr, "placing the task in %s: %s\n",
				c->place_cgroup[i], strerror(errno));
			_exit(65);
		}
		close(fd);
	}
	if (c->place_cpus) {
		cpu_set_t set;
		char *p = (char *)c->place_cpus, *end;

		CPU_ZERO(&set);
		while (*p) {
			long a = strtol(p, &end, 10), b = a;

			if (*end == '-')
				b = strtol(end + 1, &end, 10);
			for (; a <= b; a++)
				CPU_SET((int)a, &set);
			p = *end == ',' ? end + 1 : end;
			if (end == p && *p)
				break;
		}
		if (sched_setaffinity(0, sizeof(set), &set) != 0) {
			fprintf(stderr, "sched_setaffinity: %s\n", strerror(errno));
			_exit(65);
		}
	}
	if (c->place_pgid && setpgid(0, 0) != 0) {
		fprintf(stderr, "setpgid: %s\n", strerror(errno));
		_exit(65);
	}
}

/* The task's placement, to compare with what the helper reports. */
static void print_placement(void)
{
	char buf[4096], *p;
	cpu_set_t set;
	int fd, cpu, first = 1;
	ssize_t n;

	fd = open("/proc/self/cgroup", O_RDONLY | O_CLOEXEC);
	n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	if (fd >= 0)
		close(fd);
	buf[n > 0 ? n : 0] = '\0';
	for (p = buf; *p; p++)
		if (*p == '\n')
			*p = ';';
	printf("task_cgroup=%s\n", buf);
	printf("task_pgid=%d\n", (int)getpgid(0));
	printf("task_cpus=");
	if (sched_getaffinity(0, sizeof(set), &set) == 0)
		for (cpu = 0; cpu < CPU_SETSIZE; cpu++)
			if (CPU_ISSET(cpu, &set)) {
				printf("%s%d", first ? "" : ":", cpu);
				first = 0;
			}
	printf("\n");
}

/* Between task_init_privileged and task_init Slurm switches the task
 * child to the user. */
static void become_user(const struct config *c)
{
	long uid = c->task_uid >= 0 ? c->task_uid : c->as_uid;
	long gid_arg = c->task_uid >= 0 ? c->task_gid : c->as_gid;
	gid_t gid;

	if (uid < 0 || (uid_t)uid == geteuid())
		return;
	gid = (gid_t)(gid_arg >= 0 ? gid_arg : uid);
	if (setgroups(0, NULL) != 0 || setregid(gid, gid) != 0 ||
	    setreuid((uid_t)uid, (uid_t)uid) != 0) {
		fprintf(stderr, "cannot become uid %ld: %s\n", uid,
			strerror(errno));
		_exit(65);
	}
}

static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = write(fd, text, strlen(text));
	close(fd);
	return n == (ssize_t)strlen(text) ? 0 : -1;
}

/*
 * What a container plugin that runs before spank-otel's task_init can do
 * for its user: enter a user and mount namespace the user owns and put a
 * /proc there whose self/fd/N all point to another library. Anything that
 * resolved /proc/self/fd/N from here on would load that library.
 */
static void forge_proc(const char *evil)
{
	char map[64], fd[64];
	uid_t uid = geteuid();
	gid_t gid = getegid();
	int i;

	/* After the switch from root the task is not dumpable, which makes
	 * its /proc/self/uid_map root's; a container runtime has exec'd. */
	prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
	if (unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) {
		fprintf(stderr, "unshare: %s\n", strerror(errno));
		_exit(66);
	}
	snprintf(map, sizeof(map), "%u %u 1", (unsigned)uid, (unsigned)uid);
	write_file("/proc/self/uid_map", map);
	write_file("/proc/self/setgroups", "deny");
	snprintf(map, sizeof(map), "%u %u 1", (unsigned)gid, (unsigned)gid);
	write_file("/proc/self/gid_map", map);
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
	    mount("forged", "/proc", "tmpfs", 0, "mode=755") != 0 ||
	    mkdir("/proc/self", 0755) != 0 || mkdir("/proc/self/fd", 0755) != 0) {
		fprintf(stderr, "forging /proc: %s\n", strerror(errno));
		_exit(66);
	}
	for (i = 0; i < 256; i++) {
		snprintf(fd, sizeof(fd), "/proc/self/fd/%d", i);
		if (symlink(evil, fd) != 0) {
			fprintf(stderr, "symlink %s: %s\n", fd, strerror(errno));
			_exit(66);
		}
	}
}

static void print_log_lines(const char *log)
{
	const char *line = log;

	while (line && *line) {
		const char *e = strchr(line, '\n');
		int len = e ? (int)(e - line) : (int)strlen(line);

		printf("log=%.*s\n", len, line);
		line = e ? e + 1 : NULL;
	}
}

/* --watch-helper, the task child's part: hands the helper's pid to the
 * parent and waits until the parent has looked at the helper. */
static void show_helper(const struct config *c, pid_t helper)
{
	char go;

	if (c->watch_w < 0)
		return;
	if (write(c->watch_w, &helper, sizeof(helper)) != sizeof(helper) ||
	    read(c->watch_r, &go, 1) != 1) {
		fprintf(stderr, "--watch-helper: the parent is gone\n");
		_exit(65);
	}
}

/* --stop-helper: what the helper's user can do to it between the
 * callbacks (kill -STOP, kill -CONT; scancel -s STOP once it is in the
 * job's cgroup): the task, as the user, stops and continues it through
 * its pidfd, waiting each time until the kernel has seen it (and sent the
 * task its SIGCHLD). Returns "stopped+continued", or what failed. */
static const char *stop_and_continue(const struct so_helper *h)
{
	siginfo_t si;

	if (syscall(SYS_pidfd_send_signal, h->pidfd, SIGSTOP, NULL, 0) != 0) {
		fprintf(stderr, "stop: %s\n", strerror(errno));
		return "cannot-stop";
	}
	if (waitid(P_PIDFD, (id_t)h->pidfd, &si, WSTOPPED | WNOWAIT | __WALL) != 0)
		return "not-stopped";
	if (syscall(SYS_pidfd_send_signal, h->pidfd, SIGCONT, NULL, 0) != 0)
		return "cannot-continue";
	if (waitid(P_PIDFD, (id_t)h->pidfd, &si, WCONTINUED | WNOWAIT | __WALL) != 0)
		return "not-continued";
	return "stopped+continued";
}

/* --request-only: a request as task_init sends it, with no environment,
 * and then no kill and no reaping within the timeout: the task waits up to
 * ten times the timeout for the helper to end by itself, then reaps it.
 * Prints how and when it ended. */
static int request_only(const struct config *c, struct so_helper *h)
{
	struct so_wire_request rq;
	struct pollfd p = { h->pidfd, POLLIN, 0 };
	long long t0 = now_ns();
	siginfo_t si;

	memset(&rq, 0, sizeof(rq));
	rq.magic = SO_WIRE_REQUEST_MAGIC;
	rq.task.max_env_bytes = 1 << 20;
	rq.deadline_ms = (uint32_t)c->timeout_ms;
	if (send(h->sock, &rq, sizeof(rq), MSG_NOSIGNAL) != (ssize_t)sizeof(rq)) {
		printf("request_only=cannot-send\n");
		return SO_HELPER_FAILED;
	}
	if (poll(&p, 1, c->timeout_ms * 10) != 1) {
		printf("request_only=helper-still-running after %d ms\n",
		       c->timeout_ms * 10);
		syscall(SYS_pidfd_send_signal, h->pidfd, SIGKILL, NULL, 0);
	}
	memset(&si, 0, sizeof(si));
	waitid(P_PIDFD, (id_t)h->pidfd, &si, WEXITED | __WALL);
	if (si.si_code == CLD_KILLED || si.si_code == CLD_DUMPED)
		printf("helper_end=signal %s after %lld ms\n",
		       sigabbrev_np(si.si_status), (now_ns() - t0) / 1000000);
	else
		printf("helper_end=exit %d after %lld ms\n", si.si_status,
		       (now_ns() - t0) / 1000000);
	return SO_TIMEOUT;
}

static int run_task(const struct config *c, struct so_lib *lib, char **env,
		    int quiet)
{
	const struct so_logger *lg = quiet ? &error_logger : &keep_logger;
	static struct so_procstate before, after;
	struct so_helper_config cfg;
	struct so_helper h;
	struct so_result res;
	enum so_status st;
	static char diff[1024], line[1024], value[1 << 21], log[1 << 17];
	static char stop_result[32];
	struct so_task_request req;
	size_t value_len = 0;
	int i, rc = 0, have_value = 0, started;

	setup_task(c);
	if (c->reuse_fd && lib->fd >= 0) {
		/* Another file on the library's descriptor number, as if some
		 * code between the check and the load closed and reused it. */
		int other = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);

		if (other >= 0 && dup3(other, lib->fd, O_CLOEXEC) >= 0)
			close(other);
	}
	if (c->open_in_child) {
		st = so_lib_open(lib, c->lib, c->trusted_uid, lg);
		if (st != SO_CALLED) {
			if (!quiet)
				printf("%sstatus=%s\n", msgs, so_status_name(st));
			return st;
		}
	}
	/* As the shim asks: its own inputs of the budget, with no
	 * arguments. */
	memset(&req, 0, sizeof(req));
	req.envp = env;
	so_exec_inputs(&req, env, 0, NULL);
	req.max_env_bytes = c->max_env;
	memset(&cfg, 0, sizeof(cfg));
	cfg.lib = lib;
	cfg.exclude = c->exclude;
	cfg.flags = c->flags;
	cfg.cpu_index = c->task_index;
	cfg.helpers = c->local_tasks;
	cfg.cgroup_files.task = c->task_cgroup_file;
	cfg.node_files = c->node_files.buf;
	cfg.node_files_len = c->node_files.len;
	if (c->as_uid >= 0) {
		cfg.drop_creds = 1;
		cfg.uid = (uid_t)c->as_uid;
		cfg.gid = (gid_t)(c->as_gid >= 0 ? c->as_gid : c->as_uid);
	}

	/* The task gives up the library's descriptor (the helper has it), so
	 * it is not part of what must be the same afterwards. */
	if (!quiet)
		so_procstate_take(&before, 0,
				  c->load_in_task ? -1 : lib->fd);
	/* task_init_privileged */
	started = so_helper_start(&h, &cfg, lg) == 0;
	if (!started && quiet)
		return SO_HELPER_FAILED;
	if (!c->load_in_task && lib->fd >= 0) {
		close(lib->fd); /* as the plugin: the task keeps no copy */
		lib->fd = -1;
	}
	/* between the callbacks: Slurm places the task and switches to the
	 * user; a container plugin may enter its namespaces */
	place_task(c);
	become_user(c);
	if (c->proc_overlay)
		forge_proc(c->proc_overlay);
	if (c->load_in_task) {
		char path[64];

		snprintf(path, sizeof(path), "/proc/self/fd/%d", lib->fd);
		if (!dlopen(path, RTLD_NOW | RTLD_LOCAL))
			printf("load_in_task_error=%s\n", dlerror());
		else
			printf("load_in_task=loaded\n");
	}
	if (started)
		show_helper(c, h.pid);
	if (c->stop_helper && started)
		snprintf(stop_result, sizeof(stop_result), "%s",
			 stop_and_continue(&h));
	if (c->task_end == TASK_EXITS)
		_exit(0);
	if (c->task_end == TASK_KILLED)
		raise(SIGKILL);
	if (c->request_only && started)
		return request_only(c, &h);
	/* task_init */
	if (started) {
		st = so_helper_call(&h, &req, c->timeout_ms, &res, lg);
	} else {
		memset(&res, 0, sizeof(res));
		st = SO_HELPER_FAILED;
	}
	if (quiet) {
		so_result_free(&res);
		return st;
	}
	/* Kept in static memory: the result's mapping must be gone when the
	 * task is measured. */
	if (st == SO_CALLED) {
		rc = res.rc;
		have_value = res.value != NULL;
		value_len = res.value_len;
		snprintf(value, sizeof(value), "%s", res.value ? res.value : "");
		snprintf(log, sizeof(log), "%s", res.log ? res.log : "");
	}
	so_result_free(&res);
	so_procstate_take(&after, 0, -1);

	fputs(msgs, stdout);
	printf("status=%s\n", so_status_name(st));
	print_placement();
	for (i = 0; i < c->handle.n; i++)
		printf("handled_%s=%d\n", sigabbrev_np(c->handle.sig[i]),
		       (int)handled[c->handle.sig[i]]);
	if (stop_result[0])
		printf("stop_helper=%s\n", stop_result);
	if (st == SO_CALLED) {
		printf("rc=%d\n", rc);
		if (have_value && c->show_value_len)
			printf("value_len=%zu\n", value_len);
		else if (have_value)
			printf("value=%s\n", value);
		print_log_lines(log);
	}
	if (so_procstate_diff(&before, &after, diff, sizeof(diff)))
		printf("state=changed %s\n", diff);
	else
		printf("state=same\n");
	so_procstate_format(&before, line, sizeof(line));
	printf("before=%s\n", line);
	so_procstate_format(&after, line, sizeof(line));
	printf("after=%s\n", line);
	printf("ignored=");
	for (i = 1; i < _NSIG; i++) {
		struct sigaction sa;
		const char *name = sigabbrev_np(i);

		if (sigaction(i, NULL, &sa) != 0 ||
		    (sa.sa_flags & SA_SIGINFO) || sa.sa_handler != SIG_IGN)
			continue;
		if (name)
			printf("%s ", name);
		else
			printf("%d ", i);
	}
	printf("\n");
	return st;
}

/* --cgroup-check DIR: the cgroup code on a fake tree. DIR holds
 * task.cgroup and self.cgroup (as /proc/PID/cgroup), mountinfo, and root/
 * (as /sys/fs/cgroup). Prints each cgroup of task.cgroup and the directory
 * found for it, the headroom verdict, and with --join what joining did. */
static int cgroup_check(const struct config *c)
{
	static struct so_cgroups task, self;
	char task_file[PATH_MAX], self_file[PATH_MAX], mountinfo[PATH_MAX];
	char root[PATH_MAX], dir[PATH_MAX], why[PATH_MAX + 256];
	struct so_cgroup_files f = { root, mountinfo, task_file, self_file };
	pid_t pid = (pid_t)c->check_pid;
	int i, j;

	snprintf(task_file, sizeof(task_file), "%s/task.cgroup", c->cgroup_check);
	snprintf(self_file, sizeof(self_file), "%s/self.cgroup", c->cgroup_check);
	snprintf(mountinfo, sizeof(mountinfo), "%s/mountinfo", c->cgroup_check);
	snprintf(root, sizeof(root), "%s/root", c->cgroup_check);
	if (so_cgroups_read(task_file, &task) != 0) {
		printf("error=cannot read %s: %s\n", task_file, strerror(errno));
		return 1;
	}
	if (so_cgroups_read(self_file, &self) != 0)
		self.n = 0;
	for (i = 0; i < task.n; i++) {
		const struct so_cgroup *cg = &task.cg[i];

		printf("cgroup %d:%s:%s dir=%s\n", cg->id, cg->controllers,
		       cg->path,
		       so_cgroup_locate(&f, cg, pid, dir, sizeof(dir), NULL) == 0
			       ? dir
			       : "-");
	}
	if (so_headroom_ok(&f, &task, pid, c->local_tasks, why, sizeof(why)))
		printf("headroom=ok\n");
	else
		printf("headroom=short %s\n", why);
	if (c->check_join) {
		j = so_cgroups_join(&f, &task, &self, pid,
				    c->as_uid >= 0 ? (uid_t)c->as_uid : (uid_t)-1,
				    why, sizeof(why));
		if (j < 0)
			printf("join_error=%s\n", why);
		else
			printf("joined=%d\n", j);
	}
	return 0;
}

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int wait_child(pid_t pid, int report)
{
	int status;

	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return 70;
	if (WIFSIGNALED(status)) {
		if (report)
			fprintf(stderr,
				"spank-otel-harness: task child killed by "
				"signal %d (%s)\n",
				WTERMSIG(status), strsignal(WTERMSIG(status)));
		return 128 + WTERMSIG(status);
	}
	return WEXITSTATUS(status);
}

/* The first line of path that starts with key, without it; "" if none. */
static void proc_line(const char *path, const char *key, char *out, size_t len)
{
	char buf[4096], *p;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	out[0] = '\0';
	n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return;
	buf[n] = '\0';
	for (p = buf; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (!strncmp(p, key, strlen(key))) {
			size_t k = strcspn(p + strlen(key), "\n");

			snprintf(out, len, "%.*s", (int)k, p + strlen(key));
			for (p = out; *p; p++)
				if (*p == '\t')
					*p = ' ';
			return;
		}
}

/* The whole of a /proc file on one line, its newlines as ';'. */
static void proc_all(const char *path, char *out, size_t len)
{
	ssize_t n;
	char *p;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	n = fd >= 0 ? read(fd, out, len - 1) : -1;
	if (fd >= 0)
		close(fd);
	out[n > 0 ? n : 0] = '\0';
	for (p = out; *p; p++)
		if (*p == '\n')
			*p = ';';
}

/* The Cap* lines of a status file, as "CapInh=...,CapPrm=...,...". */
static void helper_caps(const char *status, char *out, size_t len)
{
	static const char *const names[] = { "CapInh", "CapPrm", "CapEff",
					     "CapBnd", "CapAmb" };
	char key[16], v[32];
	size_t i, at = 0;

	out[0] = '\0';
	for (i = 0; i < sizeof(names) / sizeof(names[0]) && at < len; i++) {
		snprintf(key, sizeof(key), "%s:\t", names[i]);
		proc_line(status, key, v, sizeof(v));
		at += (size_t)snprintf(out + at, len - at, "%s%s=%s", i ? "," : "",
				       names[i], v);
	}
}

/* --watch-helper, the parent's part: learns the helper's pid from the
 * task child, looks at the helper once it has started (its name is set
 * after its first steps), lets the task child go on, and once that has
 * ended waits up to watch_ms for the helper to be gone. Prints what it
 * saw; a helper still there at the end is killed (it is this harness's)
 * and reported as left. Returns the task child's exit code. */
static int watch_helper(const struct config *c, pid_t task, int pid_r, int go_w)
{
	char path[64], comm[64], uid[128], ppid[32], cgroup[4096], caps[160];
	struct pollfd p = { -1, POLLIN, 0 };
	pid_t helper;
	long long t0;
	int rc, i;

	if (read(pid_r, &helper, sizeof(helper)) != sizeof(helper)) {
		close(go_w);
		return wait_child(task, 1); /* no helper was started */
	}
	p.fd = (int)syscall(SYS_pidfd_open, helper, 0);
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)helper);
	for (i = 0; i < 2000; i++) {
		proc_line(path, "", comm, sizeof(comm));
		if (!strcmp(comm, "spank-otel"))
			break;
		usleep(1000);
	}
	snprintf(path, sizeof(path), "/proc/%d/status", (int)helper);
	proc_line(path, "Uid:\t", uid, sizeof(uid));
	proc_line(path, "PPid:\t", ppid, sizeof(ppid));
	helper_caps(path, caps, sizeof(caps));
	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)helper);
	proc_all(path, cgroup, sizeof(cgroup));
	if (write(go_w, "g", 1) != 1)
		die("--watch-helper: %s", strerror(errno));
	close(go_w);
	rc = wait_child(task, 1);
	t0 = now_ns();
	printf("task_pid=%d\nhelper_pid=%d\nhelper_comm=%s\nhelper_uid=%s\n"
	       "helper_ppid=%s\nhelper_cgroup=%s\nhelper_caps=%s\n",
	       (int)task, (int)helper, comm, uid, ppid, cgroup, caps);
	proc_all("/proc/self/cgroup", cgroup, sizeof(cgroup));
	printf("harness_cgroup=%s\n", cgroup);
	if (p.fd < 0) {
		printf("helper_gone=before the task ended\n");
	} else if (poll(&p, 1, c->watch_ms) == 1) {
		printf("helper_gone=within %lld ms\n", (now_ns() - t0) / 1000000);
	} else {
		printf("helper_left=pid %d still running %d ms after its task "
		       "ended; killed now\n", (int)helper, c->watch_ms);
		syscall(SYS_pidfd_send_signal, p.fd, SIGKILL, NULL, 0);
	}
	return rc;
}

static void usage(FILE *f)
{
	fprintf(f,
"usage: spank-otel-harness --lib PATH [options]\n"
"       spank-otel-harness --bench N --lib PATH [options]\n"
"  --lib PATH            library to load (absolute path)\n"
"  --env-file FILE       task environment, K=V entries separated by NUL or\n"
"                        newline (default: this program's environment)\n"
"  --exclude LIST        comma-separated keys passed to the library\n"
"  --max-env N           execve budget passed to the library (default:\n"
"                        computed from RLIMIT_STACK like the plugin)\n"
"  --timeout MS          how long the task waits for the helper (2000)\n"
"  --trusted-uid UID     owner accepted besides root (default: euid)\n"
"  --as-user UID[:GID]   the helper drops to this user, and the task\n"
"                        becomes it between the two callbacks\n"
"  --task-index N        local task id (which CPU the helper keeps)\n"
"  --local-tasks N       the step's tasks on the node, whose helpers the\n"
"                        room checked is for (1)\n"
"  --open-in-child       open and check in the task, not the parent\n"
"  --lib-fd N            the library's descriptor is moved to N after the\n"
"                        check (leaving 3 and 4 free, as in a real task)\n"
"  --reuse-fd            the task puts another file on the library's\n"
"                        descriptor before starting the helper (refused)\n"
"  --proc-overlay LIB    after starting the helper, the task enters a user\n"
"                        and mount namespace whose /proc/self/fd/* all\n"
"                        point to LIB (needs --as-user)\n"
"  --load-in-task        also dlopen /proc/self/fd/N in the task itself, as\n"
"                        the old in-process design did (a control)\n"
"  --value-len           print value_len= instead of the value\n"
"  --no-abi-check        accept a library without spank_otel_abi\n"
"  --ignore SIG          task ignores SIG first (repeatable)\n"
"  --block SIG           task blocks SIG first (repeatable)\n"
"  --handle SIG          task counts SIG with a handler; the report says\n"
"                        handled_SIG=N (repeatable)\n"
"  --raise SIG           task raises SIG first, after blocking (pending)\n"
"  --keepcaps            task sets PR_SET_KEEPCAPS first (an earlier plugin)\n"
"  --securebits N        task sets these securebits first\n"
"  --thread              task starts a second thread first\n"
"  --deny CALL           task makes CALL fail with EPERM (seccomp, inherited\n"
"                        by the helper): capset or capbset-drop\n"
"  --task-user UID[:GID] the task becomes this user between the callbacks\n"
"                        instead of --as-user's (the helper keeps those)\n"
"  --place-cgroup DIR    between the callbacks the task moves into this\n"
"                        cgroup, as slurmstepd's parent does (repeatable)\n"
"  --place-cpus LIST     ... and sets this CPU mask (\"1\", \"0-3,6\")\n"
"  --place-pgid          ... and becomes a process group of its own\n"
"  --task-exits          the task child exits before task_init (after\n"
"                        placement and --task-user/--as-user)\n"
"  --task-killed         ... or is killed by SIGKILL there\n"
"  --stop-helper         between the callbacks the task stops and\n"
"                        continues the helper; report stop_helper=\n"
"  --request-only        the task sends a request without environment,\n"
"                        then neither kills nor reaps the helper until it\n"
"                        ends by itself (at most 10x --timeout); reports\n"
"                        helper_end=\n"
"  --task-cgroup-file F  the helper reads the task's cgroups from F\n"
"                        instead of /proc/<task>/cgroup\n"
"  --watch-helper MS     the parent reports the helper's pid, uid, ppid,\n"
"                        cgroups and capability sets (helper_caps=) while it\n"
"                        lives (once it has named itself, after narrowing\n"
"                        them), and whether it is gone\n"
"                        within MS of its task's end (helper_gone=, or\n"
"                        helper_left= and the helper killed)\n"
"  --node-files ROOT     the parent reads the node's files below ROOT (\"/\"\n"
"                        for this machine) once, as the plugin's user_init,\n"
"                        with the environment's SLURM_CONF, and hands them\n"
"                        to every helper; reports node_files=N bytes= read_us=\n"
"                        (not with --bench)\n"
"  --dump-node-files ROOT  no task, no --lib: write those records to stdout\n"
"  --setrlimit R=S:H     task sets limit R (AS, DATA, STACK, NPROC,\n"
"                        NOFILE) first; sizes take K/M/G or 'unlimited'\n"
"                        (repeatable)\n"
"  --bench N             run N tasks one after another (fork, helper fork,\n"
"                        load, call, reap); print per task, one per line,\n"
"                        the nanoseconds and the minor page faults of the\n"
"                        task and its helper; errors (why a library is\n"
"                        refused, why a task got no value) go to stderr.\n"
"                        Implies --no-abi-check so an empty library can be\n"
"                        timed.\n"
"  --cgroup-check DIR --pid N [--join] [--as-user UID]\n"
"                        no task: find the cgroups of DIR/task.cgroup in\n"
"                        the fake tree DIR/root (or where DIR/mountinfo\n"
"                        says), as the process N; print them, the headroom\n"
"                        verdict and (--join) what joining them from\n"
"                        DIR/self.cgroup does (directories not root's are\n"
"                        joined as UID)\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "lib", required_argument, NULL, 'l' },
		{ "env-file", required_argument, NULL, 'e' },
		{ "exclude", required_argument, NULL, 'x' },
		{ "max-env", required_argument, NULL, 'm' },
		{ "timeout", required_argument, NULL, 'T' },
		{ "trusted-uid", required_argument, NULL, 't' },
		{ "as-user", required_argument, NULL, 'u' },
		{ "task-index", required_argument, NULL, 'k' },
		{ "local-tasks", required_argument, NULL, 1020 },
		{ "open-in-child", no_argument, NULL, 'o' },
		{ "reuse-fd", no_argument, NULL, 'R' },
		{ "proc-overlay", required_argument, NULL, 'P' },
		{ "load-in-task", no_argument, NULL, 'L' },
		{ "value-len", no_argument, NULL, 'V' },
		{ "no-abi-check", no_argument, NULL, 'A' },
		{ "ignore", required_argument, NULL, 'i' },
		{ "block", required_argument, NULL, 'b' },
		{ "setrlimit", required_argument, NULL, 'r' },
		{ "bench", required_argument, NULL, 'B' },
		{ "handle", required_argument, NULL, 'H' },
		{ "raise", required_argument, NULL, 'S' },
		{ "keepcaps", no_argument, NULL, 'K' },
		{ "securebits", required_argument, NULL, 'E' },
		{ "thread", no_argument, NULL, 'D' },
		{ "task-user", required_argument, NULL, 'U' },
		{ "place-cgroup", required_argument, NULL, 'C' },
		{ "place-cpus", required_argument, NULL, 'c' },
		{ "place-pgid", no_argument, NULL, 'G' },
		{ "cgroup-check", required_argument, NULL, 'X' },
		{ "pid", required_argument, NULL, 'p' },
		{ "join", no_argument, NULL, 'J' },
		{ "lib-fd", required_argument, NULL, 'F' },
		{ "task-exits", no_argument, NULL, 1001 },
		{ "task-killed", no_argument, NULL, 1002 },
		{ "stop-helper", no_argument, NULL, 1003 },
		{ "request-only", no_argument, NULL, 1004 },
		{ "task-cgroup-file", required_argument, NULL, 1005 },
		{ "watch-helper", required_argument, NULL, 1006 },
		{ "node-files", required_argument, NULL, 1007 },
		{ "dump-node-files", required_argument, NULL, 1008 },
		{ "deny", required_argument, NULL, 1009 },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct config c;
	char **env;
	struct so_lib lib = { .fd = -1 };
	enum so_status st;
	int opt, rc;
	pid_t pid;

	memset(&c, 0, sizeof(c));
	c.trusted_uid = geteuid();
	c.as_uid = c.as_gid = -1;
	c.task_uid = c.task_gid = -1;
	c.securebits = -1;
	c.timeout_ms = 2000;
	c.local_tasks = 1;
	c.watch_w = c.watch_r = -1;
	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		char *end = NULL;

		switch (opt) {
		case 'l':
			c.lib = optarg;
			break;
		case 'e':
			c.env_file = optarg;
			break;
		case 'x':
			c.exclude = optarg;
			break;
		case 'm':
			c.max_env = strtol(optarg, &end, 10);
			if (*end || c.max_env <= 0)
				die("bad --max-env \"%s\"", optarg);
			break;
		case 'T':
			c.timeout_ms = (int)strtol(optarg, &end, 10);
			if (*end || c.timeout_ms <= 0)
				die("bad --timeout \"%s\"", optarg);
			break;
		case 't':
			c.trusted_uid = (uid_t)strtoul(optarg, &end, 10);
			if (*end)
				die("bad --trusted-uid \"%s\"", optarg);
			break;
		case 'u':
			c.as_uid = strtol(optarg, &end, 10);
			if (*end == ':')
				c.as_gid = strtol(end + 1, &end, 10);
			if (*end || c.as_uid < 0)
				die("bad --as-user \"%s\"", optarg);
			break;
		case 'k':
			c.task_index = (int)strtol(optarg, &end, 10);
			if (*end || c.task_index < 0)
				die("bad --task-index \"%s\"", optarg);
			break;
		case 1020:
			c.local_tasks = (unsigned)strtoul(optarg, &end, 10);
			if (*end || c.local_tasks == 0)
				die("bad --local-tasks \"%s\"", optarg);
			break;
		case 'o':
			c.open_in_child = 1;
			break;
		case 'R':
			c.reuse_fd = 1;
			break;
		case 'P':
			c.proc_overlay = optarg;
			break;
		case 'L':
			c.load_in_task = 1;
			break;
		case 'V':
			c.show_value_len = 1;
			break;
		case 'A':
			c.flags |= SO_FLAG_NO_ABI_CHECK;
			break;
		case 'i':
			add_signal(&c.ignore, "--ignore", optarg);
			break;
		case 'b':
			add_signal(&c.block, "--block", optarg);
			break;
		case 'r':
			parse_rlimit(&c, optarg);
			break;
		case 'B':
			c.bench = strtol(optarg, &end, 10);
			if (*end || c.bench <= 0)
				die("bad --bench \"%s\"", optarg);
			c.flags |= SO_FLAG_NO_ABI_CHECK;
			break;
		case 'H':
			add_signal(&c.handle, "--handle", optarg);
			break;
		case 'S':
			add_signal(&c.raise_sig, "--raise", optarg);
			break;
		case 'K':
			c.keepcaps = 1;
			break;
		case 'E':
			c.securebits = strtol(optarg, &end, 0);
			if (*end || c.securebits < 0)
				die("bad --securebits \"%s\"", optarg);
			break;
		case 'D':
			c.thread = 1;
			break;
		case 'U':
			c.task_uid = strtol(optarg, &end, 10);
			if (*end == ':')
				c.task_gid = strtol(end + 1, &end, 10);
			if (*end || c.task_uid < 0)
				die("bad --task-user \"%s\"", optarg);
			break;
		case 'C':
			if (c.nplace_cgroup >= MAX_SETUP)
				die("too many --place-cgroup%s", "");
			c.place_cgroup[c.nplace_cgroup++] = optarg;
			break;
		case 'c':
			c.place_cpus = optarg;
			break;
		case 'G':
			c.place_pgid = 1;
			break;
		case 'X':
			c.cgroup_check = optarg;
			break;
		case 'p':
			c.check_pid = strtol(optarg, &end, 10);
			if (*end || c.check_pid <= 0)
				die("bad --pid \"%s\"", optarg);
			break;
		case 'J':
			c.check_join = 1;
			break;
		case 'F':
			c.lib_fd = (int)strtol(optarg, &end, 10);
			if (*end || c.lib_fd < 3)
				die("bad --lib-fd \"%s\"", optarg);
			break;
		case 1001:
			c.task_end = TASK_EXITS;
			break;
		case 1002:
			c.task_end = TASK_KILLED;
			break;
		case 1003:
			c.stop_helper = 1;
			break;
		case 1004:
			c.request_only = 1;
			break;
		case 1005:
			c.task_cgroup_file = optarg;
			break;
		case 1006:
			c.watch_ms = (int)strtol(optarg, &end, 10);
			if (*end || c.watch_ms <= 0)
				die("bad --watch-helper \"%s\"", optarg);
			break;
		case 1009:
			if (strcmp(optarg, "capset") && strcmp(optarg, "capbset-drop"))
				die("bad --deny \"%s\"", optarg);
			c.deny = optarg;
			break;
		case 1008:
			c.dump_node_files = 1;
			/* fall through */
		case 1007:
			c.node_root = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 64;
		}
	}
	if (c.cgroup_check) {
		if (!c.check_pid || optind != argc)
			die("--cgroup-check needs --pid%s", "");
		return cgroup_check(&c);
	}
	if ((!c.lib && !c.dump_node_files) || optind != argc) {
		usage(stderr);
		return 64;
	}
	if (c.proc_overlay && c.as_uid < 0)
		die("--proc-overlay needs --as-user%s", "");
	env = c.env_file ? read_env_file(c.env_file) : environ;
	if (c.node_root) {
		/* As the plugin's user_init in the step parent, with the
		 * task's SLURM_CONF, which is slurmd's. */
		const char *conf = NULL;
		long long t0 = now_ns();
		int n;
		char **e;

		for (e = env; *e; e++)
			if (!strncmp(*e, "SLURM_CONF=", 11))
				conf = *e + 11;
		n = so_node_files_record(&c.node_files,
					 strcmp(c.node_root, "/") ? c.node_root : "",
					 conf, c.timeout_ms);
		if (c.dump_node_files) {
			const char *name = so_node_files_stalled(&c.node_files);

			if (name)
				fprintf(stderr, "spank-otel-harness: stalled "
					"reading %s after %lld ms%s\n", name,
					(now_ns() - t0) / 1000000,
					c.node_files.left_behind
						? "; the reader is left behind"
						: "");
			else if (n < 0)
				die("no node files: %s", strerror(errno));
			return fwrite(c.node_files.buf, 1, c.node_files.len, stdout) ==
					       c.node_files.len && fflush(stdout) == 0
				       ? 0
				       : 1;
		}
		if (!c.bench)
			printf("node_files=%d bytes=%zu read_us=%lld\n", n,
			       c.node_files.len, (now_ns() - t0) / 1000);
	}

	if (!c.open_in_child) {
		/* Like the plugin in the slurmstepd parent. */
		st = so_lib_open(&lib, c.lib, c.trusted_uid,
				 c.bench ? &error_logger : &print_logger);
		if (st != SO_CALLED) {
			if (c.bench)
				fprintf(stderr, "spank-otel-harness: %s: %s\n",
					c.lib, so_status_name(st));
			else
				printf("status=%s\n", so_status_name(st));
			return st;
		}
		if (c.lib_fd && c.lib_fd != lib.fd) {
			if (dup3(lib.fd, c.lib_fd, O_CLOEXEC) < 0)
				die("dup3: %s", strerror(errno));
			close(lib.fd);
			lib.fd = c.lib_fd;
		}
	}

	if (c.bench) {
		long i, failed = 0;

		for (i = 0; i < c.bench; i++) {
			long long t0 = now_ns(), t1;
			struct rusage before, after;

			fflush(stdout);
			/* The task reaps its helper, so the task's figure once
			 * reaped is both processes': page faults measure the
			 * memory touched, and move less than the time. */
			getrusage(RUSAGE_CHILDREN, &before);
			pid = fork();
			if (pid < 0)
				die("fork: %s", strerror(errno));
			if (pid == 0)
				_exit(run_task(&c, &lib, env, 1));
			rc = wait_child(pid, 1);
			t1 = now_ns();
			getrusage(RUSAGE_CHILDREN, &after);
			if (rc)
				failed++;
			printf("%lld %ld\n", t1 - t0, after.ru_minflt - before.ru_minflt);
		}
		if (failed)
			fprintf(stderr,
				"spank-otel-harness: %ld of %ld tasks got no "
				"value\n",
				failed, c.bench);
		return failed ? 1 : 0;
	}

	if (c.watch_ms) {
		int out[2], in[2];

		if (pipe2(out, O_CLOEXEC) != 0 || pipe2(in, O_CLOEXEC) != 0)
			die("pipe: %s", strerror(errno));
		fflush(stdout);
		pid = fork();
		if (pid < 0)
			die("fork: %s", strerror(errno));
		if (pid == 0) {
			close(out[0]);
			close(in[1]);
			c.watch_w = out[1];
			c.watch_r = in[0];
			rc = run_task(&c, &lib, env, 0);
			fflush(stdout);
			_exit(rc);
		}
		close(out[1]);
		close(in[0]);
		return watch_helper(&c, pid, out[0], in[1]);
	}
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0) {
		rc = run_task(&c, &lib, env, 0);
		fflush(stdout);
		_exit(rc);
	}
	return wait_child(pid, 1);
}
