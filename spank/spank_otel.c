/*
 * spank_otel.c - the SPANK callbacks of spank-otel.
 *
 * In every task of every step, right before execve(), the plugin computes
 * the task's OTEL_RESOURCE_ATTRIBUTES with the Go library and sets it in the
 * task's environment. The plugin itself never links Go: the library is
 * opened in the slurmstepd parent (checks only) and loaded with dlopen() in
 * the forked task child (see loader.h for why only there).
 *
 * Every callback returns 0: a missing or broken library, a bad argument or
 * an exhausted limit costs the task its attributes, never its launch. The
 * one exception is a bad --otel-attrs value given to srun, sbatch or
 * salloc, which the command must reject.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <slurm/spank.h>

#include "args.h"
#include "limits.h"
#include "loader.h"
#include "log.h"
#include "option.h"

#ifndef SO_DEFAULT_LIB
#error "build with -DSO_DEFAULT_LIB=\"/absolute/path/of/libspankotel.so\""
#endif

#define ENV_VAR "OTEL_RESOURCE_ATTRIBUTES"

/* Built with -fvisibility=hidden; only Slurm's entry points are public
 * (spank_otel.map enforces the same at link time). */
#define SO_EXPORT __attribute__((visibility("default")))

#pragma GCC visibility push(default)
SPANK_PLUGIN(spank-otel, 1)
#pragma GCC visibility pop

static const struct so_logger slurm_logger = { so_slurm_emit, NULL };

/* Remote-context state. slurmstepd fills it before it forks the tasks, so
 * each task child starts with a copy. */
static struct so_args args;
static int args_parsed;
static enum so_switch step_choice = SO_SWITCH_INVALID; /* from --otel-attrs */
static uid_t trusted_uid;                              /* slurmstepd's uid */
static struct so_lib lib = { .fd = -1 };
static int lib_tried;

static int otel_attrs_cb(int val, const char *optarg, int remote);

static char opt_name[] = SO_OPTION_NAME;
static char opt_arginfo[] = "on|off";
static char opt_usage[] = "Write this job's Slurm identity into "
			  "OTEL_RESOURCE_ATTRIBUTES of every task "
			  "(default: on)";

static struct spank_option otel_attrs_option = {
	opt_name, opt_arginfo, opt_usage, 1, 0, otel_attrs_cb,
};

static int otel_attrs_cb(int val, const char *optarg, int remote)
{
	enum so_switch v = so_switch_parse(optarg);

	(void)val;
	if (v == SO_SWITCH_INVALID) {
		if (!remote) {
			/* srun/sbatch/salloc refuse to run with it. */
			so_error("--%s: invalid value \"%s\"; accepted values "
				 "are on and off",
				 SO_OPTION_NAME, optarg ? optarg : "");
			return -1;
		}
		so_error("--%s: ignoring invalid value \"%s\" (accepted: on, "
			 "off); using the site default",
			 SO_OPTION_NAME, optarg ? optarg : "");
		return 0;
	}
	if (remote)
		step_choice = v;
	return 0;
}

static int step_enabled(const char **why)
{
	if (!args.lib_ok) {
		*why = "no usable lib= argument";
		return 0;
	}
	if (step_choice != SO_SWITCH_INVALID) {
		*why = step_choice == SO_SWITCH_ON ? "--otel-attrs=on"
						   : "--otel-attrs=off";
		return step_choice == SO_SWITCH_ON;
	}
	*why = args.default_on ? "default=on" : "default=off";
	return args.default_on;
}

/* Opens and checks the library once per step. */
static void open_library(void)
{
	if (lib_tried)
		return;
	lib_tried = 1;
	so_lib_open(&lib, args.lib, trusted_uid, &slurm_logger);
}

static const char *env_get(char **env, const char *name)
{
	size_t len = strlen(name);

	for (; env && *env; env++)
		if (!strncmp(*env, name, len) && (*env)[len] == '=')
			return *env + len + 1;
	return NULL;
}

/* The execve() budget left for the environment. RLIMIT_STACK is the
 * smaller of this process's and the one slurmstepd applies after task_init
 * from SLURM_RLIMIT_STACK ("U" prefix when the user asked to propagate). */
static long task_budget(char **env, int argc, char **argv)
{
	struct rlimit r;
	rlim_t stack = RLIM_INFINITY;
	const char *v = env_get(env, "SLURM_RLIMIT_STACK");
	size_t bytes = 0;
	int i;

	if (getrlimit(RLIMIT_STACK, &r) == 0)
		stack = r.rlim_cur;
	if (v) {
		char *end = NULL;
		unsigned long long n;

		if (*v == 'U')
			v++;
		errno = 0;
		n = strtoull(v, &end, 10);
		if (!errno && end != v && *end == '\0' && (rlim_t)n < stack)
			stack = (rlim_t)n;
	}
	for (i = 0; argv && i < argc && argv[i]; i++)
		bytes += strlen(argv[i]) + 1;
	return so_exec_budget(stack, argc > 0 ? (size_t)argc : 0, bytes);
}

