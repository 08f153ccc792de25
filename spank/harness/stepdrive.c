/*
 * stepdrive.c - spank-otel-stepdrive, a step of N tasks around the step's
 * helper (stephelper.h), for the tests: it starts spank-otel-helper as the
 * step parent does, forks the tasks, each of which asks on its own socket
 * as task_init does, and prints what each got and what the helper is.
 *
 *   spank-otel-stepdrive --helper EXE --lib LIB --tasks N --env-file FILE
 *       [--as-user UID[:GID]] [--no-abi-check] [--timeout MS]
 *       [--exclude LIST] [--node-files ROOT] [--bench ROUNDS] [--reap-any]
 *
 * --node-files records ROOT's GPU files as the step parent does, and each
 * task then asks which of ROOT/dev/nvidia<N> it may use, as the shim's
 * task_init does.
 *
 * Output, one line each: "task=I status=S rc=R value=V" and "task=I
 * log=LEVEL TEXT" per task; then "canary_control=present" (a string put
 * in this process's heap before the helper started, found by the scan
 * that is then run over the helper's memory), "canary=present|absent",
 * "helper_exe=PATH", "helper_threads=N", "helper_uid=R/E/S", and
 * "helper_end=exited:N|killed:SIG|left" once every task's socket is
 * closed. --bench prints "bench_us=U" per round instead (one step of N
 * tasks, start to the last answer). --reap-any reaps the helper, once it
 * has ended, with a wait for any child, as slurmstepd's step parent does,
 * before the stop (which then cannot wait for it).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../clock.h"
#include "../devices.h"
#include "../helper.h"
#include "../libfile.h"
#include "../nodefiles.h"
#include "../pidfd.h"
#include "../stephelper.h"

static void stderr_emit(void *ctx, enum so_level level, const char *msg)
{
	(void)ctx;
	fprintf(stderr, "%s: %s\n", so_level_name(level), msg);
}

static const struct so_logger stderr_logger = { stderr_emit, NULL };

/* The task's log lines, kept to be printed with its result. */
struct task_log {
	char text[16384];
	size_t len;
};

static void task_emit(void *ctx, enum so_level level, const char *msg)
{
	struct task_log *t = ctx;
	int n = snprintf(t->text + t->len, sizeof(t->text) - t->len, "log=%s %s\n",
			 so_level_name(level), msg);

	if (n > 0 && t->len + (size_t)n < sizeof(t->text))
		t->len += (size_t)n;
}

static void __attribute__((noreturn)) usage(void)
{
	fprintf(stderr, "usage: spank-otel-stepdrive --helper EXE --lib LIB --tasks N "
			"--env-file FILE [--as-user UID[:GID]] [--no-abi-check] "
			"[--timeout MS] [--exclude LIST] [--node-files ROOT] "
			"[--bench ROUNDS] [--reap-any]\n");
	exit(2);
}

/* The file's entries, separated by newlines or NULs. */
static char **read_env(const char *path)
{
	FILE *f = fopen(path, "re");
	char *data, **env;
	size_t len, n = 0, i;
	long end;

	if (!f || fseek(f, 0, SEEK_END) != 0 || (end = ftell(f)) < 0) {
		fprintf(stderr, "stepdrive: cannot read %s\n", path);
		exit(2);
	}
	len = (size_t)end;
	rewind(f);
	data = malloc(len + 1);
	if (!data || fread(data, 1, len, f) != len)
		exit(2);
	fclose(f);
	data[len] = '\0';
	for (i = 0; i < len; i++)
		if (data[i] == '\n')
			data[i] = '\0';
	for (i = 0; i < len; i++)
		if (data[i] && (i == 0 || !data[i - 1]))
			n++;
	env = calloc(n + 1, sizeof(char *));
	if (!env)
		exit(2);
	for (i = 0, n = 0; i < len; i++)
		if (data[i] && (i == 0 || !data[i - 1]))
			env[n++] = data + i;
	return env;
}

/* Does the readable memory of pid hold needle? 1 or 0; -1 when it cannot
 * be read (the process is gone). */
static int memory_holds(pid_t pid, const char *needle)
{
	char path[64], line[512];
	size_t nlen = strlen(needle);
	FILE *maps;
	int mem, found = 0;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	maps = fopen(path, "re");
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	mem = open(path, O_RDONLY | O_CLOEXEC);
	if (!maps || mem < 0) {
		if (maps)
			fclose(maps);
		return -1;
	}
	while (!found && fgets(line, sizeof(line), maps)) {
		unsigned long lo, hi;
		char perms[8];

		if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) != 3 || perms[0] != 'r' ||
		    strstr(line, "[vvar") || strstr(line, "[vsyscall]"))
			continue;
		for (unsigned long at = lo; !found && at < hi;) {
			static char buf[1 << 16];
			size_t want = hi - at < sizeof(buf) ? hi - at : sizeof(buf);
			ssize_t n = pread(mem, buf, want, (off_t)at);

			if (n <= 0)
				break;
			found = memmem(buf, (size_t)n, needle, nlen) != NULL;
			/* A needle across two reads: step back by its length. */
			at += (unsigned long)n > nlen && (size_t)n == want && at + (unsigned long)n < hi
				      ? (unsigned long)n - nlen : (unsigned long)n;
		}
	}
	fclose(maps);
	close(mem);
	return found;
}

