/*
 * spank-otel-harness - load and call the spank-otel library exactly as the
 * SPANK plugin does, outside Slurm.
 *
 * The library is opened and checked in this process (the plugin does that
 * in the slurmstepd parent) and loaded and called in a forked child (the
 * plugin does that in the task child), with the same loader, limit checks
 * and signal guard (loader.c, limits.c and guard.c are compiled in).
 *
 *   spank-otel-harness --lib PATH [options]      one call, report on stdout
 *   spank-otel-harness --bench N --lib PATH      N forks, nanoseconds each
 *
 * The report has one item per line: status=, rc=, value=, log= (one per
 * library log line), msg <level> (loader messages), sigstate=, rlimits=.
 * The exit code is the loader status (0 = called), or 128+signal when the
 * child was killed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../guard.h"
#include "../limits.h"
#include "../loader.h"
#include "../solog.h"

extern char **environ;

#define MAX_SETUP 64

struct rlimit_setup {
	int resource;
	struct rlimit value;
};

struct config {
	const char *lib;
	const char *env_file;
	const char *exclude;
	long max_env;
	uid_t trusted_uid;
	long as_uid, as_gid;
	int open_in_child;
	int reuse_fd;
	unsigned flags;
	long bench;
	int ignore[MAX_SETUP], nignore;
	int block[MAX_SETUP], nblock;
	struct rlimit_setup rl[MAX_SETUP];
	int nrl;
};

static const char *level_name(enum so_level l)
{
	switch (l) {
	case SO_LOG_ERROR:
		return "error";
	case SO_LOG_INFO:
		return "info";
	case SO_LOG_VERBOSE:
		return "verbose";
	case SO_LOG_DEBUG:
		return "debug";
	}
	return "?";
}

static void print_emit(void *ctx, enum so_level level, const char *msg)
{
	(void)ctx;
	printf("msg %s spank-otel: %s\n", level_name(level), msg);
}

static const struct so_logger print_logger = { print_emit, NULL };

static void die(const char *fmt, const char *arg)
{
	fprintf(stderr, "spank-otel-harness: ");
	fprintf(stderr, fmt, arg);
	fputc('\n', stderr);
	exit(64);
}

static int parse_signal(const char *s)
{
	char *end = NULL;
	long n = strtol(s, &end, 10);
	int sig;

	if (end != s && *end == '\0' && n > 0 && n < _NSIG)
		return (int)n;
	if (!strncasecmp(s, "SIG", 3))
		s += 3;
	for (sig = 1; sig < _NSIG; sig++) {
		const char *abbrev = sigabbrev_np(sig);

		if (abbrev && !strcasecmp(abbrev, s))
			return sig;
	}
	die("unknown signal \"%s\"", s);
	return -1;
}

static rlim_t parse_size(const char *s)
{
	char *end = NULL;
	unsigned long long v;

	if (!strcasecmp(s, "unlimited") || !strcasecmp(s, "inf"))
		return RLIM_INFINITY;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		die("bad size \"%s\"", s);
	switch (*end) {
	case 'k': case 'K':
		v <<= 10, end++;
		break;
	case 'm': case 'M':
		v <<= 20, end++;
		break;
	case 'g': case 'G':
		v <<= 30, end++;
		break;
	}
	if (*end)
		die("bad size \"%s\"", s);
	return (rlim_t)v;
}

/* RES=SOFT:HARD, e.g. AS=512M:unlimited */
static void parse_rlimit(struct config *c, const char *spec)
{
	static const struct { const char *name; int res; } names[] = {
		{ "AS", RLIMIT_AS }, { "DATA", RLIMIT_DATA },
		{ "STACK", RLIMIT_STACK }, { "NPROC", RLIMIT_NPROC },
		{ "NOFILE", RLIMIT_NOFILE },
	};
	char buf[128], *eq, *colon;
	size_t i;

	if (c->nrl >= MAX_SETUP)
		die("too many --setrlimit%s", "");
	snprintf(buf, sizeof(buf), "%s", spec);
	if (!(eq = strchr(buf, '=')) || !(colon = strchr(eq, ':')))
		die("--setrlimit wants RES=SOFT:HARD, not \"%s\"", spec);
	*eq = *colon = '\0';
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcasecmp(buf, names[i].name))
			break;
	if (i == sizeof(names) / sizeof(names[0]))
		die("unknown limit \"%s\"", buf);
	c->rl[c->nrl].resource = names[i].res;
	c->rl[c->nrl].value.rlim_cur = parse_size(eq + 1);
	c->rl[c->nrl].value.rlim_max = parse_size(colon + 1);
	c->nrl++;
}

