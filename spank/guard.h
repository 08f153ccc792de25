/*
 * guard.h - save and restore a thread's signal state around the library.
 *
 * A Go c-shared library installs its own handlers when it is loaded (for
 * SIGPIPE even over an inherited SIG_IGN), changes the calling thread's mask
 * and may leave an alternate signal stack behind. execve() resets a caught
 * signal to SIG_DFL, so without this guard a task would start with SIGPIPE
 * at SIG_DFL instead of the SIG_IGN it inherited. The guard records every
 * disposition, the mask and the alternate stack before the library is
 * loaded, and puts them back exactly after the call returns.
 */
#ifndef SPANK_OTEL_GUARD_H
#define SPANK_OTEL_GUARD_H

#include <signal.h>
#include <stddef.h>

struct so_sigstate {
	struct sigaction act[_NSIG];
	unsigned char saved[_NSIG]; /* 1 when act[sig] holds a disposition */
	sigset_t mask;
	int have_mask;
	stack_t altstack;
	int have_altstack;
};

/* Records the dispositions of all catchable signals, the calling thread's
 * mask and its alternate signal stack. Signals that the C library reserves
 * for itself (sigaction fails on them) are skipped. */
void so_sigstate_save(struct so_sigstate *s);

/* Puts back what so_sigstate_save recorded. Returns the number of items
 * that could not be restored (0 normally). */
int so_sigstate_restore(const struct so_sigstate *s);

/* Compares two recorded states. Returns 0 when they are the same; otherwise
 * the number of differences, and a short description of the first ones in
 * diff (when diff is not NULL). */
int so_sigstate_diff(const struct so_sigstate *a, const struct so_sigstate *b,
		     char *diff, size_t len);

#endif
