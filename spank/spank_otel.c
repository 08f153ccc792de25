/*
 * spank_otel.c - the SPANK callbacks of spank-otel.
 *
 * In every task of every step, right before execve(), the plugin sets the
 * task's OTEL_RESOURCE_ATTRIBUTES to what the Go library computes from the
 * task's final environment. The Go library never runs in a Slurm process:
 *
 *   step parent, slurm_spank_init_post_opt   open and check the library,
 *                                            start the step's helper
 *                                            (stephelper.h)
 *   step parent, slurm_spank_user_init       record the node's GPU files
 *   task child, task_init_privileged         take the task's socket to
 *                                            the step's helper
 *   task child, task_init                    ask it (helper.h),
 *                                            spank_setenv the answer
 *
 * Every callback returns 0: a missing or broken library, a bad argument, a
 * crash or a hang of the helper costs the task its attributes, never its
 * launch. The one exception is a bad --otel-attrs value given to srun,
 * sbatch or salloc, which the command must reject.
 */
#define _GNU_SOURCE /* O_PATH */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <slurm/spank.h>

#include "args.h"
#include "budget.h"
#include "clock.h"
#include "devices.h"
#include "helper.h"
#include "libfile.h"
#include "log.h"
#include "nodefiles.h"
#include "option.h"
#include "stephelper.h"

#ifndef SO_DEFAULT_LIB
#error "build with -DSO_DEFAULT_LIB=\"/absolute/path/of/libspankotel.so\""
#endif

#define ENV_VAR "OTEL_RESOURCE_ATTRIBUTES"

/* slurm.h's SLURM_EXTERN_CONT: the step that only holds the job's
 * processes adopted from outside (PrologFlags=Contain). It runs no task. */
#define SO_EXTERN_STEP 0xfffffffcU

/* Built with -fvisibility=hidden; only Slurm's entry points are public
 * (spank_otel.map enforces the same at link time). */
#define SO_EXPORT __attribute__((visibility("default")))

#pragma GCC visibility push(default)
SPANK_PLUGIN(spank-otel, 1)
#pragma GCC visibility pop

#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(25, 5, 0) && !defined(SO_TEST_DEFAULT_FAILURE_MODE)
/* From 25.05 on, Slurm drains the node when slurm_spank_init of a plugin
 * listed as required fails, unless the plugin asks otherwise. This one's
 * init returns 0 on every path; should that ever change, the job fails and
 * the node stays in service: the plugin is never the reason a node
 * drains. */
SO_EXPORT int slurm_spank_init_failure_mode = ESPANK_JOB_FAILURE;
#endif

static const struct so_logger slurm_logger = { so_slurm_emit, NULL };

/* Remote-context state. slurmstepd fills it before it forks the tasks, so
 * each task child starts with a copy. */
static struct so_args args;
static int args_parsed;
static enum so_switch step_choice = SO_SWITCH_INVALID; /* from --otel-attrs */
static enum so_switch rank_choice = SO_SWITCH_INVALID; /* from --otel-rank */
static uid_t trusted_uid;                              /* slurmstepd's uid */
static struct so_lib lib = { .fd = -1 };
/* The node's files for the GPU search, read in user_init (nodefiles.h). */
static struct so_node_files node_files;
/* Step parent: the step's helper, and the node's /dev for
 * the tasks' device check (devices.h), opened where no user chose the
 * mount namespace. Task child: its own socket to the helper. */
static struct so_step_helper step_helper = { .pid = -1, .pidfd = -1, .err = -1 };
static int dev_dir = -1;
static struct so_step_end step_end = { .fd = -1 };

static int otel_attrs_cb(int val, const char *optarg, int remote);
static int otel_rank_cb(int val, const char *optarg, int remote);

static char opt_name[] = SO_OPTION_NAME;
static char opt_arginfo[] = "on|off";
/* Says the site's default, which plugstack.conf's default= sets. */
static char opt_usage[160];
static char rank_name[] = SO_RANK_OPTION_NAME;
static char rank_usage[200];

static struct spank_option otel_attrs_option = {
	opt_name, opt_arginfo, opt_usage, 1, 0, otel_attrs_cb,
};

