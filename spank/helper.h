/*
 * helper.h - the task's call to the step's helper (stephelper.h).
 *
 * A Go runtime must not live in the task process: it leaves threads behind
 * (the kernel then refuses unshare/setns of a user or mount namespace, which
 * container plugins such as pyxis need after spank-otel), it replaces signal
 * handlers, and it aborts the whole process when a limit stops it. Nor may
 * a copy of slurmstepd's memory parse the task's environment. So the step
 * parent starts one helper per step on the node, a fresh image, and each
 * task child only talks to it over a socket of its own:
 *
 *   slurm_spank_task_init_privileged (task child): keeps its own end of
 *       the step's sockets (so_step_helper_take).
 *   slurm_spank_task_init (task child, as the user, right before execve):
 *       so_step_helper_call() sends the task's final environment and reads
 *       the answer within the timeout.
 *
 * The task process itself keeps its single thread, its signal state, its
 * limits and its mappings: it holds one close-on-exec descriptor between
 * the two callbacks, and one unmapped-after-use buffer.
 */
#ifndef SPANK_OTEL_HELPER_H
#define SPANK_OTEL_HELPER_H

#include <stddef.h>
#include <sys/types.h>

#include "../cgo/contract.h"
#include "solog.h"
#include "status.h"

#define SO_FLAG_NO_ABI_CHECK 0x1u /* tests: accept a library without
				     spank_otel_abi (empty-library baseline) */

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
 * the answer within timeout_ms and closes the end. Returns SO_CALLED with
 * *res filled (so_result_free it), or why there is no value, with one
 * error line logged; the step's helper is not the task's to kill or reap. */
enum so_status so_step_helper_call(struct so_step_end *end,
				   const struct so_task_request *req,
				   int timeout_ms, struct so_result *res,
				   const struct so_logger *lg);

/* Releases what so_step_helper_call put in *res. */
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
