/*
 * helperproc.h - what a process that loads the Go library does to itself
 * first, and how it reads a request and answers one (wire.h): the step's
 * helper (stephelper_main.c); its starter (stephelper.c) makes it
 * expendable before the credential change.
 */
#ifndef SPANK_OTEL_HELPERPROC_H
#define SPANK_OTEL_HELPERPROC_H

#include <stddef.h>
#include <stdint.h>

#include "../cgo/contract.h"
#include "fullio.h"
#include "status.h"
#include "wire.h"

/* The helper's own log lines ("<letter> <text>\n", contract.h's letters),
 * sent ahead of the library's in an answer. */
struct so_notes {
	char text[4096];
	size_t len;
};

void so_note(struct so_notes *n, char level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Default dispositions and an empty mask, a signal already pending
 * discarded first (ignoring a signal drops it): the process must not run
 * its parent's handlers, and the Go runtime installs its own. */
void so_self_reset_signals(void);

/* No core file and not dumpable: called before any signal can be
 * delivered. */
void so_self_no_core(void);

/* Soft limits up to the hard ones (address space, data, stack, processes):
 * a Go runtime that cannot map its heap or start a thread aborts. */
void so_self_own_limits(void);

/* oom_score_adj 1000: when memory runs short, the kernel takes the
 * helper, the one process of the job that costs nothing to lose. */
void so_self_expendable(void);

/* The helper's own deadline: SIGALRM, at its default action (signals
 * are reset, and neither a c-shared Go runtime nor the helper handles
 * it), ends the helper ms after now (0: at once), wherever it is then,
 * stopped included. SO_NO_DEADLINE takes it back. */
#define SO_NO_DEADLINE UINT32_MAX
void so_self_deadline(uint32_t ms);

/* Where a request or an answer travels: the socket and how a blocked
 * send or receive waits (fullio.h). */
struct so_channel {
	int fd;
	so_io_wait_fn *wait;
	void *ctx;
};

/* Reads a request's header. Returns 0; 1 at end of file before any byte
 * (the task went away or exec'd without asking); -1 when what came is no
 * request. */
int so_read_request(const struct so_channel *ch, struct so_wire_request *rq);

/* Reads the task's environment that follows the header. Returns the
 * NULL-terminated array (so_free_env releases it), or NULL with errno
 * ENOMEM (over the memory bound) or EPROTO (a damaged request). */
char **so_read_env(const struct so_channel *ch, const struct so_wire_request *rq);

/* Releases what so_read_env returned. */
void so_free_env(char **envp);

/* Sends one answer: the status, the library's return code and value, the
 * helper's notes and then the library's log, cut to the protocol's
 * limits. Returns 0, or -1 when the task is gone. */
int so_send_answer(const struct so_channel *ch, enum so_status st, int rc,
		   const char *value, const struct so_notes *n,
		   const char *liblog);

/* Loads the library through /proc/self/fd/<fd> (the caller checked that
 * fd is still the checked file; dlopen needs a path, and that one names
 * the file only where /proc is the kernel's, which this checks) and checks
 * its ABI, unless no_abi (the harness's empty-library baseline). name is
 * the library's path, for the notes. Returns SO_CALLED with *handle and
 * *fn set, or why not, with an error note. */
enum so_status so_load_library(int fd, const char *name, int no_abi,
			       struct so_notes *n, void **handle,
			       so_task_env_fn **fn);

#endif
