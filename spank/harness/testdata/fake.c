/*
 * fake.c - a stand-in for the spank-otel Go library, for testing the loader
 * without Go. It behaves like a Go c-shared library where it matters to the
 * plugin: loading it installs its own SIGPIPE and SIGSEGV handlers (Go does
 * so even over an inherited SIG_IGN for SIGPIPE), and a call changes the
 * thread's signal mask and leaves an alternate signal stack behind.
 *
 * What spank_otel_task_env does is read from the task environment given
 * to it:
 *   FAKE_RC=0|1|-1    return code (default 1)
 *   FAKE_VALUE=text   the value returned (default "fake.job=<SLURM_JOB_ID>")
 *   FAKE_NULL=1       return rc 1 with a NULL value
 *   FAKE_LOG=a|b      extra log lines, '|' separates them
 *   FAKE_VALUE_LEN=N  return a value of N bytes ("x" repeated)
 *   FAKE_CRASH=1      abort() (to test that a crash is reported)
 *   FAKE_EXIT=N       _exit(N) in the middle of the call
 *   FAKE_HANG=1       never return (to test the timeout)
 *   FAKE_STDERR=text  write text and a newline to stderr first
 *   FAKE_REPORT=1     return what the helper process looks like from inside:
 *                     "uid=R/E/S,gid=R/E/S,groups=A:B,CapInh=..,CapPrm=..,
 *                     CapEff=..,CapBnd=..,CapAmb=..,NoNewPrivs=N,dumpable=N,
 *                     keepcaps=N,securebits=N,fds=0:/dev/null;1:pipe;...
 *                     (":cloexec" on close-on-exec ones),cgroup=L1;L2;..,
 *                     cpus=A:B,pgid=N,glibc_tid=ok|stale,oom_score_adj=N"
 *   FAKE_FORGE=nul    write an answer straight to the socket, whose value
 *                     is "a=1", a NUL, "b=2", and exit
 *   FAKE_FORGE=linger write a valid answer ("fake.forged=1") straight to
 *                     the socket, then never return
 * It always adds the log line "D exclude=<exclude> max_env=<n> envc=<n>".
 *
 * Build variants: -DFAKE_ABI=N (another ABI), -DFAKE_NO_ABI (no
 * spank_otel_abi, like the empty-library baseline).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../../../cgo/contract.h"
#include "../../wire.h"

#ifndef FAKE_ABI
#define FAKE_ABI SO_ABI_VERSION
#endif

#define EXPORT __attribute__((visibility("default")))

static void on_signal(int sig)
{
	(void)sig;
}

__attribute__((constructor)) static void fake_load(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sa.sa_flags = SA_ONSTACK | SA_RESTART;
	sigaction(SIGPIPE, &sa, NULL);
	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGURG, &sa, NULL);
}

#ifndef FAKE_NO_ABI
EXPORT int spank_otel_abi(void)
{
	return FAKE_ABI;
}
#endif

static const char *lookup(char **envp, const char *name)
{
	size_t len = strlen(name);

	for (; envp && *envp; envp++)
		if (!strncmp(*envp, name, len) && (*envp)[len] == '=')
			return *envp + len + 1;
	return NULL;
}

/* Appends to a report of at most 8 KiB. */
static void add(char *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void add(char *r, const char *fmt, ...)
{
	size_t len = strlen(r);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r + len, 8192 - len, fmt, ap);
	va_end(ap);
}

/* The value of key in a /proc/self/status-like file, trimmed. */
static void status_field(const char *key, char *out, size_t len)
{
	char line[512];
	size_t n = strlen(key);
	FILE *f = fopen("/proc/self/status", "re");

	snprintf(out, len, "?");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, n) && line[n] == ':') {
			char *v = line + n + 1;

			v += strspn(v, " \t");
			v[strcspn(v, "\n")] = '\0';
			snprintf(out, len, "%s", v);
			break;
		}
	fclose(f);
}

/* glibc's idea of this thread's id against the kernel's: a thread CPU
 * clock id carries the thread id glibc holds (~tid << 3 | 6). */
static const char *glibc_tid(void)
{
	clockid_t cid;
	pid_t held;

	if (pthread_getcpuclockid(pthread_self(), &cid) != 0)
		return "unknown";
	held = (pid_t)~((int)cid >> 3);
	return held == (pid_t)syscall(SYS_gettid) ? "ok" : "stale";
}