/* The value is optional: --otel-rank alone means on. */
static struct spank_option otel_rank_option = {
	rank_name, opt_arginfo, rank_usage, 2, 0, otel_rank_cb,
};

/* Takes an on|off option's value into *choice, in slurmstepd (remote). A
 * bad value makes srun, sbatch and salloc refuse to run; slurmstepd only
 * logs it and keeps the site default. An optional value that was not given
 * means on: it arrives as NULL, as "", or, in an srun inside a job that
 * sbatch or salloc gave the option, as the text "(null)" (Slurm's spank.c
 * passes the missing value to a printf). */
static int take_choice(const char *name, const char *optarg, int remote,
		       int optional, enum so_switch *choice)
{
	int none = !optarg || !*optarg || !strcmp(optarg, "(null)");
	enum so_switch v = optional && none ? SO_SWITCH_ON
					    : so_switch_parse(optarg);

	if (v == SO_SWITCH_INVALID) {
		/* The user's text, quoted in one line of slurmd's log: no
		 * control character may start a forged line. */
		char shown[65];

		snprintf(shown, sizeof(shown), "%s", optarg ? optarg : "");
		so_sanitize_line(shown, strlen(shown));
		if (!remote) {
			so_error("--%s: invalid value \"%s\"; accepted values "
				 "are on and off",
				 name, shown);
			return -1;
		}
		so_error("--%s: ignoring invalid value \"%s\" (accepted: on, "
			 "off); using the site default",
			 name, shown);
		return 0;
	}
	if (remote)
		*choice = v;
	return 0;
}

static int otel_attrs_cb(int val, const char *optarg, int remote)
{
	(void)val;
	return take_choice(SO_OPTION_NAME, optarg, remote, 0, &step_choice);
}

static int otel_rank_cb(int val, const char *optarg, int remote)
{
	(void)val;
	return take_choice(SO_RANK_OPTION_NAME, optarg, remote, 1, &rank_choice);
}