/* Reads "K=V" entries separated by NUL bytes (like /proc/PID/environ) or,
 * when the file has none, by newlines. */
static char **read_env_file(const char *path)
{
	FILE *f = fopen(path, "re");
	char *data = NULL, **env, *p, *end, sep;
	size_t len = 0, cap = 0, n = 0, i;

	if (!f)
		die("cannot open %s", path);
	for (;;) {
		size_t got;

		if (cap - len < 4096) {
			cap = cap ? cap * 2 : 65536;
			if (!(data = realloc(data, cap + 1)))
				die("out of memory%s", "");
		}
		got = fread(data + len, 1, cap - len, f);
		len += got;
		if (got == 0)
			break;
	}
	fclose(f);
	data[len] = '\0';
	sep = memchr(data, '\0', len) ? '\0' : '\n';
	for (i = 0; i < len; i++)
		if (data[i] == sep)
			n++;
	if (!(env = calloc(n + 2, sizeof(char *))))
		die("out of memory%s", "");
	n = 0;
	for (p = data, end = data + len; p < end;) {
		char *q = memchr(p, sep, (size_t)(end - p));

		if (!q)
			q = end;
		*q = '\0';
		if (*p)
			env[n++] = p;
		p = q + 1;
	}
	env[n] = NULL;
	return env;
}

static void setup_child(const struct config *c)
{
	sigset_t set;
	int i;

	for (i = 0; i < c->nignore; i++)
		signal(c->ignore[i], SIG_IGN);
	sigemptyset(&set);
	for (i = 0; i < c->nblock; i++)
		sigaddset(&set, c->block[i]);
	if (c->nblock)
		sigprocmask(SIG_BLOCK, &set, NULL);
	for (i = 0; i < c->nrl; i++)
		if (setrlimit(c->rl[i].resource, &c->rl[i].value) != 0) {
			fprintf(stderr, "setrlimit: %s\n", strerror(errno));
			_exit(65);
		}
	if (c->as_uid >= 0) {
		gid_t gid = (gid_t)(c->as_gid >= 0 ? c->as_gid : c->as_uid);

		/* As slurmstepd's task child: real, effective, saved ids. */
		if (setgroups(0, NULL) != 0 || setregid(gid, gid) != 0 ||
		    setreuid((uid_t)c->as_uid, (uid_t)c->as_uid) != 0) {
			fprintf(stderr, "cannot become uid %ld: %s\n",
				c->as_uid, strerror(errno));
			_exit(65);
		}
	}
}

static const int limit_ids[] = { RLIMIT_AS, RLIMIT_DATA, RLIMIT_STACK,
				 RLIMIT_NPROC };
#define NLIMITS (sizeof(limit_ids) / sizeof(limit_ids[0]))

static void get_limits(struct rlimit *out)
{
	size_t i;

	for (i = 0; i < NLIMITS; i++)
		getrlimit(limit_ids[i], &out[i]);
}