static void print_file_line(const char *label, pid_t pid, const char *file,
			    const char *key)
{
	char path[64], line[256];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
	if (!(f = fopen(path, "re")))
		return;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, key, strlen(key)))
			continue;
		char *v = line + strlen(key);
		v += strspn(v, " \t");
		v[strcspn(v, "\n")] = '\0';
		for (char *c = v; *c; c++)
			if (*c == '\t')
				*c = '/';
		printf("%s=%s\n", label, v);
	}
	fclose(f);
}

/* What the helper is, from outside: its image, whether the canary of this
 * process's heap is in its memory, its threads and credentials. */
static void describe_helper(pid_t pid, const char *canary)
{
	char path[64], target[4096];
	ssize_t n;

	static const char *const holds[] = { "unreadable", "absent", "present" };

	printf("canary_control=%s\n", holds[memory_holds(getpid(), canary) + 1]);
	printf("canary=%s\n", holds[memory_holds(pid, canary) + 1]);
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	n = readlink(path, target, sizeof(target) - 1);
	target[n > 0 ? n : 0] = '\0';
	printf("helper_exe=%s\n", target);
	print_file_line("helper_threads", pid, "status", "Threads:");
	print_file_line("helper_uid", pid, "status", "Uid:");
	print_file_line("helper_nnp", pid, "status", "NoNewPrivs:");
	print_file_line("helper_capeff", pid, "status", "CapEff:");
	fflush(stdout);
}