static int ranks_enabled(void)
{
	if (rank_choice != SO_SWITCH_INVALID)
		return rank_choice == SO_SWITCH_ON;
	return args.rank_on;
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

/* Writes value into the task's environment and checks that Slurm kept it:
 * spank_setenv reports success even when Slurm's setenvf refused the
 * entry. */
static void write_value(spank_t sp, const char *value, size_t len)
{
	char **env = NULL;
	const char *stored;
	spank_err_t err;

	/* sizeof(ENV_VAR) counts the name and the '='; + 1 for the NUL. */
	if (!so_entry_fits(sizeof(ENV_VAR) + len + 1)) {
		so_error("%s would be %zu bytes with its name and NUL, over "
			 "the %ld-byte limit of one variable; left unchanged",
			 ENV_VAR, sizeof(ENV_VAR) + len + 1, SO_MAX_ENTRY);
		return;
	}
	err = spank_setenv(sp, ENV_VAR, value, 1);
	if (err != ESPANK_SUCCESS) {
		so_error("cannot set %s: %s", ENV_VAR, spank_strerror(err));
		return;
	}
	if (spank_get_item(sp, S_JOB_ENV, &env) == ESPANK_SUCCESS &&
	    (!(stored = so_env_value(env, ENV_VAR)) || strcmp(stored, value))) {
		so_error("Slurm did not store %s (%zu bytes); the task keeps "
			 "its old value", ENV_VAR, len);
		return;
	}
	so_debug("set %s=%.512s%s", ENV_VAR, value, len > 512 ? "..." : "");
}

static void set_attributes(spank_t sp)
{
	struct so_task_request req;
	struct so_result res;
	enum so_status st;
	spank_err_t err;
	char **env = NULL, **argv = NULL;
	uint32_t step;
	int argc = 0;

	err = spank_get_item(sp, S_JOB_ENV, &env);
	if (err != ESPANK_SUCCESS || !env) {
		so_error("cannot read the task environment: %s; %s left "
			 "unchanged", spank_strerror(err), ENV_VAR);
		/* The step's helper sees this task's end closed. */
		if (step_end.fd >= 0)
			close(step_end.fd);
		step_end.fd = -1;
		return;
	}
	if (spank_get_item(sp, S_JOB_ARGV, &argc, &argv) != ESPANK_SUCCESS) {
		argc = 0;
		argv = NULL;
	}
	memset(&req, 0, sizeof(req));
	req.envp = env;
	so_exec_inputs(&req, env, argc, argv);
	req.max_env_bytes = args.max_env;
	/* The step from Slurm itself, which a user's variables cannot
	 * change. */
	if (spank_get_item(sp, S_JOB_STEPID, &step) == ESPANK_SUCCESS) {
		req.flags |= SO_REQ_STEP;
		req.step_id = step;
	}
	if (ranks_enabled())
		req.flags |= SO_REQ_RANK;
	/* The step's helper knows only what the request says; the task
	 * answers which GPUs it may use itself. */
	req.exclude = args.exclude;
	req.node_files = node_files.buf;
	req.node_files_len = node_files.buf ? node_files.len : 0;
	if (node_files.buf && dev_dir >= 0 &&
	    so_devices_ask(node_files.buf, node_files.len, dev_dir,
			   req.devices_asked, req.devices_usable) > 0)
		req.flags |= SO_REQ_DEVICES;
	st = so_step_helper_call(&step_end, &req, args.timeout_ms, &res,
				 &slurm_logger);
	if (st != SO_CALLED)
		return; /* the call said why */
	switch (res.rc) {
	case SO_RC_SET:
		if (res.value)
			write_value(sp, res.value, res.value_len);
		else
			so_error("the library returned no value; %s left "
				 "unchanged", ENV_VAR);
		break;
	case SO_RC_UNSET:
		err = spank_unsetenv(sp, ENV_VAR);
		if (err != ESPANK_SUCCESS)
			so_error("cannot unset %s: %s", ENV_VAR,
				 spank_strerror(err));
		else
			so_debug("unset %s", ENV_VAR);
		break;
	case SO_RC_LEAVE:
		so_debug("%s left unchanged", ENV_VAR);
		break;
	default:
		so_error("the library failed (rc=%d); %s left unchanged",
			 res.rc, ENV_VAR);
		break;
	}
	so_result_free(&res);
}

SO_EXPORT int slurm_spank_init(spank_t sp, int ac, char **av)
{
	spank_context_t ctx = spank_context();
	int remote = spank_remote(sp) == 1;

#ifdef SO_TEST_INIT_FAILS
	/* A test build only (make testlibs): what a failing init costs. */
	if (remote) {
		so_error("test build: slurm_spank_init fails on purpose");
		return -1;
	}
#endif
	/* Quiet outside slurmstepd: srun must not repeat what the admin's
	 * log already says. */
	so_args_parse(&args, SO_DEFAULT_LIB, ac, av,
		      remote ? &slurm_logger : NULL);
	if (ctx == S_CTX_LOCAL || ctx == S_CTX_ALLOCATOR ||
	    ctx == S_CTX_REMOTE) {
		spank_err_t err;

		snprintf(opt_usage, sizeof(opt_usage),
			 "Write this job's Slurm identity into "
			 "OTEL_RESOURCE_ATTRIBUTES of every task (default "
			 "here: %s)", args.default_on ? "on" : "off");
		err = spank_option_register(sp, &otel_attrs_option);
		if (err != ESPANK_SUCCESS)
			so_verbose("cannot register --%s: %s", SO_OPTION_NAME,
				   spank_strerror(err));
		snprintf(rank_usage, sizeof(rank_usage),
			 "Also write each task's rank (SLURM_PROCID) as "
			 "nv.dl.rank, for jobs that start one worker per task; "
			 "not under torchrun (default here: %s)",
			 args.rank_on ? "on" : "off");
		err = spank_option_register(sp, &otel_rank_option);
		if (err != ESPANK_SUCCESS)
			so_verbose("cannot register --%s: %s",
				   SO_RANK_OPTION_NAME, spank_strerror(err));
	}
	if (remote) {
		/* slurmstepd still runs as root (or SlurmdUser) here. */
		trusted_uid = geteuid();
		args_parsed = 1;
	}
	return 0;
}

/* The job's uid, gid and supplementary groups, for the step's helper.
 * Returns 0, or -1 with the reason logged: never run the library with
 * slurmstepd's rights. */
static int job_creds(spank_t sp, uid_t *uid, gid_t *gid, gid_t **groups,
		     int *ngroups)
{
	if (spank_get_item(sp, S_JOB_UID, uid) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_GID, gid) != ESPANK_SUCCESS) {
		so_error("cannot read the job's uid and gid; %s left unchanged",
			 ENV_VAR);
		return -1;
	}
	if (spank_get_item(sp, S_JOB_SUPPLEMENTARY_GIDS, groups, ngroups) !=
		    ESPANK_SUCCESS ||
	    *ngroups < 0) {
		*groups = NULL;
		*ngroups = 0;
	}
	return 0;
}