static int run_child(const struct config *c, struct so_lib *lib, char **env,
		     int quiet)
{
	const struct so_logger *lg = quiet ? NULL : &print_logger;
	struct so_sigstate before, after;
	struct rlimit lim_before[NLIMITS], lim_after[NLIMITS];
	struct so_request rq;
	struct so_result res;
	enum so_status st;
	char diff[1024];
	size_t i;
	int n;

	setup_child(c);
	if (c->reuse_fd && lib->fd >= 0) {
		/* Another file on the library's descriptor number, as if some
		 * code between the check and the load closed and reused it. */
		int other = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);

		if (other >= 0 && dup3(other, lib->fd, O_CLOEXEC) >= 0)
			close(other);
	}
	if (c->open_in_child) {
		st = so_lib_open(lib, c->lib, c->trusted_uid, lg);
		if (st != SO_CALLED) {
			if (!quiet)
				printf("status=%s\n", so_status_name(st));
			return st;
		}
	}
	rq.envp = env;
	rq.exclude = c->exclude;
	rq.max_env_bytes = c->max_env;
	if (!rq.max_env_bytes) {
		struct rlimit r;

		getrlimit(RLIMIT_STACK, &r);
		rq.max_env_bytes = so_exec_budget(r.rlim_cur, 0, 0);
	}
	rq.flags = c->flags;

	so_sigstate_save(&before);
	get_limits(lim_before);
	st = so_lib_call(lib, &rq, &res, lg);
	get_limits(lim_after);
	so_sigstate_save(&after);

	if (quiet) {
		free(res.value);
		free(res.log);
		return st;
	}
	printf("status=%s\n", so_status_name(st));
	if (st == SO_CALLED) {
		const char *line = res.log;

		printf("rc=%d\n", res.rc);
		if (res.value)
			printf("value=%s\n", res.value);
		while (line && *line) {
			const char *e = strchr(line, '\n');
			int len = e ? (int)(e - line) : (int)strlen(line);

			printf("log=%.*s\n", len, line);
			line = e ? e + 1 : NULL;
		}
		so_emit_library_log(res.log, &print_logger);
	}
	n = so_sigstate_diff(&before, &after, diff, sizeof(diff));
	if (n)
		printf("sigstate=changed %s\n", diff);
	else
		printf("sigstate=same\n");
	n = 0;
	for (i = 0; i < NLIMITS; i++)
		if (lim_before[i].rlim_cur != lim_after[i].rlim_cur ||
		    lim_before[i].rlim_max != lim_after[i].rlim_max)
			n++;
	printf("rlimits=%s\n", n ? "changed" : "same");
	printf("ignored=");
	for (i = 1; i < _NSIG; i++) {
		struct sigaction sa;

		const char *name = sigabbrev_np((int)i);

		if (sigaction((int)i, NULL, &sa) != 0 ||
		    (sa.sa_flags & SA_SIGINFO) || sa.sa_handler != SIG_IGN)
			continue;
		if (name)
			printf("%s ", name);
		else
			printf("%zu ", i);
	}
	printf("\n");
	free(res.value);
	free(res.log);
	return st;
}

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int wait_child(pid_t pid, int report)
{
	int status;

	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return 70;
	if (WIFSIGNALED(status)) {
		if (report)
			fprintf(stderr,
				"spank-otel-harness: child killed by signal %d "
				"(%s)\n",
				WTERMSIG(status), strsignal(WTERMSIG(status)));
		return 128 + WTERMSIG(status);
	}
	return WEXITSTATUS(status);
}