int main(int argc, char **argv)
{
	struct so_step_helper_config cfg;
	struct so_step_helper sh;
	struct so_node_files nf;
	struct so_lib lib = { .fd = -1 };
	const char *exe_path = NULL, *lib_path = NULL, *env_path = NULL;
	const char *exclude = NULL, *node_root = NULL;
	unsigned tasks = 0, t;
	int timeout_ms = 2000, bench = 0, reap_any = 0, round, i;
	char **env, *canary;
	int dev_dir = -1;
	pid_t *task_pids;
	uid_t uid = 0;
	gid_t gid = 0;

	memset(&cfg, 0, sizeof(cfg));
	memset(&nf, 0, sizeof(nf));
	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--no-abi-check")) {
			cfg.flags |= SO_FLAG_NO_ABI_CHECK;
			continue;
		}
		if (!strcmp(a, "--reap-any")) {
			reap_any = 1;
			continue;
		}
		if (!v)
			usage();
		i++;
		if (!strcmp(a, "--helper"))
			exe_path = v;
		else if (!strcmp(a, "--lib"))
			lib_path = v;
		else if (!strcmp(a, "--tasks"))
			tasks = (unsigned)atoi(v);
		else if (!strcmp(a, "--env-file"))
			env_path = v;
		else if (!strcmp(a, "--timeout"))
			timeout_ms = atoi(v);
		else if (!strcmp(a, "--exclude"))
			exclude = v;
		else if (!strcmp(a, "--node-files"))
			node_root = v;
		else if (!strcmp(a, "--bench"))
			bench = atoi(v);
		else if (!strcmp(a, "--as-user")) {
			char *end;

			uid = (uid_t)strtoul(v, &end, 10);
			gid = *end == ':' ? (gid_t)strtoul(end + 1, NULL, 10) : (gid_t)uid;
			cfg.drop_creds = 1;
		} else
			usage();
	}
	if (!exe_path || !lib_path || !env_path || tasks < 1)
		usage();
	env = read_env(env_path);
	task_pids = calloc(tasks, sizeof(pid_t));
	if (!task_pids)
		return 2;
	/* In this process's heap before the helper starts: a fork would
	 * carry it into the helper, an exec does not. */
	canary = malloc(64);
	if (!canary)
		return 2;
	snprintf(canary, 64, "SPANKOTEL-CANARY-%u-%lld", (unsigned)getpid(),
		 so_monotonic_us());
	if (so_lib_open(&lib, lib_path, geteuid(), &stderr_logger) != SO_CALLED)
		return 3;
	cfg.exe_fd = open(exe_path, O_RDONLY | O_CLOEXEC);
	if (cfg.exe_fd < 0) {
		fprintf(stderr, "stepdrive: %s: %s\n", exe_path, strerror(errno));
		return 2;
	}
	if (node_root && so_node_files_record(&nf, node_root, NULL, timeout_ms) < 0)
		fprintf(stderr, "stepdrive: no node files recorded under %s\n", node_root);
	if (node_root) {
		/* Each task asks which GPUs it may use, as the shim's does. */
		char dev[PATH_MAX];

		snprintf(dev, sizeof(dev), "%s/dev", node_root);
		dev_dir = open(dev, O_PATH | O_DIRECTORY | O_CLOEXEC);
	}
	cfg.lib = &lib;
	/* One socket more than tasks: this process holds it, so that the
	 * helper is still there to be looked at once the tasks are done. */
	cfg.tasks = tasks + 1;
	cfg.uid = uid;
	cfg.gid = gid;
	cfg.groups = &gid;
	cfg.ngroups = 1;

	for (round = 0; round < (bench ? bench : 1); round++) {
		long long start = so_monotonic_us();
		int held;

		if (so_step_helper_start(&sh, &cfg, &stderr_logger) != 0)
			return 4;
		for (t = 0; t < tasks; t++) {
			pid_t pid = fork();

			if (pid < 0)
				return 2;
			task_pids[t] = pid;
			if (pid == 0) {
				struct task_log tl = { .len = 0 };
				struct so_logger lg = { task_emit, &tl };
				struct so_task_request req;
				struct so_result res;
				enum so_status st;
				struct so_step_end end;
				char *out;
				size_t outlen;
				FILE *o;

				so_step_helper_take(&sh, t, &end);
				memset(&req, 0, sizeof(req));
				req.envp = env;
				req.exclude = exclude;
				req.stack_limit = 8 << 20;
				req.node_files = nf.buf;
				req.node_files_len = nf.buf ? nf.len : 0;
				if (nf.buf && dev_dir >= 0 &&
				    so_devices_ask(nf.buf, nf.len, dev_dir, req.devices_asked,
						   req.devices_usable) > 0)
					req.flags |= SO_REQ_DEVICES;
				st = so_step_helper_call(&end, &req, timeout_ms, &res, &lg);
				if (bench)
					_exit(st == SO_CALLED ? 0 : 1);
				o = open_memstream(&out, &outlen);
				if (!o)
					_exit(2);
				fprintf(o, "task=%u status=%s rc=%d value=%s\n", t,
					so_status_name(st), res.rc,
					res.value ? res.value : "-");
				for (char *l = tl.text; *l;) {
					char *nl = strchr(l, '\n');

					fprintf(o, "task=%u %.*s\n", t, (int)(nl - l), l);
					l = nl + 1;
				}
				fclose(o);
				if (write(STDOUT_FILENO, out, outlen) < 0)
					_exit(2);
				_exit(0);
			}
		}
		held = sh.socks[tasks];
		sh.socks[tasks] = -1;
		so_step_helper_release(&sh);
		for (t = 0; t < tasks; t++) {
			int status;

			/* By pid: after its exec the helper is an ordinary
			 * child, which a wait for any child would reap. */
			if (waitpid(task_pids[t], &status, 0) < 0 || !WIFEXITED(status) ||
			    WEXITSTATUS(status))
				fprintf(stderr, "stepdrive: a task failed (status 0x%x)\n", status);
		}
		if (bench) {
			printf("bench_us=%lld\n", so_monotonic_us() - start);
			close(held);
			so_step_helper_stop(&sh, timeout_ms, &stderr_logger);
			continue;
		}
		fflush(stdout);
		{
			siginfo_t si;

			memset(&si, 0, sizeof(si));
			/* Only a helper still there can be looked at. */
			if (waitid(P_PIDFD, (id_t)sh.pidfd, &si, WEXITED | WNOHANG | WNOWAIT | __WALL) == 0 &&
			    si.si_pid == 0)
				describe_helper(sh.pid, canary);
		}
		/* Every socket closed: the helper ends by itself. */
		close(held);
		{
			struct pollfd p = { sh.pidfd, POLLIN, 0 };
			siginfo_t si;

			poll(&p, 1, timeout_ms);
			memset(&si, 0, sizeof(si));
			if (waitid(P_PIDFD, (id_t)sh.pidfd, &si, WEXITED | WNOHANG | WNOWAIT | __WALL) == 0 &&
			    si.si_pid != 0)
				printf("helper_end=%s:%d\n", si.si_code == CLD_EXITED ? "exited" : "killed",
				       si.si_status);
			else
				printf("helper_end=left\n");
			fflush(stdout);
			if (reap_any && si.si_pid != 0)
				while (waitpid(-1, NULL, __WALL) > 0)
					;
			/* Its stderr's first line, and the reaping. */
			so_step_helper_stop(&sh, timeout_ms, &stderr_logger);
		}
	}
	return 0;
}