/* Starts the step's helper, in the step parent itself (still
 * root, before the tasks are forked; slurm_spank_user_init may run in a
 * child that shares no descriptor with it, under contain_spank), from
 * spank-otel-helper beside the library, checked as the library is. */
static void start_step_helper(spank_t sp)
{
	struct so_step_helper_config cfg;
	struct so_lib exe = { .fd = -1 };
	char path[PATH_MAX];
	uid_t uid;
	gid_t gid, *groups = NULL;
	uint32_t local = 0;
	int ngroups = 0;

	if (job_creds(sp, &uid, &gid, &groups, &ngroups) != 0)
		return;
	if (spank_get_item(sp, S_JOB_LOCAL_TASK_COUNT, &local) != ESPANK_SUCCESS ||
	    local == 0) {
		so_error("cannot read the step's task count on this node; %s left "
			 "unchanged", ENV_VAR);
		return;
	}
	so_args_step_helper_path(&args, path, sizeof(path));
	if (so_lib_open(&exe, path, trusted_uid, &slurm_logger) != SO_CALLED)
		return; /* logged why */
	dev_dir = open("/dev", O_PATH | O_DIRECTORY | O_CLOEXEC);
	memset(&cfg, 0, sizeof(cfg));
	cfg.exe_fd = exe.fd;
	cfg.lib = &lib;
	cfg.tasks = local;
	cfg.drop_creds = 1;
	cfg.uid = uid;
	cfg.gid = gid;
	cfg.groups = groups;
	cfg.ngroups = (size_t)ngroups;
	if (so_step_helper_start(&step_helper, &cfg, &slurm_logger) == 0)
		so_debug("step helper: started for %u tasks (pid %d)", local,
			 (int)step_helper.pid);
	close(exe.fd);
}

SO_EXPORT int slurm_spank_init_post_opt(spank_t sp, int ac, char **av)
{
	const char *why;
	uint32_t step = 0;

	(void)ac;
	(void)av;
	if (spank_remote(sp) != 1 || !args_parsed)
		return 0;
	if (spank_get_item(sp, S_JOB_STEPID, &step) == ESPANK_SUCCESS &&
	    step == SO_EXTERN_STEP) {
		so_debug("extern step: no tasks, library not opened");
		return 0;
	}
	/* Options are known now; open and check the file once for the
	 * step, still as root and before any task exists. */
	if (step_enabled(&why))
		so_lib_open(&lib, args.lib, trusted_uid, &slurm_logger);
	if (lib.fd >= 0)
		start_step_helper(sp);
	return 0;
}

/* Whether the step has GPUs on this node: Slurm's gres plugin sets
 * SLURM_STEP_GPUS in the step's environment before this callback when it
 * does, and unsets it when not (gres_common.c). The library's GPU search
 * reads the node's files only for a task that has it. */
static int step_has_gpus(spank_t sp)
{
	char v[2];
	spank_err_t err = spank_getenv(sp, "SLURM_STEP_GPUS", v, sizeof(v));

	return (err == ESPANK_SUCCESS && v[0]) || err == ESPANK_NOSPACE;
}

/* Records the node's files the library's GPU search reads, once for the
 * step's tasks: slurmstepd runs this callback in the step parent with the
 * job user's effective uid, before it forks them. A child process reads
 * them (nodefiles.h), within timeout=: a wedged driver or a hung file
 * system costs the step's tasks their GPU keys, never their launch. */
