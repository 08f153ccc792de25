/*
 * spank-otel-mockslurm - a stand-in for the parts of Slurm that call the
 * spank-otel plugin, to test spank_otel.so without a cluster.
 *
 * It loads the plugin like Slurm does (dlopen, the plugin_* symbols),
 * provides the spank_* and slurm_* functions the plugin calls, and runs the
 * callbacks in the order of one context:
 *   local/allocator: init, option callback (remote=0), init_post_opt, exit
 *   remote: init, option from the launch request (--option) or else from
 *           the step environment (as slurmstepd does, removing it there),
 *           init_post_opt, user_init (with --as-user's effective uid,
 *           as slurmstepd's seteuid), then per task a forked child that runs
 *           task_init_privileged as root, becomes --as-user, and runs
 *           task_init; then exit.
 * It prints one item per line: plugin_*, options=, option_cb=, the
 * callbacks' return codes, "log <level> <text>", and for each task the
 * variables the plugin writes ("env=K=V"), "task_init=", the task's
 * threads and children after task_init ("task_threads=", "task_children="),
 * whether the task ever mapped the library ("task_mapped_lib="), holds a
 * descriptor of it after task_init ("task_lib_fd=") and whether the parent
 * mapped it ("parent_mapped_lib=").
 *
 * --fail-item uid makes S_JOB_UID unavailable, as a Slurm that cannot say
 * the job's user.
 *
 * spank_setenv behaves like Slurm's: an entry of --max-entry bytes or more
 * (name, '=', value and NUL; default 131072) is dropped and success is
 * still returned.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <slurm/spank.h>

#include "procstate.h"

#define EXPORT __attribute__((visibility("default")))

struct spank_handle {
	spank_context_t ctx;
	int in_init;
	char ***env;
	int argc;
	char **argv;
};

static spank_context_t current_ctx = S_CTX_ERROR;
static uid_t job_uid;
static gid_t job_gid;
static gid_t job_gids[1];
static int task_id;
static uint32_t local_tasks = 1;
static uint32_t step_id;
static size_t max_entry = 131072;
static int fail_uid;
static struct spank_option registered[16];
static int nregistered;

static void vlog(const char *level, const char *fmt, va_list ap)
{
	printf("log %s ", level);
	vprintf(fmt, ap);
	printf("\n");
	fflush(stdout);
}

#define LOGFN(name, level)                                                 \
	EXPORT void name(const char *fmt, ...)                             \
	{                                                                  \
		va_list ap;                                                \
		va_start(ap, fmt);                                         \
		vlog(level, fmt, ap);                                      \
		va_end(ap);                                                \
	}

LOGFN(slurm_error, "error")
LOGFN(slurm_info, "info")
LOGFN(slurm_verbose, "verbose")
LOGFN(slurm_debug, "debug")
LOGFN(slurm_debug2, "debug2")
LOGFN(slurm_debug3, "debug3")
LOGFN(slurm_spank_log, "spank")

EXPORT const char *spank_strerror(spank_err_t err)
{
	static char buf[32];

	snprintf(buf, sizeof(buf), "mock spank error %d", (int)err);
	return buf;
}

EXPORT spank_context_t spank_context(void)
{
	return current_ctx;
}

EXPORT int spank_remote(spank_t sp)
{
	if (!sp)
		return -1;
	return sp->ctx == S_CTX_REMOTE;
}

EXPORT int spank_symbol_supported(const char *name)
{
	return name && !strncmp(name, "slurm_spank_", 12);
}

EXPORT spank_err_t spank_option_register(spank_t sp, struct spank_option *opt)
{
	if (!sp || !sp->in_init || !opt || !opt->name || !opt->usage)
		return ESPANK_BAD_ARG;
	if (nregistered >= 16)
		return ESPANK_NOSPACE;
	registered[nregistered++] = *opt;
	return ESPANK_SUCCESS;
}

EXPORT spank_err_t spank_get_item(spank_t sp, spank_item_t item, ...)
{
	spank_err_t rc = ESPANK_SUCCESS;
	va_list ap;

	if (!sp)
		return ESPANK_BAD_ARG;
	if (sp->ctx != S_CTX_REMOTE)
		return ESPANK_NOT_REMOTE;
	va_start(ap, item);
	switch (item) {
	case S_JOB_ENV:
		*va_arg(ap, char ***) = *sp->env;
		break;
	case S_JOB_ARGV:
		*va_arg(ap, int *) = sp->argc;
		*va_arg(ap, char ***) = sp->argv;
		break;
	case S_JOB_UID:
		if (fail_uid) {
			rc = ESPANK_NOT_AVAIL;
			break;
		}
		*va_arg(ap, uid_t *) = job_uid;
		break;
	case S_JOB_GID:
		*va_arg(ap, gid_t *) = job_gid;
		break;
	case S_JOB_SUPPLEMENTARY_GIDS:
		job_gids[0] = job_gid;
		*va_arg(ap, gid_t **) = job_gids;
		*va_arg(ap, int *) = 1;
		break;
	case S_TASK_ID:
		*va_arg(ap, int *) = task_id;
		break;
	case S_JOB_LOCAL_TASK_COUNT:
		*va_arg(ap, uint32_t *) = local_tasks;
		break;
	case S_JOB_STEPID:
		*va_arg(ap, uint32_t *) = step_id;
		break;
	default:
		rc = ESPANK_NOT_AVAIL;
		break;
	}
	va_end(ap);
	return rc;
}

static char **env_find(char **env, const char *name)
{
	size_t len = strlen(name);

	for (; *env; env++)
		if (!strncmp(*env, name, len) && (*env)[len] == '=')
			return env;
	return NULL;
}

static void env_unset(char **env, const char *name)
{
	char **e = env_find(env, name);

	if (!e)
		return;
	for (; *e; e++)
		e[0] = e[1];
}

EXPORT spank_err_t spank_setenv(spank_t sp, const char *var, const char *val,
				int overwrite)
{
	char **env, **e, *entry;
	size_t n = 0;

	if (!sp || !var || !val)
		return ESPANK_BAD_ARG;
	if (sp->ctx != S_CTX_REMOTE)
		return ESPANK_NOT_REMOTE;
	env = *sp->env;
	if ((e = env_find(env, var)) && !overwrite)
		return ESPANK_ENV_EXISTS;
	if (strlen(var) + strlen(val) + 2 >= max_entry) {
		/* Slurm's setenvf refuses it; spank_setenv does not say. */
		printf("log error (slurm) environment variable %s is too long\n",
		       var);
		return ESPANK_SUCCESS;
	}
	if (asprintf(&entry, "%s=%s", var, val) < 0)
		return ESPANK_ERROR;
	if (e) {
		*e = entry;
		return ESPANK_SUCCESS;
	}
	while (env[n])
		n++;
	/* Like Slurm, the array may move: callers must fetch it again. */
	env = realloc(env, (n + 2) * sizeof(char *));
	if (!env)
		return ESPANK_ERROR;
	env[n] = entry;
	env[n + 1] = NULL;
	*sp->env = env;
	return ESPANK_SUCCESS;
}

