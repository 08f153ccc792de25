/*
 * solog.h - the logging hook shared by the library checks, the helper
 * process and their callers.
 *
 * libfile.c and helper.c are compiled into both the SPANK plugin and the
 * test harness, so they must not depend on spank.h: they report through
 * this callback and each program decides where a message goes.
 */
#ifndef SPANK_OTEL_SOLOG_H
#define SPANK_OTEL_SOLOG_H

enum so_level {
	SO_LOG_ERROR = 0, /* something a user or admin must know */
	SO_LOG_INFO,      /* noteworthy, shown by default in daemons */
	SO_LOG_VERBOSE,   /* shown with -v */
	SO_LOG_DEBUG,     /* shown with debug logging */
};

struct so_logger {
	/* msg carries no "spank-otel: " prefix; emit adds whatever it needs. */
	void (*emit)(void *ctx, enum so_level level, const char *msg);
	void *ctx;
};

/* "error", "info", "verbose" or "debug": the level as the harness and the
 * doctor's probe print it. */
const char *so_level_name(enum so_level level);

/* Formats a message and hands it to lg->emit. lg may be NULL (silence). */
void so_logf(const struct so_logger *lg, enum so_level level,
	     const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
