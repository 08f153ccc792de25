/*
 * args.h - the plugin's arguments from plugstack.conf, e.g.
 *
 *   optional spank_otel.so lib=/usr/lib/.../libspankotel.so exclude=a,b \
 *            default=on rank=off max_env=2097152 timeout=2000
 *
 * A bad argument is logged and ignored; it never makes a callback fail.
 * helper= is accepted for the plugstack.conf lines that chose between the
 * step's helper and the task's (removed): the step's serves every task.
 */
#ifndef SPANK_OTEL_ARGS_H
#define SPANK_OTEL_ARGS_H

#include <limits.h>
#include <stddef.h>

#include "solog.h"

struct so_args {
	char lib[PATH_MAX]; /* absolute path of the Go library */
	int lib_ok;         /* 0 when lib= was relative or too long */
	char exclude[4096]; /* comma-separated keys, "" for none */
	int default_on;     /* 1 unless default=off */
	int rank_on;        /* 1 with rank=on: write the rank keys */
	long max_env;       /* execve() budget override in bytes, 0 = compute */
	int timeout_ms;     /* how long a task waits for the helper process */
};

/* The default of timeout=. The helper answers in about 5 ms on an idle
 * node and in well under 100 ms at p99.9 on a busy one (make bench); the
 * margin is for nodes starting hundreds of tasks at once. A task waits
 * this long only when the library hangs. */
#ifndef SO_DEFAULT_TIMEOUT_MS
#define SO_DEFAULT_TIMEOUT_MS 2000
#endif

/* The largest timeout= accepted: the wait delays the task's start. */
#define SO_MAX_TIMEOUT_MS 60000

/* The step's helper executable: spank-otel-helper in the directory of
 * lib=, which names both (an admin's path, never a job's). */
#define SO_STEP_HELPER_EXE "spank-otel-helper"
void so_args_step_helper_path(const struct so_args *a, char *buf, size_t len);

/* Fills a with the defaults (lib = default_lib), then applies av[0..ac-1].
 * Problems are reported through lg (which may be NULL to stay quiet). */
void so_args_parse(struct so_args *a, const char *default_lib, int ac,
		   char **av, const struct so_logger *lg);

#endif