/* As Slurm's: ESPANK_NOSPACE when the value and its NUL do not fit. */
EXPORT spank_err_t spank_getenv(spank_t sp, const char *var, char *buf,
				int len)
{
	char **e;
	const char *val;

	if (!sp || !var || !buf || len <= 0)
		return ESPANK_BAD_ARG;
	if (sp->ctx != S_CTX_REMOTE)
		return ESPANK_NOT_REMOTE;
	if (!(e = env_find(*sp->env, var)))
		return ESPANK_ENV_NOEXIST;
	val = *e + strlen(var) + 1;
	if (strlen(val) >= (size_t)len)
		return ESPANK_NOSPACE;
	strcpy(buf, val);
	return ESPANK_SUCCESS;
}

EXPORT spank_err_t spank_unsetenv(spank_t sp, const char *var)
{
	if (!sp || !var)
		return ESPANK_BAD_ARG;
	if (sp->ctx != S_CTX_REMOTE)
		return ESPANK_NOT_REMOTE;
	env_unset(*sp->env, var);
	return ESPANK_SUCCESS;
}

/* "_SLURM_SPANK_OPTION_" + plugin name + "_" + option name, each byte
 * that is not alphanumeric as '_' (Slurm's naming). */
static void option_env_name(const char *plugin, const char *opt, char *buf,
			    size_t len)
{
	char *p;

	snprintf(buf, len, "_SLURM_SPANK_OPTION_%s_%s", plugin, opt);
	for (p = buf + 20; *p; p++)
		if (!isalnum((unsigned char)*p))
			*p = '_';
}

