/*
 * status.h - why the library did or did not compute a task's value.
 *
 * Shared by the file checks (libfile.c), the step's helper
 * (stephelper_main.c) and its caller in the task (helper.c), and reported
 * by the probe as its exit code, so the numbers are stable.
 */
#ifndef SPANK_OTEL_STATUS_H
#define SPANK_OTEL_STATUS_H

enum so_status {
	SO_CALLED = 0,      /* spank_otel_task_env ran; see so_result */
	SO_REFUSED,         /* the file failed the ownership/permission checks */
	SO_OPEN_FAILED,     /* the file could not be opened */
	SO_HELPER_FAILED,   /* the helper process could not be set up */
	SO_LOAD_FAILED,     /* dlopen() failed, or the file is damaged */
	SO_SYMBOL_MISSING,  /* a required symbol is not exported */
	SO_ABI_MISMATCH,    /* spank_otel_abi() returned another version */
	SO_TIMEOUT,         /* the helper did not answer in time */
	SO_HELPER_DIED,     /* the helper ended without a (valid) answer */
	SO_BAD_ANSWER,      /* the answer broke the protocol (a control
			       character in the value); the helper killed */
};

/* A short name for a status ("called", "refused", ...). */
static inline const char *so_status_name(enum so_status st)
{
	switch (st) {
	case SO_CALLED:
		return "called";
	case SO_REFUSED:
		return "refused";
	case SO_OPEN_FAILED:
		return "open-failed";
	case SO_HELPER_FAILED:
		return "helper-failed";
	case SO_LOAD_FAILED:
		return "load-failed";
	case SO_SYMBOL_MISSING:
		return "symbol-missing";
	case SO_ABI_MISMATCH:
		return "abi-mismatch";
	case SO_TIMEOUT:
		return "timeout";
	case SO_HELPER_DIED:
		return "helper-died";
	case SO_BAD_ANSWER:
		return "bad-answer";
	}
	return "unknown";
}

#endif
