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
 * It always adds the log line "D exclude=<exclude> max_env=<n> envc=<n>".
 *
 * Build variants: -DFAKE_ABI=2 (wrong ABI), -DFAKE_NO_ABI (no
 * spank_otel_abi, like the empty-library baseline).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef FAKE_ABI
#define FAKE_ABI 1
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

EXPORT int spank_otel_task_env(char **envp, const char *exclude,
			       long max_env_bytes, char **value, char **log)
{
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
	if ((p = (char *)lookup(envp, "FAKE_VALUE_LEN"))) {
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

	len = 96 + (exclude ? strlen(exclude) : 0) +
	      (extra ? strlen(extra) : 0);
	*log = malloc(len);
	snprintf(*log, len, "%s%sD exclude=%s max_env=%ld envc=%zu\n",
		 extra ? extra : "", extra ? "\n" : "",
		 exclude ? exclude : "(null)", max_env_bytes, envc);
	for (p = *log; *p; p++)
		if (*p == '|')
			*p = '\n';
	return rc ? atoi(rc) : 1;
}