static void usage(FILE *f)
{
	fprintf(f,
"usage: spank-otel-harness --lib PATH [options]\n"
"       spank-otel-harness --bench N --lib PATH [options]\n"
"  --lib PATH            library to load (absolute path)\n"
"  --env-file FILE       task environment, K=V entries separated by NUL or\n"
"                        newline (default: this program's environment)\n"
"  --exclude LIST        comma-separated keys passed to the library\n"
"  --max-env N           execve budget passed to the library (default:\n"
"                        computed from RLIMIT_STACK like the plugin)\n"
"  --trusted-uid UID     owner accepted besides root (default: euid)\n"
"  --as-user UID[:GID]   child switches to this user before loading\n"
"  --open-in-child       open and check in the child, not the parent\n"
"  --reuse-fd            child puts another file on the library's\n"
"                        descriptor before loading (must be refused)\n"
"  --no-abi-check        accept a library without spank_otel_abi\n"
"  --no-guard            do not restore the signal state after the call\n"
"  --ignore SIG          child ignores SIG before loading (repeatable)\n"
"  --block SIG           child blocks SIG before loading (repeatable)\n"
"  --setrlimit R=S:H     child sets limit R (AS, DATA, STACK, NPROC,\n"
"                        NOFILE) before loading; sizes take K/M/G or\n"
"                        'unlimited' (repeatable)\n"
"  --bench N             fork N children one after another, each loading\n"
"                        and calling the library; print nanoseconds per\n"
"                        fork (fork to exit), one per line. Implies\n"
"                        --no-abi-check so an empty library can be timed.\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "lib", required_argument, NULL, 'l' },
		{ "env-file", required_argument, NULL, 'e' },
		{ "exclude", required_argument, NULL, 'x' },
		{ "max-env", required_argument, NULL, 'm' },
		{ "trusted-uid", required_argument, NULL, 't' },
		{ "as-user", required_argument, NULL, 'u' },
		{ "open-in-child", no_argument, NULL, 'o' },
		{ "reuse-fd", no_argument, NULL, 'R' },
		{ "no-abi-check", no_argument, NULL, 'A' },
		{ "no-guard", no_argument, NULL, 'G' },
		{ "ignore", required_argument, NULL, 'i' },
		{ "block", required_argument, NULL, 'b' },
		{ "setrlimit", required_argument, NULL, 'r' },
		{ "bench", required_argument, NULL, 'B' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct config c;
	char **env;
	struct so_lib lib = { .fd = -1 };
	enum so_status st;
	int opt, rc;
	pid_t pid;

	memset(&c, 0, sizeof(c));
	c.trusted_uid = geteuid();
	c.as_uid = c.as_gid = -1;
	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		char *end = NULL;

		switch (opt) {
		case 'l':
			c.lib = optarg;
			break;
		case 'e':
			c.env_file = optarg;
			break;
		case 'x':
			c.exclude = optarg;
			break;
		case 'm':
			c.max_env = strtol(optarg, &end, 10);
			if (*end || c.max_env <= 0)
				die("bad --max-env \"%s\"", optarg);
			break;
		case 't':
			c.trusted_uid = (uid_t)strtoul(optarg, &end, 10);
			if (*end)
				die("bad --trusted-uid \"%s\"", optarg);
			break;
		case 'u':
			c.as_uid = strtol(optarg, &end, 10);
			if (*end == ':')
				c.as_gid = strtol(end + 1, &end, 10);
			if (*end || c.as_uid < 0)
				die("bad --as-user \"%s\"", optarg);
			break;
		case 'o':
			c.open_in_child = 1;
			break;
		case 'R':
			c.reuse_fd = 1;
			break;
		case 'A':
			c.flags |= SO_FLAG_NO_ABI_CHECK;
			break;
		case 'G':
			c.flags |= SO_FLAG_NO_GUARD;
			break;
		case 'i':
			if (c.nignore >= MAX_SETUP)
				die("too many --ignore%s", "");
			c.ignore[c.nignore++] = parse_signal(optarg);
			break;
		case 'b':
			if (c.nblock >= MAX_SETUP)
				die("too many --block%s", "");
			c.block[c.nblock++] = parse_signal(optarg);
			break;
		case 'r':
			parse_rlimit(&c, optarg);
			break;
		case 'B':
			c.bench = strtol(optarg, &end, 10);
			if (*end || c.bench <= 0)
				die("bad --bench \"%s\"", optarg);
			c.flags |= SO_FLAG_NO_ABI_CHECK;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 64;
		}
	}
	if (!c.lib || optind != argc) {
		usage(stderr);
		return 64;
	}
	env = c.env_file ? read_env_file(c.env_file) : environ;

	if (!c.open_in_child) {
		/* Like the plugin in the slurmstepd parent. */
		st = so_lib_open(&lib, c.lib, c.trusted_uid,
				 c.bench ? NULL : &print_logger);
		if (st != SO_CALLED) {
			if (c.bench) {
				fprintf(stderr, "spank-otel-harness: %s: %s\n",
					c.lib, so_status_name(st));
			} else {
				printf("status=%s\n", so_status_name(st));
			}
			return st;
		}
	}

	if (c.bench) {
		long i, failed = 0;

		for (i = 0; i < c.bench; i++) {
			long long t0 = now_ns(), t1;

			fflush(stdout);
			pid = fork();
			if (pid < 0)
				die("fork: %s", strerror(errno));
			if (pid == 0)
				_exit(run_child(&c, &lib, env, 1));
			rc = wait_child(pid, 1);
			t1 = now_ns();
			if (rc)
				failed++;
			printf("%lld\n", t1 - t0);
		}
		if (failed)
			fprintf(stderr,
				"spank-otel-harness: %ld of %ld children did "
				"not call the library\n",
				failed, c.bench);
		return failed ? 1 : 0;
	}

	fflush(stdout);
	pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0) {
		rc = run_child(&c, &lib, env, 0);
		fflush(stdout);
		_exit(rc);
	}
	return wait_child(pid, 1);
}
