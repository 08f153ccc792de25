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
 *       so_helper_start() forks the helper. The helper drops to the job's
 *       credentials, binds itself to one CPU (so the Go runtime starts with
 *       GOMAXPROCS 1), loads the library from the descriptor checked in the
 *       step parent, and waits for a request.
 *   slurm_spank_task_init (task child, as the user, right before execve):
 *       so_helper_call() sends the task's final environment, reads the
 *       answer within a timeout, and reaps the helper (killing it first if
 *       it did not answer in time).
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

#include "libfile.h"
#include "solog.h"
#include "status.h"

/* The library ABI the helper speaks (spank_otel_abi() must return it). */
#define SO_ABI_VERSION 1

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
	/* Which CPU of its affinity mask the helper keeps: the local task
	 * id, so concurrent helpers of one node spread over the CPUs. */
	int cpu_index;
};

/* A started helper, as the task child sees it. */
struct so_helper {
	pid_t pid;   /* -1 when none */
	int sock;    /* request/answer socket */
	int err;     /* read end of the helper's stderr */
	int pidfd;   /* -1 where the kernel has no pidfd_open */
};

/* What the helper answered. */
struct so_result {
	int rc;      /* 1: set value; 2: unset; 0: leave; -1: library error */
	char *value; /* NULL when the library returned none */
	size_t value_len;
	char *log;   /* "E|I|V|D <text>\n" lines, or NULL */
	/* One mapping holds both strings; so_result_free unmaps it, so the
	 * task's memory map is the same after the call as before. */
	void *map;
	size_t map_len;
};

/* The return codes of spank_otel_task_env. */
enum {
	SO_RC_ERROR = -1,
	SO_RC_LEAVE = 0,
	SO_RC_SET = 1,
	SO_RC_UNSET = 2,
};

/* Forks the helper, unless the task's cgroups have no room for it (see
 * headroom.h). Returns 0, or -1 with the reason logged (h->pid is then -1
 * and nothing is left open). */
int so_helper_start(struct so_helper *h, const struct so_helper_config *cfg,
		    const struct so_logger *lg);

/* Sends envp (the task's environment) and max_env_bytes, waits at most
 * timeout_ms for the answer, then reaps the helper; on a timeout or a
 * broken answer the helper is killed first. Every descriptor of h is
 * closed afterwards. Returns SO_CALLED with *res filled (so_result_free it),
 * or why there is no value, with one error line logged and the helper's
 * stderr at debug level. */
enum so_status so_helper_call(struct so_helper *h, char **envp,
			      long max_env_bytes, int timeout_ms,
			      struct so_result *res,
			      const struct so_logger *lg);

/* Kills and reaps a started helper that will not be called. */
void so_helper_discard(struct so_helper *h);

/* Releases what so_helper_call put in *res. */
void so_result_free(struct so_result *res);

/* Passes each line of the library's log to lg: "E " lines at error level,
 * "I " at info, "V " at verbose, "D " at debug; anything else at verbose,
 * unchanged. */
void so_emit_library_log(const char *log, const struct so_logger *lg);

#endif
