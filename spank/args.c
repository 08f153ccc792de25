/*
 * args.c - parse the plugstack.conf arguments (see args.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "option.h"

static void set_lib(struct so_args *a, const char *val,
		    const struct so_logger *lg)
{
	if (val[0] != '/') {
		so_logf(lg, SO_LOG_ERROR,
			"lib=%s is not an absolute path; the plugin does nothing",
			val);
		a->lib_ok = 0;
		return;
	}
	if (snprintf(a->lib, sizeof(a->lib), "%s", val) >= (int)sizeof(a->lib)) {
		so_logf(lg, SO_LOG_ERROR,
			"lib= path is too long; the plugin does nothing");
		a->lib_ok = 0;
		return;
	}
	a->lib_ok = 1;
}

static void set_exclude(struct so_args *a, const char *val,
			const struct so_logger *lg)
{
	if (snprintf(a->exclude, sizeof(a->exclude), "%s", val) >=
	    (int)sizeof(a->exclude)) {
		so_logf(lg, SO_LOG_ERROR,
			"exclude= is longer than %zu bytes; ignored",
			sizeof(a->exclude) - 1);
		a->exclude[0] = '\0';
	}
}

static void set_default(struct so_args *a, const char *val,
			const struct so_logger *lg)
{
	int v = so_switch_parse(val);

	if (v == SO_SWITCH_INVALID) {
		so_logf(lg, SO_LOG_ERROR,
			"default=%s: expected on or off; using on", val);
		a->default_on = 1;
		return;
	}
	a->default_on = v == SO_SWITCH_ON;
}

static void set_rank(struct so_args *a, const char *val,
		     const struct so_logger *lg)
{
	int v = so_switch_parse(val);

	if (v == SO_SWITCH_INVALID) {
		so_logf(lg, SO_LOG_ERROR,
			"rank=%s: expected on or off; using off", val);
		a->rank_on = 0;
		return;
	}
	a->rank_on = v == SO_SWITCH_ON;
}

static void set_max_env(struct so_args *a, const char *val,
			const struct so_logger *lg)
{
	char *end = NULL;
	long v;

	errno = 0;
	v = strtol(val, &end, 10);
	if (errno || end == val || *end != '\0' || v <= 0) {
		so_logf(lg, SO_LOG_ERROR,
			"max_env=%s: expected a positive number of bytes; "
			"computing the limit instead", val);
		a->max_env = 0;
		return;
	}
	a->max_env = v;
}

static void set_timeout(struct so_args *a, const char *val,
			const struct so_logger *lg)
{
	char *end = NULL;
	long v;

	errno = 0;
	v = strtol(val, &end, 10);
	if (errno || end == val || *end != '\0' || v <= 0 ||
	    v > SO_MAX_TIMEOUT_MS) {
		so_logf(lg, SO_LOG_ERROR,
			"timeout=%s: expected milliseconds from 1 to %d; using "
			"%d", val, SO_MAX_TIMEOUT_MS, SO_DEFAULT_TIMEOUT_MS);
		a->timeout_ms = SO_DEFAULT_TIMEOUT_MS;
		return;
	}
	a->timeout_ms = (int)v;
}

/* helper=task chose the task's helper, which is gone: a plugstack.conf
 * that still says so keeps working, and the log says the argument can
 * go. helper=step is what always happens. */
static void set_helper(const char *val, const struct so_logger *lg)
{
	if (!strcmp(val, "step"))
		return;
	if (!strcmp(val, "task")) {
		so_logf(lg, SO_LOG_INFO, "helper=task: the task's helper was "
			"removed; the step's helper serves every task (the "
			"argument can go)");
		return;
	}
	so_logf(lg, SO_LOG_ERROR, "helper=%s: ignored (the step's helper serves "
		"every task)", val);
}

void so_args_step_helper_path(const struct so_args *a, char *buf, size_t len)
{
	const char *slash = strrchr(a->lib, '/');

	snprintf(buf, len, "%.*s/%s", slash ? (int)(slash - a->lib) : 0, a->lib,
		 SO_STEP_HELPER_EXE);
}

void so_args_parse(struct so_args *a, const char *default_lib, int ac,
		   char **av, const struct so_logger *lg)
{
	int i;

	memset(a, 0, sizeof(*a));
	a->default_on = 1;
	a->timeout_ms = SO_DEFAULT_TIMEOUT_MS;
	set_lib(a, default_lib, lg);
	for (i = 0; i < ac; i++) {
		const char *arg = av[i] ? av[i] : "";

		if (!strncmp(arg, "lib=", 4))
			set_lib(a, arg + 4, lg);
		else if (!strncmp(arg, "exclude=", 8))
			set_exclude(a, arg + 8, lg);
		else if (!strncmp(arg, "default=", 8))
			set_default(a, arg + 8, lg);
		else if (!strncmp(arg, "rank=", 5))
			set_rank(a, arg + 5, lg);
		else if (!strncmp(arg, "max_env=", 8))
			set_max_env(a, arg + 8, lg);
		else if (!strncmp(arg, "timeout=", 8))
			set_timeout(a, arg + 8, lg);
		else if (!strncmp(arg, "helper=", 7))
			set_helper(arg + 7, lg);
		else
			so_logf(lg, SO_LOG_INFO,
				"ignoring unknown plugstack.conf argument \"%s\" "
				"(known: lib=, exclude=, default=, rank=, max_env=, "
				"timeout=)",
				arg);
	}
}