static int parent_mapped(const char *needle)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[4096];
	int found = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, needle))
			found = 1;
	fclose(f);
	return found;
}

/* Does a descriptor of this process name a file whose path has needle? */
static int holds_fd(const char *needle)
{
	char path[64], target[4096];
	int fd;

	for (fd = 0; fd < 1024; fd++) {
		ssize_t n;

		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		n = readlink(path, target, sizeof(target) - 1);
		if (n <= 0)
			continue;
		target[n] = '\0';
		if (strstr(target, needle))
			return 1;
	}
	return 0;
}

/* What a plugin between task_init_privileged and task_init may do: close
 * the descriptors it finds and open other files at their numbers. */
static void clobber_fds(void)
{
	int null = open("/dev/null", O_RDWR | O_CLOEXEC), fd;

	for (fd = 3; fd < 1024; fd++)
		if (fd != null && fcntl(fd, F_GETFD) >= 0)
			dup3(null, fd, O_CLOEXEC);
	close(null);
}

static void usage(void)
{
	fprintf(stderr,
"usage: spank-otel-mockslurm --plugin SO [--context local|allocator|remote]\n"
"       [--arg ARG]... [--option [NAME=]VALUE]... [--env K=V]... [--argv WORD]...\n"
"       [--tasks N] [--as-user UID] [--watch-lib SUBSTRING]\n"
"       [--ignore-sigpipe] [--step-id N] [--max-entry BYTES]\n"
"       [--fail-item uid] [--clobber-fds]\n");
	exit(64);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "plugin", required_argument, NULL, 'p' },
		{ "context", required_argument, NULL, 'c' },
		{ "arg", required_argument, NULL, 'a' },
		{ "option", required_argument, NULL, 'o' },
		{ "env", required_argument, NULL, 'e' },
		{ "argv", required_argument, NULL, 'v' },
		{ "tasks", required_argument, NULL, 't' },
		{ "as-user", required_argument, NULL, 'u' },
		{ "watch-lib", required_argument, NULL, 'w' },
		{ "ignore-sigpipe", no_argument, NULL, 'i' },
		{ "step-id", required_argument, NULL, 's' },
		{ "max-entry", required_argument, NULL, 'M' },
		{ "fail-item", required_argument, NULL, 'F' },
		{ "clobber-fds", no_argument, NULL, 'C' },
		{ NULL, 0, NULL, 0 },
	};
	/* --option VALUE is the first registered option's (--otel-attrs);
	 * --option NAME=VALUE names it. */
	const char *plugin = NULL, *option = NULL, *named[8], *watch = NULL;
	int nnamed = 0, clobber = 0;
	char *pargs[32], *targv[32], **env;
	int npargs = 0, ntargv = 0, nenv = 0, tasks = 1, opt, rc, i;
	long as_uid = -1;
	struct spank_handle h;
	spank_f *init, *post_opt, *user_init, *task_priv, *task_init, *spank_exit;
	const char *pname, *ptype;
	const unsigned int *pversion;
	void *so;

	env = calloc((size_t)argc + 1, sizeof(char *));
	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 'p':
			plugin = optarg;
			break;
		case 'c':
			if (!strcmp(optarg, "local"))
				current_ctx = S_CTX_LOCAL;
			else if (!strcmp(optarg, "allocator"))
				current_ctx = S_CTX_ALLOCATOR;
			else if (!strcmp(optarg, "remote"))
				current_ctx = S_CTX_REMOTE;
			else
				usage();
			break;
		case 'a':
			if (npargs < 31)
				pargs[npargs++] = optarg;
			break;
		case 'o':
			if (strchr(optarg, '=') && nnamed < 8)
				named[nnamed++] = optarg;
			else
				option = optarg;
			break;
		case 'e':
			env[nenv++] = strdup(optarg);
			break;
		case 'v':
			if (ntargv < 31)
				targv[ntargv++] = optarg;
			break;
		case 't':
			tasks = atoi(optarg);
			local_tasks = tasks > 0 ? (uint32_t)tasks : 1;
			break;
		case 'u':
			as_uid = atol(optarg);
			break;
		case 'w':
			watch = optarg;
			break;
		case 'i':
			/* As a task launched from a shell that ignores it. */
			signal(SIGPIPE, SIG_IGN);
			break;
		case 's':
			step_id = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 'M':
			max_entry = (size_t)strtoul(optarg, NULL, 10);
			break;
		case 'F':
			if (strcmp(optarg, "uid"))
				usage();
			fail_uid = 1;
			break;
		case 'C':
			clobber = 1;
			break;
		default:
			usage();
		}
	}
	if (!plugin || optind != argc)
		usage();
	if (current_ctx == S_CTX_ERROR)
		current_ctx = S_CTX_REMOTE;
	pargs[npargs] = NULL;
	targv[ntargv] = NULL;
	env[nenv] = NULL;

	/* Slurm uses RTLD_LAZY; the plugin is linked with -z now, so every
	 * symbol it needs must resolve here, as in every Slurm command. */
	if (!(so = dlopen(plugin, RTLD_LAZY))) {
		printf("dlopen_error=%s\n", dlerror());
		return 1;
	}
	pname = dlsym(so, "plugin_name");
	ptype = dlsym(so, "plugin_type");
	pversion = dlsym(so, "plugin_version");
	init = (spank_f *)dlsym(so, "slurm_spank_init");
	post_opt = (spank_f *)dlsym(so, "slurm_spank_init_post_opt");
	user_init = (spank_f *)dlsym(so, "slurm_spank_user_init");
	task_priv = (spank_f *)dlsym(so, "slurm_spank_task_init_privileged");
	task_init = (spank_f *)dlsym(so, "slurm_spank_task_init");
	spank_exit = (spank_f *)dlsym(so, "slurm_spank_exit");
	printf("plugin_name=%s\nplugin_type=%s\nplugin_version_ok=%s\n",
	       pname ? pname : "(missing)", ptype ? ptype : "(missing)",
	       pversion && *pversion == SLURM_VERSION_NUMBER ? "yes" : "no");
	if (!pname || !init)
		return 1;

	job_uid = as_uid >= 0 ? (uid_t)as_uid : getuid();
	job_gid = as_uid >= 0 ? (gid_t)as_uid : getgid();
	memset(&h, 0, sizeof(h));
	h.ctx = current_ctx;
	h.env = &env;
	h.argc = ntargv;
	h.argv = targv;

	h.in_init = 1;
	rc = init(&h, npargs, pargs);
	h.in_init = 0;
	printf("init=%d\n", rc);
	for (i = 0; i < nregistered; i++)
		printf("options=--%s=%s has_arg=%d usage=%s\n",
		       registered[i].name,
		       registered[i].arginfo ? registered[i].arginfo : "",
		       registered[i].has_arg, registered[i].usage);

	for (i = 0; i < nregistered; i++) {
		char name[256];
		char **e;
		const char *value = i == 0 ? option : NULL;
		int remote = current_ctx == S_CTX_REMOTE, k;
		size_t len = strlen(registered[i].name);

		for (k = 0; k < nnamed; k++)
			if (!strncmp(named[k], registered[i].name, len) &&
			    named[k][len] == '=')
				value = named[k] + len + 1;
		option_env_name(pname, registered[i].name, name, sizeof(name));
		if (value) {
			/* srun/sbatch command line, or the launch request. */
			rc = registered[i].cb(registered[i].val, value, remote);
			printf("option_cb=%d\n", rc);
		} else if (remote && (e = env_find(env, name))) {
			/* slurmstepd: from the step environment. */
			rc = registered[i].cb(registered[i].val,
					      strchr(*e, '=') + 1, 1);
			printf("option_cb_env=%d\n", rc);
		}
		if (remote)
			env_unset(env, name);
	}

	if (post_opt)
		printf("init_post_opt=%d\n", post_opt(&h, npargs, pargs));

	if (current_ctx == S_CTX_REMOTE && user_init) {
		if (as_uid >= 0 && seteuid((uid_t)as_uid) != 0)
			printf("seteuid_error=%s\n", strerror(errno));
		printf("user_init=%d\n", user_init(&h, npargs, pargs));
		if (as_uid >= 0 && seteuid(0) != 0)
			printf("seteuid_error=%s\n", strerror(errno));
	}

	if (current_ctx == S_CTX_REMOTE && task_init) {
		for (i = 0; i < tasks; i++) {
			int status;
			pid_t pid;

			fflush(stdout);
			pid = fork();
			if (pid == 0) {
				struct so_procstate ps;
				struct sigaction sa;
				char **e;

				task_id = i;
				if (task_priv)
					printf("task_init_privileged=%d\n",
					       task_priv(&h, npargs, pargs));
				if (clobber)
					clobber_fds();
				if (as_uid >= 0 &&
				    (setgroups(0, NULL) ||
				     setregid((gid_t)as_uid, (gid_t)as_uid) ||
				     setreuid((uid_t)as_uid, (uid_t)as_uid))) {
					printf("setreuid_error=%s\n",
					       strerror(errno));
					_exit(1);
				}
				rc = task_init(&h, npargs, pargs);
				so_procstate_take(&ps, 0, -1);
				printf("task_init=%d\n", rc);
				printf("task_threads=%d\ntask_children=%d\n",
				       ps.threads, ps.children);
				if (watch) {
					printf("task_mapped_lib=%s\n",
					       parent_mapped(watch) == 1 ? "yes"
									 : "no");
					printf("task_lib_fd=%s\n",
					       holds_fd(watch) ? "yes" : "no");
				}
				sigaction(SIGPIPE, NULL, &sa);
				printf("sigpipe=%s\n",
				       (sa.sa_flags & SA_SIGINFO) ? "handler"
				       : sa.sa_handler == SIG_IGN ? "ignored"
				       : sa.sa_handler == SIG_DFL ? "default"
								  : "handler");
				for (e = env; *e; e++)
					if (!strncmp(*e, "OTEL_", 5) ||
					    !strncmp(*e, "_SLURM_SPANK_", 13))
						printf("env=%s\n", *e);
				fflush(stdout);
				_exit(0);
			}
			waitpid(pid, &status, 0);
			if (WIFSIGNALED(status))
				printf("task_killed=%d\n", WTERMSIG(status));
		}
	}
	if (spank_exit)
		printf("exit=%d\n", spank_exit(&h, npargs, pargs));
	if (watch)
		printf("parent_mapped_lib=%s\n",
		       parent_mapped(watch) == 1 ? "yes" : "no");
	return 0;
}