static void set_attributes(spank_t sp)
{
	struct so_request rq;
	struct so_result res;
	enum so_status st;
	spank_err_t err;
	char **env = NULL, **argv = NULL;
	int argc = 0;

	err = spank_get_item(sp, S_JOB_ENV, &env);
	if (err != ESPANK_SUCCESS || !env) {
		so_error("cannot read the task environment: %s",
			 spank_strerror(err));
		return;
	}
	if (spank_get_item(sp, S_JOB_ARGV, &argc, &argv) != ESPANK_SUCCESS) {
		argc = 0;
		argv = NULL;
	}
	rq.envp = env;
	rq.exclude = args.exclude;
	rq.max_env_bytes = args.max_env ? args.max_env
					: task_budget(env, argc, argv);
	rq.flags = 0;

	st = so_lib_call(&lib, &rq, &res, &slurm_logger);
	if (st != SO_CALLED)
		return; /* so_lib_call said why */
	so_emit_library_log(res.log, &slurm_logger);
	switch (res.rc) {
	case 1:
		if (!res.value) {
			so_error("the library returned no value; %s left "
				 "unchanged", ENV_VAR);
			break;
		}
		err = spank_setenv(sp, ENV_VAR, res.value, 1);
		if (err != ESPANK_SUCCESS)
			so_error("cannot set %s: %s", ENV_VAR,
				 spank_strerror(err));
		else
			so_debug("set %s=%.512s%s", ENV_VAR, res.value,
				 strlen(res.value) > 512 ? "..." : "");
		break;
	case 0:
		so_debug("%s left unchanged", ENV_VAR);
		break;
	default:
		so_error("the library failed (rc=%d); %s left unchanged",
			 res.rc, ENV_VAR);
		break;
	}
	free(res.value);
	free(res.log);
}

SO_EXPORT int slurm_spank_init(spank_t sp, int ac, char **av)
{
	spank_context_t ctx = spank_context();

	if (ctx == S_CTX_LOCAL || ctx == S_CTX_ALLOCATOR ||
	    ctx == S_CTX_REMOTE) {
		spank_err_t err = spank_option_register(sp, &otel_attrs_option);

		if (err != ESPANK_SUCCESS)
			so_verbose("cannot register --%s: %s", SO_OPTION_NAME,
				   spank_strerror(err));
	}
	if (spank_remote(sp) == 1) {
		/* slurmstepd still runs as root (or SlurmdUser) here. */
		trusted_uid = geteuid();
		so_args_parse(&args, SO_DEFAULT_LIB, ac, av, &slurm_logger);
		args_parsed = 1;
	}
	return 0;
}

SO_EXPORT int slurm_spank_init_post_opt(spank_t sp, int ac, char **av)
{
	const char *why;

	(void)ac;
	(void)av;
	if (spank_remote(sp) != 1 || !args_parsed)
		return 0;
	/* Options are known now; open and check the file once for the
	 * step, still as root and before any task enters a container. */
	if (step_enabled(&why))
		open_library();
	return 0;
}

SO_EXPORT int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
	const char *why;

	(void)ac;
	(void)av;
	if (spank_remote(sp) != 1 || !args_parsed)
		return 0;
	if (step_choice != SO_SWITCH_INVALID) {
		/* slurmstepd removed Slurm's copy; later steps started from
		 * this task need it (see option.h). */
		spank_err_t err = spank_setenv(sp, SO_OPTION_ENV,
			step_choice == SO_SWITCH_ON ? "on" : "off", 1);

		if (err != ESPANK_SUCCESS)
			so_verbose("cannot pass --%s on to later steps: %s",
				   SO_OPTION_NAME, spank_strerror(err));
	}
	if (!step_enabled(&why)) {
		so_debug("disabled for this step (%s)", why);
		return 0;
	}
	open_library();
	if (lib.fd < 0) {
		so_debug("library %s unavailable; %s left unchanged", args.lib,
			 ENV_VAR);
		return 0;
	}
	set_attributes(sp);
	return 0;
}

SO_EXPORT int slurm_spank_exit(spank_t sp, int ac, char **av)
{
	(void)ac;
	(void)av;
	if (spank_remote(sp) == 1 && lib.fd >= 0) {
		close(lib.fd);
		lib.fd = -1;
	}
	return 0;
}