SO_EXPORT int slurm_spank_user_init(spank_t sp, int ac, char **av)
{
	const char *why, *stuck;
	long long start;
	int records;

	(void)ac;
	(void)av;
	if (spank_remote(sp) != 1 || !args_parsed || !step_enabled(&why) ||
	    lib.fd < 0 || node_files.buf)
		return 0;
	if (!step_has_gpus(sp)) {
		so_debug("node files: not recorded, the step has no GPUs on "
			 "this node");
		return 0;
	}
	start = so_monotonic_us();
	/* slurmd's configuration file, which Slurm also puts in every
	 * task's environment (configless: a file in its cache). */
	records = so_node_files_record(&node_files, "", getenv("SLURM_CONF"),
				       args.timeout_ms);
	if ((stuck = so_node_files_stalled(&node_files))) {
		char left[96] = "";

		if (node_files.left_behind)
			snprintf(left, sizeof(left), "; its reader (%s, pid %d) "
				 "stays blocked in the kernel until the read "
				 "returns", SO_NODE_READER_NAME,
				 (int)node_files.left_behind);
		so_error("node files: reading %.256s did not finish within %d "
			 "ms (a wedged GPU driver or a hung file system?); this "
			 "step's tasks get no GPU keys%s",
			 stuck, args.timeout_ms, left);
	}
	else if (records < 0)
		so_debug("node files: none recorded for the tasks (%s)",
			 strerror(errno));
	else
		so_debug("node files: %d recorded for the tasks (%zu bytes) in "
			 "%lld us%s", records, node_files.len,
			 so_monotonic_us() - start,
			 node_files.no_gpu ? "; no NVIDIA GPU on this node" : "");
	return 0;
}

/* The task must not carry the library's descriptor into execve: the
 * step's helper has its own copy. */
static void close_library(void)
{
	if (lib.fd >= 0)
		close(lib.fd);
	lib.fd = -1;
}

SO_EXPORT int slurm_spank_task_init_privileged(spank_t sp, int ac, char **av)
{
	const char *why;
	int task = 0;

	(void)ac;
	(void)av;
	if (spank_remote(sp) != 1 || !args_parsed || !step_enabled(&why))
		return 0;
	if (spank_get_item(sp, S_TASK_ID, &task) != ESPANK_SUCCESS)
		task = 0;
	/* Its own end only: no task holds another's. */
	if (step_helper.pid >= 0)
		so_step_helper_take(&step_helper, (unsigned)task, &step_end);
	close_library();
	return 0;
}

/* Writes the step's choice of an option back into the task's environment,
 * where a later srun finds it. */
static void pass_on(spank_t sp, const char *name, const char *env,
		    enum so_switch choice)
{
	spank_err_t err;

	if (choice == SO_SWITCH_INVALID)
		return;
	err = spank_setenv(sp, env, choice == SO_SWITCH_ON ? "on" : "off", 1);
	if (err != ESPANK_SUCCESS)
		so_verbose("cannot pass --%s on to later steps: %s", name,
			   spank_strerror(err));
}

SO_EXPORT int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
	const char *why;

	(void)ac;
	(void)av;
	if (spank_remote(sp) != 1 || !args_parsed)
		return 0;
	/* slurmstepd removed Slurm's copies; later steps started from this
	 * task need them (see option.h). */
	pass_on(sp, SO_OPTION_NAME, SO_OPTION_ENV, step_choice);
	pass_on(sp, SO_RANK_OPTION_NAME, SO_RANK_OPTION_ENV, rank_choice);
	if (!step_enabled(&why)) {
		so_debug("disabled for this step (%s)", why);
		return 0;
	}
	if (step_end.fd < 0) {
		so_debug("no helper process (see above); %s left unchanged",
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
	if (spank_remote(sp) == 1) {
		close_library();
		so_node_files_free(&node_files);
		so_step_helper_stop(&step_helper, args.timeout_ms, &slurm_logger);
		if (dev_dir >= 0)
			close(dev_dir);
		dev_dir = -1;
	}
	return 0;
}
