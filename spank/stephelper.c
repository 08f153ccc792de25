/*
 * stephelper.c - start, hand out and stop the step's helper (stephelper.h).
 */
#define _GNU_SOURCE
/* First: it refuses an architecture before any system header can. */
#include "rawclone.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/securebits.h>

#include "clock.h"
#include "fds.h"
#include "helperproc.h"
#include "membound.h"
#include "pidfd.h"
#include "stephelper.h"

/* How long the stop waits for a helper to end by itself before it kills
 * it (report_end). */
#define SO_STEP_HELPER_GRACE_MS 50

#define ENV_VAR "OTEL_RESOURCE_ATTRIBUTES"
#define HELPER_NAME "spank-otel-helper"
#define LIB_FD 3
#define FIRST_SOCK_FD 4

/* What the child needs, prepared by the parent: the child of a raw clone
 * of a multithreaded process may make system calls only. */
struct child_plan {
	const struct so_step_helper_config *cfg;
	int *helper_ends; /* cfg->tasks of them */
	int err_w;
	int null_fd;
	pid_t parent;
	char *argv[5];
	char *envp[1];
};

static void __attribute__((noreturn)) die_child(int err_w, const char *msg)
{
	if (err_w >= 0 && write(err_w, msg, strlen(msg)) < 0) {
		/* Nowhere else to say it. */
	}
	syscall(SYS_exit_group, 127);
	for (;;)
		;
}

/* Moves fd to the number want without closing any descriptor still to be
 * moved: every source was first copied above the highest target. */
static int place_fd(int fd, int want)
{
	return syscall(SYS_dup3, fd, want, 0) == want ? 0 : -1;
}