static char *report(void)
{
	static const char *caps[] = { "CapInh", "CapPrm", "CapEff", "CapBnd",
				       "CapAmb", "NoNewPrivs" };
	char *r = calloc(1, 8192), v[256], link[64], target[256], buf[4096];
	uid_t ru, eu, su;
	gid_t rg, eg, sg, groups[64];
	cpu_set_t set;
	struct dirent *d;
	DIR *dir;
	FILE *f;
	size_t i;
	int n, cpu, first;

	getresuid(&ru, &eu, &su);
	getresgid(&rg, &eg, &sg);
	add(r, "uid=%u/%u/%u,gid=%u/%u/%u,groups=", ru, eu, su, rg, eg, sg);
	n = getgroups(64, groups);
	for (i = 0; n > 0 && i < (size_t)n; i++)
		add(r, "%s%u", i ? ":" : "", groups[i]);
	for (i = 0; i < sizeof(caps) / sizeof(caps[0]); i++) {
		status_field(caps[i], v, sizeof(v));
		add(r, ",%s=%s", caps[i], v);
	}
	add(r, ",dumpable=%d,keepcaps=%d,securebits=%d,fds=",
	    prctl(PR_GET_DUMPABLE, 0, 0, 0, 0), prctl(PR_GET_KEEPCAPS, 0, 0, 0, 0),
	    prctl(PR_GET_SECUREBITS, 0, 0, 0, 0));
	if ((dir = opendir("/proc/self/fd"))) {
		first = 1;
		while ((d = readdir(dir))) {
			int fd = atoi(d->d_name);
			ssize_t t;

			if (d->d_name[0] == '.' || fd == dirfd(dir))
				continue;
			snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
			t = readlink(link, target, sizeof(target) - 1);
			target[t > 0 ? t : 0] = '\0';
			if (strchr(target, ':') && strchr(target, '['))
				*strchr(target, ':') = '\0'; /* socket, pipe */
			add(r, "%s%d:%s%s", first ? "" : ";", fd, target,
			    (fcntl(fd, F_GETFD) & FD_CLOEXEC) ? ":cloexec" : "");
			first = 0;
		}
		closedir(dir);
	}
	add(r, ",cgroup=");
	if ((f = fopen("/proc/self/cgroup", "re"))) {
		first = 1;
		while (fgets(buf, sizeof(buf), f)) {
			buf[strcspn(buf, "\n")] = '\0';
			add(r, "%s%s", first ? "" : ";", buf);
			first = 0;
		}
		fclose(f);
	}
	add(r, ",cpus=");
	if (sched_getaffinity(0, sizeof(set), &set) == 0)
		for (cpu = 0, first = 1; cpu < CPU_SETSIZE; cpu++)
			if (CPU_ISSET(cpu, &set)) {
				add(r, "%s%d", first ? "" : ":", cpu);
				first = 0;
			}
	add(r, ",pgid=%d,glibc_tid=%s,oom_score_adj=", (int)getpgid(0),
	    glibc_tid());
	if ((f = fopen("/proc/self/oom_score_adj", "re"))) {
		if (fgets(buf, sizeof(buf), f))
			add(r, "%d", atoi(buf));
		fclose(f);
	}
	return r;
}

/* A library that writes an answer to the helper's socket (4) itself. */
static void forge(const char *how)
{
	static const char nul[] = "a=1\0b=2", ok[] = "fake.forged=1";
	const char *value = strcmp(how, "nul") ? ok : nul;
	size_t len = strcmp(how, "nul") ? sizeof(ok) - 1 : sizeof(nul) - 1;
	struct so_wire_answer a;

	memset(&a, 0, sizeof(a));
	a.magic = SO_WIRE_ANSWER_MAGIC;
	a.status = 0;
	a.rc = 1;
	a.has_value = 1;
	a.value_len = (uint32_t)len;
	if (write(4, &a, sizeof(a)) != sizeof(a) ||
	    write(4, value, len) != (ssize_t)len)
		_exit(9);
	if (strcmp(how, "linger"))
		_exit(0);
	for (;;)
		pause();
}

EXPORT int spank_otel_task_env(struct so_task_request *req, char **value,
			       char **log)
{
	char **envp = req->envp;
	const char *exclude = req->exclude;
	static char altstack[64 * 1024];
	const char *rc = lookup(envp, "FAKE_RC");
	const char *val = lookup(envp, "FAKE_VALUE");
	const char *extra = lookup(envp, "FAKE_LOG");
	const char *job = lookup(envp, "SLURM_JOB_ID");
	size_t envc = 0, len;
	sigset_t set;
	stack_t ss;
	char *p;

	/* What a Go runtime does to a C thread calling into it. */
	sigfillset(&set);
	sigdelset(&set, SIGUSR2);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	sigemptyset(&set);
	sigaddset(&set, SIGUSR2);
	sigprocmask(SIG_BLOCK, &set, NULL);
	ss.ss_sp = altstack;
	ss.ss_size = sizeof(altstack);
	ss.ss_flags = 0;
	sigaltstack(&ss, NULL);

	if ((p = (char *)lookup(envp, "FAKE_STDERR")))
		fprintf(stderr, "%s\n", p);
	if ((p = (char *)lookup(envp, "FAKE_FORGE")))
		forge(p);
	if (lookup(envp, "FAKE_CRASH"))
		abort();
	if ((p = (char *)lookup(envp, "FAKE_EXIT")))
		_exit(atoi(p));
	if (lookup(envp, "FAKE_HANG"))
		for (;;)
			pause();
	while (envp && envp[envc])
		envc++;

	*value = NULL;
	if (lookup(envp, "FAKE_REPORT")) {
		*value = report();
	} else if ((p = (char *)lookup(envp, "FAKE_VALUE_LEN"))) {
		len = (size_t)atol(p);
		*value = malloc(len + 1);
		memset(*value, 'x', len);
		(*value)[len] = '\0';
	} else if (!lookup(envp, "FAKE_NULL")) {
		len = 32 + (val ? strlen(val) : (job ? strlen(job) : 4));
		*value = malloc(len);
		if (val)
			snprintf(*value, len, "%s", val);
		else
			snprintf(*value, len, "fake.job=%s", job ? job : "none");
	}

	len = 256 + (exclude ? strlen(exclude) : 0) +
	      (extra ? strlen(extra) : 0);
	*log = malloc(len);
	snprintf(*log, len,
		 "%s%sD exclude=%s max_env=%lld stack=%llu argc=%llu "
		 "argv_bytes=%llu flags=%u step=%u envc=%zu\n",
		 extra ? extra : "", extra ? "\n" : "",
		 exclude ? exclude : "(null)", (long long)req->max_env_bytes,
		 (unsigned long long)req->stack_limit,
		 (unsigned long long)req->argv_count,
		 (unsigned long long)req->argv_bytes, req->flags, req->step_id,
		 envc);
	for (p = *log; *p; p++)
		if (*p == '|')
			*p = '\n';
	return rc ? atoi(rc) : 1;
}
