/*
 * helper.h - run the Go library in a short-lived helper process of the task.
 *
 * A Go runtime must not live in the task process: it leaves threads behind
 * (the kernel then refuses unshare/setns of a user or mount namespace, which
 * container plugins such as pyxis need after spank-otel), it replaces signal
 * handlers, and it aborts the whole process when a limit stops it. So the
 * task child only forks a helper and talks to it over a socket:
 *
 *   slurm_spank_task_init_privileged (task child, still root, before any
 *   plugin's task_init can have joined a container):
 *       so_helper_start() forks the helper, born with the job's user as
 *       its real uid (so the task, once Slurm has made it that user, can
 *       kill it, and its end kills the helper) and root's effective uid.
 *       It resets its signals, descriptors and limits and waits for a
 *       request, watching the task through a pidfd.
 *   slurm_spank_task_init (task child, as the user, right before execve):
 *       so_helper_call() sends the task's final environment. By now Slurm
 *       has placed the task: the helper moves itself into the task's
 *       cgroups, CPU mask and process group (if they have room for it),
 *       drops to the job's credentials with no capability left, loads the
 *       library from the descriptor checked in the step parent and answers.
 *       From the request on it has a deadline of its own (the timeout and
 *       its reserve again), so it ends by itself wherever it is stuck.
 *       The task reads the answer within the timeout and reaps the helper
 *       (killing it at once if it lingers or did not answer in time).
 *
 * The helper is a clone child that sends no signal when it ends (exit
 * signal 0): the task's SIGCHLD handler never runs for it, no SIGCHLD is
 * left pending, an ignored SIGCHLD does not reap it early, and wait(-1)
 * elsewhere in the task does not take it. So its pid stays the task's
 * until the task reaps it, and the task only ever signals it through the
 * pidfd the kernel returned from the clone. A stop or continue of the
 * helper still sends the task SIGCHLD (the kernel does so whatever the
 * exit signal); once the helper is reaped, a pending one naming it is
 * taken back.
 *
 * The task process itself keeps its single thread, its signal state, its
 * limits and its mappings: it only ever holds three close-on-exec
 * descriptors between the two callbacks, and one unmapped-after-use buffer.
 * Everything the task child does here is bounded by the timeout.
 */
#ifndef SPANK_OTEL_HELPER_H
#define SPANK_OTEL_HELPER_H

#include <stddef.h>
#include <sys/types.h>

#include "cgroup.h"
#include "../cgo/contract.h"
#include "libfile.h"
#include "solog.h"
#include "status.h"

#define SO_FLAG_NO_ABI_CHECK 0x1u /* harness: accept a library without
				     spank_otel_abi (empty-library baseline) */

/* What the helper needs to know when it starts. */
struct so_helper_config {
	const struct so_lib *lib; /* checked in the step parent */
	const char *exclude;      /* comma-separated keys never written */
	unsigned flags;           /* SO_FLAG_* */
	/* The job's credentials; the helper drops to them before it loads
	 * anything. drop_creds 0 keeps the caller's (harness only). */
	int drop_creds;
	uid_t uid;
	gid_t gid;
	const gid_t *groups; /* supplementary groups; NULL/0: just gid */
	size_t ngroups;
	/* Which CPU of the task's affinity mask the helper keeps: the local
	 * task id, so concurrent helpers of one node spread over the CPUs. */
	int cpu_index;
	/* The step's tasks on the node, whose helpers run at once: the room
	 * checked in the job's cgroups is for all of them (headroom.h). */
	unsigned helpers;
	/* Where the cgroup files are read; NULL members: the real /proc. */
	struct so_cgroup_files cgroup_files;
	/* The node's files the step parent read (nodefiles.h), handed to
	 * the library as they are; NULL: it reads the node itself. */
	const char *node_files;
	size_t node_files_len;
};

/* A started helper, as the task child sees it. */
struct so_helper {
	pid_t pid;   /* -1 when none */
	int sock;    /* request/answer socket */
	int err;     /* read end of the helper's stderr */
	int pidfd;   /* from the clone; the only handle used to signal it */
	/* What sock, err and pidfd were when made (device, inode): other
	 * plugins run in the task between task_init_privileged and
	 * task_init, and may close a number and open another file there. */
	unsigned long long ids[3][2];
};

/* What the helper answered. */
struct so_result {
	int rc;      /* SO_RC_* of contract.h */
	char *value; /* NULL when the library returned none */
	size_t value_len;
	char *log;   /* "E|I|V|D <text>\n" lines, or NULL */
	/* One mapping holds both strings; so_result_free unmaps it, so the
	 * task's memory map is the same after the call as before. */
	void *map;
	size_t map_len;
};

/* Forks the helper. Returns 0, or -1 with the reason logged (h->pid is
 * then -1 and nothing is left open): no pidfd from the kernel (before
 * Linux 5.3), a task child with more than one thread, no descriptors. */
int so_helper_start(struct so_helper *h, const struct so_helper_config *cfg,
		    const struct so_logger *lg);

/* Sends req (the task's environment, req->envp, and the scalars of the
 * library's request; req->exclude is the config's), reads the answer and
 * reaps the helper, all within timeout_ms: the last tenth of it (at
 * most 100 ms) is kept for killing and reaping a helper that did not
 * answer in time; one that answered and has not ended within a few
 * milliseconds is killed. A helper not gone by the end is left behind
 * (logged). Every descriptor of h is closed afterwards. Returns SO_CALLED
 * with *res filled (so_result_free it), or why there is no value, with one
 * error line logged and the helper's stderr at debug level. */
enum so_status so_helper_call(struct so_helper *h,
			      const struct so_task_request *req, int timeout_ms,
			      struct so_result *res,
			      const struct so_logger *lg);

/* A task's end of its socket to the step's helper (stephelper.h), with
 * the file it was when the task took it. */
struct so_step_end {
	int fd; /* -1 when none */
	unsigned long long id[2];
};

/* The task's call to the step's helper on its own end: checks that the
 * end is still the file the task took (one that another plugin closed or
 * replaced is logged and forgotten, never used or closed), sends req with
 * the keys never written (req->exclude) and the step's node files, reads
 * the answer within timeout_ms and closes the end. Returns as
 * so_helper_call; the step's helper is not the task's to kill or reap. */
enum so_status so_step_helper_call(struct so_step_end *end,
				   const struct so_task_request *req,
				   int timeout_ms, struct so_result *res,
				   const struct so_logger *lg);

/* Kills and reaps a started helper that will not be called, waiting at
 * most timeout_ms. */
void so_helper_discard(struct so_helper *h, int timeout_ms);

/* Releases what so_helper_call put in *res. */
void so_result_free(struct so_result *res);

/* Replaces every control character of s but newline and tab with '?':
 * what the helper writes reaches Slurm's log, one line per line. */
void so_sanitize_text(char *s, size_t len);

/* The same, newline and tab included: a value quoted in one log line. */
void so_sanitize_line(char *s, size_t len);

/* Logs each line of what a helper wrote to stderr (text) at debug level,
 * "helper stderr: LINE", and a last line when truncated says more was
 * not read: a Go crash report, which names the C function. */
void so_emit_stderr(const char *text, int truncated, const struct so_logger *lg);

/* Passes each line of the library's log to lg at the level its letter
 * (contract.h's SO_LINE_*) names; anything else at verbose, unchanged. */
void so_emit_library_log(const char *log, const struct so_logger *lg);

#endif
