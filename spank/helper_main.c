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
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "cgroup.h"
#include "clock.h"
#include "fds.h"
#include "fullio.h"
#include "headroom.h"
#include "helper_main.h"
#include "helperproc.h"
#include "membound.h"
#include "pidfd.h"
#include "privs.h"
#include "wire.h"

#define ENV_VAR "OTEL_RESOURCE_ATTRIBUTES"

/* The descriptors the helper keeps, at fixed numbers. */
enum { LIB_FD = 3, SOCK_FD = 4, FIRST_FREE_FD = 5 };

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

/* Has the task ended? Checked between the steps of the placement, so
 * that a helper whose task went away does not go on joining its cgroups
 * (the parent-death signal ends it too; this does not depend on it). */
static int task_gone(void)
{
	struct pollfd p = { task_fd, POLLIN, 0 };

	return task_fd >= 0 && poll(&p, 1, 0) > 0;
}

/* The request's socket, waited on as helper_wait says. */
static const struct so_channel task_channel = { SOCK_FD, helper_wait, &task_fd };

/* Sends the answer and ends the helper. */
static void __attribute__((noreturn))
answer(enum so_status st, int rc, const char *value, const struct so_notes *n,
       const char *liblog)
{
	so_send_answer(&task_channel, st, rc, value, n, liblog);
	_exit(0);
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

/* One CPU of the task's final mask: inside the job's allocation, and the
 * Go runtime sizes GOMAXPROCS, and so its threads, from the mask it starts
 * with. The CPU the helper runs on, when the mask has it: moving to
 * another one waits for that CPU's run queue, a whole time slice when it
 * is busy. Else the task index picks one, so that the helpers of one node
 * spread over its CPUs. Returns the CPU, or -1 when the helper keeps its
 * mask (said why in a debug note). */
static int one_cpu(pid_t task, int index, struct so_notes *n)
{
	cpu_set_t set, one;
	int count, cpu, k;

	if (sched_getaffinity(task, sizeof(set), &set) != 0) {
		so_note(n, SO_LINE_DEBUG, "helper keeps its CPU mask: sched_getaffinity of "
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
		so_note(n, SO_LINE_DEBUG, "helper cannot bind to CPU %d: %s", cpu,
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
		 struct so_notes *n)
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
		so_note(n, SO_LINE_ERROR, "not loading the library: cannot read the task's "
			     "cgroups: %s; %s left unchanged",
		     strerror(errno), ENV_VAR);
		return -1;
	}
	if (!so_headroom_ok(f, &task_cg, task, cfg->helpers, why, sizeof(why))) {
		so_note(n, SO_LINE_ERROR, "not loading the library: %s; %s left unchanged",
		     why, ENV_VAR);
		return -1;
	}
	joined = so_cgroups_join(f, &task_cg, &self_cg, task,
				 cfg->drop_creds ? cfg->uid : (uid_t)-1, why,
				 sizeof(why));
	if (joined < 0) {
		so_note(n, SO_LINE_ERROR, "not loading the library: %s; %s left unchanged",
		     why, ENV_VAR);
		return -1;
	}
	cpu = one_cpu(task, cfg->cpu_index, n);
	pgid = getpgid(task);
	if (pgid > 0 && pgid != getpgid(0) && setpgid(0, pgid) != 0) {
		/* The task of a --pty step leads a session of its own. */
		so_note(n, SO_LINE_DEBUG, "helper stays out of the task's process group %d: %s",
		     (int)pgid, strerror(errno));
	}
	so_note(n, SO_LINE_DEBUG, "helper: joined %d cgroups of the task, CPU %d, process "
		     "group %d", joined, cpu, (int)getpgid(0));
	return 0;
}

static int drop_creds(const struct so_helper_config *cfg, struct so_notes *n)
{
	struct so_creds c = { cfg->drop_creds, cfg->uid, cfg->gid, cfg->groups,
			      cfg->ngroups };
	char why[256];
	int bounding_kept = 0;

	if (so_privs_drop(&c, &bounding_kept, why, sizeof(why)) != 0) {
		so_note(n, SO_LINE_ERROR, "not loading the library: the helper process %s; "
			     "%s left unchanged", why, ENV_VAR);
		return -1;
	}
	if (bounding_kept)
		so_note(n, SO_LINE_DEBUG, "helper keeps its capability bounding set (no "
			     "CAP_SETPCAP); no_new_privs stands in for it");
	return 0;
}

/* The hard memory bound (membound.h), set in two stages: before the
 * library is loaded and once its runtime has started. Without it the
 * library is not loaded, or not called: an OOM kill in the job's cgroups
 * would cost the step more than the task's attributes. */
static void bound_memory(int (*stage)(char *, size_t), struct so_notes *n)
{
	char why[256];

	if (stage(why, sizeof(why)) != 0) {
		so_note(n, SO_LINE_ERROR, "not calling the library: %s; %s left unchanged",
		     why, ENV_VAR);
		answer(SO_HELPER_FAILED, -1, NULL, n, NULL);
	}
}

void so_helper_main(const struct so_helper_config *cfg, pid_t task, int sock,
		    int err)
{
	const struct so_lib *lib = cfg->lib;
	struct so_creds creds = { cfg->drop_creds, cfg->uid, cfg->gid, cfg->groups,
				  cfg->ngroups };
	struct so_wire_request rq;
	struct so_notes n = { .len = 0 };
	char narrow_err[256];
	int narrowed;
	struct stat sb;
	so_task_env_fn *fn;
	enum so_status st;
	char **envp, *value = NULL, *liblog = NULL, path[32];
	long long placing, loading, called;
	int rc;
	void *h;

	/* Born with the job's user as its real uid (so_helper_start). Dies
	 * with the task; the task may have ended before this was set. */
	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	if (getppid() != task)
		_exit(0);
	so_self_no_core();
	so_self_reset_signals();
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
	so_self_own_limits();
	so_self_expendable();

	/* The rest needs the task placed: Slurm does that after
	 * task_init_privileged and before task_init. */
	if ((rc = so_read_request(&task_channel, &rq)) > 0)
		_exit(0); /* the task went away or exec'd without calling */
	if (rc < 0) {
		so_note(&n, SO_LINE_ERROR, "the helper process received a damaged request");
		answer(SO_HELPER_FAILED, -1, NULL, &n, NULL);
	}
	if (!narrowed) {
		so_note(&n, SO_LINE_ERROR, "not loading the library: the helper process %s; "
			     "%s left unchanged", narrow_err, ENV_VAR);
		answer(SO_HELPER_FAILED, -1, NULL, &n, NULL);
	}
	/* Only a process the v1 freezer froze does not run to its end: it is
	 * in the task's freezer cgroup by then, and is thawed, and so ended,
	 * with the job. */
	so_self_deadline(rq.deadline_ms);
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
		so_note(&n, SO_LINE_ERROR, "not loading %s: its descriptor was closed or "
			      "reused", lib->path);
		answer(SO_OPEN_FAILED, -1, NULL, &n, NULL);
	}
	bound_memory(so_membound_load, &n);
	/* The library sees only the five descriptors; from here on the
	 * parent-death signal and the alarm stand for the watch. */
	close(task_fd);
	task_fd = -1;
	if (task_cg_fd >= 0)
		close(task_cg_fd);
	/* The helper is in the mount namespace the task child had in
	 * task_init_privileged: slurmstepd's, or the job's own that Slurm's
	 * job_container/namespace plugin made (as root) and joined before that
	 * callback. A container plugin joins a namespace its user controls
	 * only in task_init, after the fork. Still, so_load_library makes
	 * sure /proc is the kernel's. */
	loading = so_monotonic_us();
	st = so_load_library(LIB_FD, lib->path, cfg->flags & SO_FLAG_NO_ABI_CHECK, &n,
			     &h, &fn);
	if (st != SO_CALLED)
		answer(st, -1, NULL, &n, NULL);
	loading = so_monotonic_us() - loading;
	bound_memory(so_membound_call, &n);

	errno = 0;
	if (!(envp = so_read_env(&task_channel, &rq))) {
		if (errno == ENOMEM)
			so_note(&n, SO_LINE_ERROR, "the task's environment (%u bytes) does "
				      "not fit in the helper's memory bound of %llu MiB "
				      "for the call; %s left unchanged",
			     (unsigned)rq.env_bytes, SO_HELPER_CALL_MEMORY >> 20, ENV_VAR);
		else
			so_note(&n, SO_LINE_ERROR, "the helper process received a damaged request");
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
	so_note(&n, SO_LINE_DEBUG, "helper: placed in %lld us, library loaded and started "
		      "in %lld us, call %lld us",
	     placing, loading, called);
	answer(SO_CALLED, rc, value, &n, liblog);
}
