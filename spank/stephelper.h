/*
 * stephelper.h - the step's helper as the step parent and the tasks see it
 * (issue 43, section 3; the helper itself is stephelper_main.c).
 *
 * One helper per step on a node: the step parent starts it once, before it
 * forks the tasks, as a fresh image (execveat of the checked
 * spank-otel-helper, never a copy of slurmstepd's memory) with the job's
 * credentials and one socket pair per local task. Every task child
 * inherits the ends; each keeps its own (so_step_helper_take) and asks on
 * it in task_init (so_step_helper_call). The step parent ends the helper
 * when the step ends (so_step_helper_stop); it also ends by itself once
 * every task's end is closed, and with the step parent.
 *
 * It is started with a pidfd from the clone itself, the only handle it is
 * ever signalled or reaped through. Its exec makes it an ordinary child
 * (the kernel sets the exit signal back to SIGCHLD), so a wait for any
 * child, slurmstepd's included, may reap it: stopping one that is gone so
 * is not an error.
 */
#ifndef SPANK_OTEL_STEPHELPER_H
#define SPANK_OTEL_STEPHELPER_H

#include <stddef.h>
#include <sys/types.h>

#include "helper.h"
#include "libfile.h"
#include "solog.h"
#include "status.h"

struct so_step_helper_config {
	int exe_fd;               /* spank-otel-helper, opened and checked */
	const struct so_lib *lib; /* the library, opened and checked */
	unsigned tasks;           /* the step's tasks on the node */
	unsigned flags;           /* SO_FLAG_NO_ABI_CHECK */
	/* The job's credentials, taken before the exec; drop_creds 0 keeps
	 * the caller's (the harness as a user). */
	int drop_creds;
	uid_t uid;
	gid_t gid;
	const gid_t *groups;
	size_t ngroups;
};

struct so_step_helper {
	pid_t pid;      /* -1 when none */
	int pidfd;      /* the only handle used to signal or reap it */
	int err;        /* read end of its stderr, nonblocking */
	int *socks;     /* the tasks' ends, by local task id; -1 when taken */
	unsigned tasks;
};

/* Starts the helper. Returns 0, or -1 with the reason logged (sh->pid is
 * then -1 and nothing is left open). */
int so_step_helper_start(struct so_step_helper *sh,
			 const struct so_step_helper_config *cfg,
			 const struct so_logger *lg);

/* In a task child: closes every task's end but task's and the step
 * parent's handles, and fills *end with that end (fd -1 when there is
 * none). */
void so_step_helper_take(struct so_step_helper *sh, unsigned task,
			 struct so_step_end *end);

/* In the step parent once the tasks are forked: closes its copies of the
 * tasks' ends, so that the helper sees each task's end when the task closes
 * its own. */
void so_step_helper_release(struct so_step_helper *sh);

/* Ends the helper (SIGKILL through its pidfd once its stderr is drained)
 * and reaps it, waiting at most timeout_ms; logs the first line of its
 * stderr when it said something. */
void so_step_helper_stop(struct so_step_helper *sh, int timeout_ms,
			 const struct so_logger *lg);

#endif