static void __attribute__((noreturn)) child(const struct child_plan *p)
{
	const struct so_step_helper_config *cfg = p->cfg;
	int top = FIRST_SOCK_FD + (int)cfg->tasks, lib, err, null, exe;
	unsigned i;
	long cap;

	/* Copies above every target number first. */
	lib = fcntl(cfg->lib->fd, F_DUPFD_CLOEXEC, top);
	err = fcntl(p->err_w, F_DUPFD_CLOEXEC, top);
	null = fcntl(p->null_fd, F_DUPFD_CLOEXEC, top);
	exe = fcntl(cfg->exe_fd, F_DUPFD_CLOEXEC, top);
	if (lib < 0 || err < 0 || null < 0 || exe < 0)
		die_child(p->err_w, "cannot arrange its descriptors\n");
	for (i = 0; i < cfg->tasks; i++) {
		int hi = fcntl(p->helper_ends[i], F_DUPFD_CLOEXEC, top);

		if (hi < 0)
			die_child(err, "cannot arrange its descriptors\n");
		p->helper_ends[i] = hi;
	}
	if (place_fd(null, 0) || place_fd(err, 1) || place_fd(err, 2) ||
	    place_fd(lib, LIB_FD))
		die_child(err, "cannot arrange its descriptors\n");
	for (i = 0; i < cfg->tasks; i++)
		if (place_fd(p->helper_ends[i], FIRST_SOCK_FD + (int)i))
			die_child(2, "cannot arrange its descriptors\n");
	/* Everything else of slurmstepd's goes; the executable's copy stays,
	 * close-on-exec, at top for the exec. so_close_from falls back to
	 * /proc/self/fd before Linux 5.9 (no close_range), and fails closed. */
	if ((exe != top && syscall(SYS_dup3, exe, top, O_CLOEXEC) != top) ||
	    so_close_from(top + 1) != 0)
		die_child(2, "cannot close slurmstepd's descriptors\n");
	exe = top;
	/* Exec gives a process of real or effective uid 0 every capability,
	 * unless root is "not special" (SECBIT_NOROOT): a job of uid 0 gets a
	 * helper of uid 0 with none. Needs CAP_SETPCAP, which only a root
	 * starter has; a starter that is the user already (the doctor's probe
	 * in a task) and stays so needs none. */
	if (syscall(SYS_prctl, PR_SET_SECUREBITS, SECBIT_NOROOT | SECBIT_NOROOT_LOCKED,
		    0, 0, 0) != 0 &&
	    (cfg->drop_creds ? cfg->uid == 0
			     : syscall(SYS_getuid) == 0 || syscall(SYS_geteuid) == 0))
		die_child(2, "cannot keep its exec from granting root's capabilities\n");
	/* While root: no capability may come back by any means (a job of
	 * uid 0 included), and the helper is the first process the kernel's
	 * OOM killer takes, from its start; raising the score needs no
	 * privilege, but once the ids change /proc/self is no longer the
	 * helper's to write. */
	if (syscall(SYS_geteuid) == 0)
		for (cap = 0; syscall(SYS_prctl, PR_CAPBSET_READ, cap, 0, 0, 0) >= 0; cap++)
			if (syscall(SYS_prctl, PR_CAPBSET_DROP, cap, 0, 0, 0) != 0)
				die_child(2, "cannot empty its capability bounding set\n");
	so_self_expendable();
	if (cfg->drop_creds) {
		if (syscall(SYS_setgroups, cfg->ngroups ? cfg->ngroups : 1,
			    cfg->ngroups ? cfg->groups : &cfg->gid) != 0 ||
		    syscall(SYS_setresgid, cfg->gid, cfg->gid, cfg->gid) != 0 ||
		    syscall(SYS_setresuid, cfg->uid, cfg->uid, cfg->uid) != 0)
			die_child(2, "cannot take the job's credentials\n");
	}
	/* After the credential change, which clears it; then make sure the
	 * parent did not end in between. */
	if (syscall(SYS_prctl, PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
	    syscall(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0)
		die_child(2, "cannot set no_new_privs and the parent-death signal\n");
	if (syscall(SYS_getppid) != p->parent)
		syscall(SYS_exit_group, 0);
	syscall(SYS_execveat, exe, "", p->argv, p->envp, AT_EMPTY_PATH);
	die_child(2, "cannot execute " HELPER_NAME "\n");
	__builtin_unreachable();
}

static void close_all(int *fds, unsigned n)
{
	unsigned i;

	for (i = 0; i < n; i++)
		if (fds[i] >= 0) {
			close(fds[i]);
			fds[i] = -1;
		}
}

int so_step_helper_start(struct so_step_helper *sh,
			 const struct so_step_helper_config *cfg,
			 const struct so_logger *lg)
{
	struct child_plan plan;
	char tasks[16];
	int *ends = NULL, ep[2] = { -1, -1 }, null = -1, pidfd = -1;
	sigset_t all, old;
	unsigned i;
	long pid = 0;

	memset(sh, 0, sizeof(*sh));
	sh->pid = -1;
	sh->pidfd = sh->err = -1;
	if (cfg->tasks == 0 || cfg->tasks > 4096) {
		so_logf(lg, SO_LOG_ERROR, "not starting the step's helper: %u tasks "
			"on this node; %s left unchanged", cfg->tasks, ENV_VAR);
		return -1;
	}
	sh->socks = calloc(cfg->tasks, sizeof(int));
	ends = calloc(cfg->tasks, sizeof(int));
	if (!sh->socks || !ends)
		goto fail_errno;
	for (i = 0; i < cfg->tasks; i++)
		sh->socks[i] = ends[i] = -1;
	sh->tasks = cfg->tasks;
	for (i = 0; i < cfg->tasks; i++) {
		int sv[2];

		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
			goto fail_errno;
		sh->socks[i] = sv[0];
		ends[i] = sv[1];
	}
	if (pipe2(ep, O_CLOEXEC) != 0 ||
	    (null = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0)
		goto fail_errno;
	snprintf(tasks, sizeof(tasks), "%u", cfg->tasks);
	memset(&plan, 0, sizeof(plan));
	plan.cfg = cfg;
	plan.helper_ends = ends;
	plan.err_w = ep[1];
	plan.null_fd = null;
	plan.parent = getpid();
	plan.argv[0] = HELPER_NAME;
	plan.argv[1] = tasks;
	plan.argv[2] = (char *)cfg->lib->path;
	plan.argv[3] = (cfg->flags & SO_FLAG_NO_ABI_CHECK) ? "--no-abi-check" : NULL;
	plan.envp[0] = NULL;
	/* No handler of the parent's may run in the child; the helper resets
	 * its signals first. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pid = so_raw_clone(&pidfd);
	if (pid == 0)
		child(&plan);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (pid < 0)
		goto fail_errno;
	close_all(ends, cfg->tasks);
	free(ends);
	close(ep[1]);
	close(null);
	fcntl(ep[0], F_SETFL, O_NONBLOCK);
	sh->pid = (pid_t)pid;
	sh->pidfd = pidfd;
	sh->err = ep[0];
	return 0;

fail_errno:
	if (errno == ENOSYS && pid < 0)
		so_logf(lg, SO_LOG_ERROR, "not starting the step's helper: this "
			"kernel gave no pidfd (Linux 5.4 or later needed); %s left "
			"unchanged for this step's tasks", ENV_VAR);
	else
		so_logf(lg, SO_LOG_ERROR, "cannot start the step's helper: %s; %s "
			"left unchanged for this step's tasks", strerror(errno),
			ENV_VAR);
	if (sh->socks)
		close_all(sh->socks, sh->tasks);
	if (ends)
		close_all(ends, cfg->tasks);
	free(sh->socks);
	free(ends);
	sh->socks = NULL;
	sh->tasks = 0;
	if (ep[0] >= 0)
		close(ep[0]);
	if (ep[1] >= 0)
		close(ep[1]);
	if (null >= 0)
		close(null);
	return -1;
}

void so_step_helper_take(struct so_step_helper *sh, unsigned task,
			 struct so_step_end *end)
{
	int mine = -1;
	unsigned i;

	for (i = 0; i < sh->tasks; i++) {
		if (i == task) {
			mine = sh->socks[i];
			sh->socks[i] = -1;
		}
	}
	close_all(sh->socks, sh->tasks);
	if (sh->err >= 0)
		close(sh->err);
	if (sh->pidfd >= 0)
		close(sh->pidfd);
	sh->err = sh->pidfd = -1;
	sh->pid = -1;
	end->fd = mine;
	so_fd_id(mine, end->id);
}

void so_step_helper_release(struct so_step_helper *sh)
{
	if (sh->socks)
		close_all(sh->socks, sh->tasks);
}

/* How a helper that ended abnormally ended, into how: killed by signal
 * sig (-1: not killed), else exited with a nonzero status; "" for a
 * clean exit. */
static void describe_end(int sig, int status, char *how, size_t len)
{
	if (sig > 0)
		snprintf(how, len, "was killed by signal %d (%s)", sig, strsignal(sig));
	else if (status != 0)
		snprintf(how, len, "exited with status %d", status);
}

/* Logs how the helper ended when it did so before the stop (a crash, its
 * own alarm: the tasks saw only their socket closed), with the first line
 * of its stderr, and every line of that at debug level (a crash report:
 * docs/design.md, "Crash reports"). */
static void report_end(struct so_step_helper *sh, long long deadline,
		       const struct so_logger *lg)
{
	char buf[2048], how[96] = "", *line, *nl;
	size_t len = 0;
	ssize_t n;
	siginfo_t si;
	int r;

	{
		/* A helper that served every task ends by itself, and one
		 * that died is waitable a moment after its tasks saw their
		 * sockets close: a short grace, so that how it ended, and all
		 * it wrote, are known before the kill. */
		struct pollfd p = { sh->pidfd, POLLIN, 0 };
		long long left = (deadline - so_monotonic_us()) / 1000;

		poll(&p, 1, left > SO_STEP_HELPER_GRACE_MS ? SO_STEP_HELPER_GRACE_MS
			 : left > 0 ? (int)left : 0);
	}
	while (sh->err >= 0 && len < sizeof(buf) - 1 &&
	       (n = read(sh->err, buf + len, sizeof(buf) - 1 - len)) > 0)
		len += (size_t)n;
	buf[len] = '\0';
	so_sanitize_text(buf, len);
	memset(&si, 0, sizeof(si));
	r = waitid(P_PIDFD, (id_t)sh->pidfd, &si, WEXITED | WNOHANG | WNOWAIT | __WALL);
	if (r == 0 && si.si_pid != 0) {
		describe_end(si.si_code == CLD_EXITED ? -1 : si.si_status,
			     si.si_code == CLD_EXITED ? si.si_status : 0, how, sizeof(how));
	} else if (r < 0 && errno == ECHILD) {
		/* slurmstepd's wait for any child reaped it: the kernel may
		 * still say how it ended. */
		struct so_pidfd_info info;

		memset(&info, 0, sizeof(info));
		info.mask = SO_PIDFD_INFO_EXIT;
		if (ioctl(sh->pidfd, SO_PIDFD_GET_INFO, &info) == 0 &&
		    (info.mask & SO_PIDFD_INFO_EXIT))
			describe_end(WIFSIGNALED(info.exit_code) ? WTERMSIG(info.exit_code) : -1,
				     WIFEXITED(info.exit_code) ? WEXITSTATUS(info.exit_code) : 0,
				     how, sizeof(how));
	}
	for (line = buf; *line == '\n'; line++)
		;
	nl = strchr(line, '\n');
	if (how[0] || *line)
		so_logf(lg, SO_LOG_ERROR, "the step's helper %s%s%.*s%s",
			how[0] ? how : "said", *line ? ": " : "",
			nl ? (int)(nl - line) : (int)strlen(line), line,
			so_membound_note(buf));
	so_emit_stderr(buf, len == sizeof(buf) - 1, lg);
}

void so_step_helper_stop(struct so_step_helper *sh, int timeout_ms,
			 const struct so_logger *lg)
{
	long long deadline = so_monotonic_us() + (long long)timeout_ms * 1000;

	so_step_helper_release(sh);
	free(sh->socks);
	sh->socks = NULL;
	if (sh->pid < 0)
		return;
	report_end(sh, deadline, lg);
	syscall(SYS_pidfd_send_signal, sh->pidfd, SIGKILL, NULL, 0);
	for (;;) {
		struct pollfd p = { sh->pidfd, POLLIN, 0 };
		long long left = (deadline - so_monotonic_us()) / 1000;
		siginfo_t si;
		int r;

		memset(&si, 0, sizeof(si));
		r = waitid(P_PIDFD, (id_t)sh->pidfd, &si, WEXITED | WNOHANG | __WALL);
		if ((r == 0 && si.si_pid != 0) || (r < 0 && errno == ECHILD))
			break; /* reaped here, or by slurmstepd's wait for any child */
		if (left <= 0) {
			so_logf(lg, SO_LOG_ERROR, "the step's helper (pid %d) did not "
				"end within %d ms of SIGKILL; left behind",
				(int)sh->pid, timeout_ms);
			break;
		}
		poll(&p, 1, (int)left);
	}
	if (sh->err >= 0)
		close(sh->err);
	close(sh->pidfd);
	sh->err = sh->pidfd = -1;
	sh->pid = -1;
}
