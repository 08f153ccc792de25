/*
 * spank-otel-probe - the shim's own checks of one plugstack.conf line, for
 * `spank-otel doctor`.
 *
 * The doctor is Go built without cgo; the rules a lib= path must pass are
 * the shim's C code (args.c, libfile.c), so the doctor runs this program
 * instead of keeping a second copy of them. With --call it also runs the
 * library once the way a task does (stephelper.c, helper.c), on this
 * process's own environment, which the doctor makes a synthetic task's.
 *
 *   spank-otel-probe [--call] [--as-user UID] [--trusted-uid UID] [ARG...]
 *
 * ARG... are the arguments of the plugin's plugstack.conf line. The report
 * has one item per line:
 *   msg <level> <text>      a line the shim would log (level: error, info,
 *                           verbose, debug)
 *   lib= lib_ok= default= rank= exclude= max_env= timeout_ms=
 *                           the arguments as the shim reads them
 *   step_helper= step_helper_status=
 *                           with --call: spank-otel-helper beside the
 *                           library, and so_lib_open's verdict
 *   lib_status=<status>     so_lib_open's verdict (status.h names)
 *   call_status=<status>    with --call: the helper's
 *   rc= value= (or no_value) the library's answer; its log lines come as
 *                           msg lines, as the shim logs them
 * Exit code: 0 when the library passes (and, with --call, answered), the
 * status number otherwise, 64 on a usage error.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "args.h"
#include "budget.h"
#include "fds.h"
#include "helper.h"
#include "libfile.h"
#include "solog.h"
#include "status.h"
#include "stephelper.h"

#ifndef SO_DEFAULT_LIB
#error "SO_DEFAULT_LIB must be defined (the Makefile passes DEFAULT_LIB)"
#endif

#define EXIT_USAGE 64

extern char **environ;

/* Every message on one line of its own: the report is read line by line. */
static void print_emit(void *ctx, enum so_level level, const char *msg)
{
	(void)ctx;
	printf("msg %s ", so_level_name(level));
	for (; *msg; msg++)
		putchar(*msg == '\n' ? ' ' : *msg);
	putchar('\n');
}

static const struct so_logger msg_logger = { print_emit, NULL };

static int parse_uid(const char *s, uid_t *uid)
{
	char *end = NULL;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < 0 || v > 0x7fffffffL)
		return -1;
	*uid = (uid_t)v;
	return 0;
}

/* The step's helper, started for one task and asked by it, from
 * spank-otel-helper beside the library, checked as the shim checks it. */
static enum so_status probe_step_call(struct so_lib *lib, const struct so_args *a,
				      int drop, uid_t uid, uid_t trusted_uid,
				      struct so_task_request *req,
				      struct so_result *res)
{
	struct so_step_helper_config cfg;
	struct so_step_helper sh;
	struct so_lib exe = { .fd = -1 };
	char path[PATH_MAX];
	gid_t gid = (gid_t)uid;
	enum so_status st;
	struct so_step_end end;

	so_args_step_helper_path(a, path, sizeof(path));
	st = so_lib_open(&exe, path, trusted_uid, &msg_logger);
	printf("step_helper=%s\nstep_helper_status=%s\n", path, so_status_name(st));
	if (st != SO_CALLED)
		return st;
	memset(&cfg, 0, sizeof(cfg));
	cfg.exe_fd = exe.fd;
	cfg.lib = lib;
	cfg.tasks = 1;
	if (drop) {
		cfg.drop_creds = 1;
		cfg.uid = uid;
		cfg.gid = gid;
		cfg.groups = &gid;
		cfg.ngroups = 1;
	}
	if (so_step_helper_start(&sh, &cfg, &msg_logger) != 0) {
		close(exe.fd);
		return SO_HELPER_FAILED;
	}
	close(exe.fd);
	/* This process is the step parent and the task at once: it takes
	 * the task's end and keeps its handles on the helper. */
	end.fd = sh.socks[0];
	sh.socks[0] = -1;
	so_fd_id(end.fd, end.id);
	req->exclude = a->exclude;
	st = so_step_helper_call(&end, req, a->timeout_ms, res, &msg_logger);
	so_step_helper_stop(&sh, a->timeout_ms, &msg_logger);
	return st;
}

/* Runs the library once as a task would: this process is the step parent
 * and the task child, its environment the task's. */
static enum so_status probe_call(struct so_lib *lib, const struct so_args *a,
				 int drop, uid_t uid, uid_t trusted_uid)
{
	struct so_task_request req;
	struct so_result res;
	enum so_status st;

	/* As the shim asks, for a task of step 0 with no arguments. */
	memset(&req, 0, sizeof(req));
	req.envp = environ;
	so_exec_inputs(&req, environ, 0, NULL);
	req.max_env_bytes = a->max_env;
	req.flags = SO_REQ_STEP | (a->rank_on ? SO_REQ_RANK : 0);
	req.step_id = 0;
	memset(&res, 0, sizeof(res));
	st = probe_step_call(lib, a, drop, uid, trusted_uid, &req, &res);
	if (st == SO_CALLED) {
		printf("rc=%d\n", res.rc);
		if (res.value)
			printf("value=%s\n", res.value);
		else
			printf("no_value\n");
	}
	so_result_free(&res);
	return st;
}

static void usage(FILE *f)
{
	fprintf(f, "Usage: spank-otel-probe [--call] [--as-user UID] "
		   "[--trusted-uid UID] [PLUGSTACK-ARG...]\n"
		   "Checks the arguments and the lib= file of spank-otel's "
		   "plugstack.conf line with the shim's own rules;\n"
		   "--call runs the library on this environment as a task "
		   "would (as UID when root). Default lib: %s\n",
		   SO_DEFAULT_LIB);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "call", no_argument, NULL, 'c' },
		{ "as-user", required_argument, NULL, 'u' },
		{ "trusted-uid", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct so_args a;
	struct so_lib lib = { .fd = -1 };
	enum so_status st;
	uid_t as_uid = 0, trusted_uid = 0;
	int call = 0, drop = 0, opt;

	/* '+': stop at the first plugstack argument. */
	while ((opt = getopt_long(argc, argv, "+", opts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			call = 1;
			break;
		case 'u':
			if (parse_uid(optarg, &as_uid) != 0) {
				usage(stderr);
				return EXIT_USAGE;
			}
			drop = 1;
			break;
		case 't':
			if (parse_uid(optarg, &trusted_uid) != 0) {
				usage(stderr);
				return EXIT_USAGE;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	/* Dropping credentials needs root; as a user the helper keeps ours. */
	if (drop && geteuid() != 0)
		drop = 0;

	so_args_parse(&a, SO_DEFAULT_LIB, argc - optind, argv + optind,
		      &msg_logger);
	printf("lib=%s\nlib_ok=%d\ndefault=%s\nrank=%s\nexclude=%s\n"
	       "max_env=%ld\ntimeout_ms=%d\n",
	       a.lib, a.lib_ok, a.default_on ? "on" : "off",
	       a.rank_on ? "on" : "off", a.exclude, a.max_env, a.timeout_ms);
	if (!a.lib_ok) {
		printf("lib_status=%s\n", so_status_name(SO_REFUSED));
		return SO_REFUSED;
	}
	st = so_lib_open(&lib, a.lib, trusted_uid, &msg_logger);
	printf("lib_status=%s\n", so_status_name(st));
	if (st != SO_CALLED || !call) {
		if (lib.fd >= 0)
			close(lib.fd);
		return st;
	}
	st = probe_call(&lib, &a, drop, as_uid, trusted_uid);
	printf("call_status=%s\n", so_status_name(st));
	return st;
}
