/*
 * stepdrive.c - spank-otel-stepdrive, a step of N tasks around the step's
 * helper (stephelper.h), for the tests: it starts spank-otel-helper as the
 * step parent does, forks the tasks, each of which asks on its own socket
 * as task_init does, and prints what each got and what the helper is.
 *
 *   spank-otel-stepdrive --helper EXE --lib LIB --tasks N --env-file FILE
 *       [--as-user UID[:GID]] [--no-abi-check] [--timeout MS]
 *       [--exclude LIST] [--max-env BYTES] [--node-files ROOT]
 *       [--trusted-uid UID] [--setrlimit RES=SOFT:HARD]...
 *       [--bench ROUNDS] [--reap-any] [--no-close-range]
 *   spank-otel-stepdrive --dump-node-files ROOT [--env-file FILE] [--timeout MS]
 *   spank-otel-stepdrive --cgroup-check DIR --pid N
 *
 * The library and the helper are checked as the shim checks them, owned by
 * root or --trusted-uid (SlurmUser); when the library is refused, the exit
 * code is its status (status.h) and "lib_status=NAME" says which.
 * --setrlimit sets a limit of the step parent, which the helper inherits
 * (RES: AS, DATA, STACK, NPROC; K, M, G suffixes or "unlimited").
 *
 * --node-files records ROOT's GPU files as the step parent does (with the
 * environment's SLURM_CONF; "/" for the machine), and each task then asks
 * which of ROOT/dev/nvidia<N> it may use, as the shim's task_init does.
 * --dump-node-files writes those records to stdout instead, no helper, and
 * on stderr the file whose read stalled.
 * --cgroup-check runs the cgroup and headroom code on a fake tree: DIR
 * holds task.cgroup (as /proc/PID/cgroup), mountinfo and root/ (as
 * /sys/fs/cgroup); it prints each cgroup, the directory found for it, and
 * "headroom=ok" or "headroom=short WHY".
 *
 * --no-close-range makes close_range fail with ENOSYS in this process and
 * everything it starts (a seccomp filter), as on a kernel before 5.9, and
 * prints "close_range=ENOSYS" when it does.
 *
 * Output, one line each: "task=I status=S rc=R value=V", "task=I
 * log=LEVEL TEXT" and "task=I state=same" (or "state=changed WHAT": the
 * task's own state, procstate.h, before it asked against after) per
 * task; then "canary_control=present" (a string put
 * in this process's heap before the helper started, found by the scan
 * that is then run over the helper's memory), "canary=present|absent",
 * "helper_exe=PATH", "helper_threads=N", "helper_uid=R/E/S/F" (and
 * helper_gid, helper_groups, helper_nnp, helper_capeff, helper_capbnd),
 * "helper_oom_score_adj=N", "helper_fds=0:/dev/null;1:pipe;..." and
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
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

#include "../clock.h"
#include "../devices.h"
#include "../helper.h"
#include "../libfile.h"
#include "../nodefiles.h"
#include "../pidfd.h"
#include "../stephelper.h"
#include "../budget.h"
#include "../cgroup.h"
#include "../headroom.h"
#include "../wire.h"
#include "procstate.h"

#if defined(__x86_64__)
#define NATIVE_ARCH AUDIT_ARCH_X86_64
#else
#define NATIVE_ARCH AUDIT_ARCH_AARCH64
#endif

#ifndef SYS_close_range
#define SYS_close_range 436
#endif

static void stderr_emit(void *ctx, enum so_level level, const char *msg)
{
	(void)ctx;
	fprintf(stderr, "%s: %s\n", so_level_name(level), msg);
}

static const struct so_logger stderr_logger = { stderr_emit, NULL };

/* The task's log lines, kept to be printed with its result: static, so
 * that logging grows neither the task's stack nor its heap between its
 * two state snapshots. */
/* A task's value, as long as a value may be (wire.h). */
static char value[SO_WIRE_MAX_VALUE + 1];

static struct task_log {
	char text[16384];
	size_t len;
} task_log;

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
			"[--timeout MS] [--exclude LIST] [--max-env BYTES] "
			"[--node-files ROOT] [--bench ROUNDS] [--reap-any] "
			"[--trusted-uid UID] [--setrlimit RES=SOFT:HARD] [--no-close-range]\n"
			"       spank-otel-stepdrive --dump-node-files ROOT [--env-file FILE] "
			"[--timeout MS]\n"
			"       spank-otel-stepdrive --cgroup-check DIR --pid N\n");
	exit(2);
}

/* The file's entries, separated by NULs, or by newlines in a file
 * without a NUL. */
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
	/* NUL-separated when it has a NUL: then an entry may hold a newline. */
	if (!memchr(data, '\0', len))
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

/* --no-close-range: close_range fails with ENOSYS, as before Linux 5.9,
 * in this process and everything it starts. */
static void deny_close_range(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NATIVE_ARCH, 0, 3),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_close_range, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA)),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { sizeof(f) / sizeof(f[0]), f };

	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) != 0) {
		fprintf(stderr, "stepdrive: --no-close-range: seccomp: %s\n", strerror(errno));
		exit(2);
	}
}

/* The helper's descriptors from outside, "0:/dev/null;1:pipe;3:PATH;
 * 4:socket;..." in order (pipes and sockets by kind). */
static void print_fds(pid_t pid)
{
	char path[64], target[4096];
	const char *sep = "";
	int fd;

	printf("helper_fds=");
	/* Up to the most sockets a step helper is given. */
	for (fd = 0; fd < 4 + 4096 + 1; fd++) {
		ssize_t n;

		snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)pid, fd);
		n = readlink(path, target, sizeof(target) - 1);
		if (n < 0)
			continue;
		target[n] = '\0';
		if (!strncmp(target, "pipe:", 5))
			strcpy(target, "pipe");
		else if (!strncmp(target, "socket:", 7))
			strcpy(target, "socket");
		printf("%s%d:%s", sep, fd, target);
		sep = ";";
	}
	printf("\n");
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
	print_file_line("helper_gid", pid, "status", "Gid:");
	print_file_line("helper_groups", pid, "status", "Groups:");
	print_file_line("helper_nnp", pid, "status", "NoNewPrivs:");
	print_file_line("helper_capeff", pid, "status", "CapEff:");
	print_file_line("helper_capbnd", pid, "status", "CapBnd:");
	print_file_line("helper_oom_score_adj", pid, "oom_score_adj", "");
	print_fds(pid);
	fflush(stdout);
}

/* --setrlimit RES=SOFT:HARD. */
static void set_limit(const char *spec)
{
	static const struct { const char *name; int res; } names[] = {
		{ "AS", RLIMIT_AS }, { "DATA", RLIMIT_DATA },
		{ "STACK", RLIMIT_STACK }, { "NPROC", RLIMIT_NPROC },
	};
	struct rlimit r;
	rlim_t *v[2] = { &r.rlim_cur, &r.rlim_max };
	const char *p = strchr(spec, '=');
	size_t i;
	int k;

	for (i = 0; p && i < sizeof(names) / sizeof(names[0]); i++)
		if (strlen(names[i].name) == (size_t)(p - spec) &&
		    !strncmp(spec, names[i].name, (size_t)(p - spec)))
			break;
	if (!p || i == sizeof(names) / sizeof(names[0]))
		usage();
	for (k = 0, p++; k < 2; k++) {
		char *end;

		if (!strncmp(p, "unlimited", 9)) {
			*v[k] = RLIM_INFINITY;
			end = (char *)p + 9;
		} else {
			*v[k] = strtoull(p, &end, 10);
			if (*end == 'K' || *end == 'M' || *end == 'G')
				*v[k] <<= *end == 'K' ? 10 : *end == 'M' ? 20 : 30, end++;
		}
		if (*end != (k ? '\0' : ':'))
			usage();
		p = end + 1;
	}
	if (setrlimit(names[i].res, &r) != 0) {
		fprintf(stderr, "stepdrive: setrlimit %s: %s\n", spec, strerror(errno));
		exit(2);
	}
}

/* --dump-node-files: the records of root, or why there are none. */
static int dump_node_files(const char *root, const char *conf, int timeout_ms)
{
	struct so_node_files nf;
	long long t0 = so_monotonic_us();
	const char *stalled;
	int n = so_node_files_record(&nf, strcmp(root, "/") ? root : "", conf, timeout_ms);

	if ((stalled = so_node_files_stalled(&nf)))
		fprintf(stderr, "stepdrive: stalled reading %s after %lld ms%s\n", stalled,
			(so_monotonic_us() - t0) / 1000,
			nf.left_behind ? "; the reader is left behind" : "");
	else if (n < 0) {
		fprintf(stderr, "stepdrive: no node files: %s\n", strerror(errno));
		return 1;
	}
	return fwrite(nf.buf, 1, nf.len, stdout) == nf.len && fflush(stdout) == 0 ? 0 : 1;
}

/* --cgroup-check: the cgroup code on a fake tree (see the top). */
static int cgroup_check(const char *tree, pid_t pid)
{
	static struct so_cgroups task;
	char task_file[PATH_MAX], mountinfo[PATH_MAX], root[PATH_MAX];
	char dir[PATH_MAX], why[PATH_MAX + 256];
	struct so_cgroup_files f = { root, mountinfo };
	int i;

	snprintf(task_file, sizeof(task_file), "%s/task.cgroup", tree);
	snprintf(mountinfo, sizeof(mountinfo), "%s/mountinfo", tree);
	snprintf(root, sizeof(root), "%s/root", tree);
	if (so_cgroups_read(task_file, &task) != 0) {
		printf("error=cannot read %s: %s\n", task_file, strerror(errno));
		return 1;
	}
	for (i = 0; i < task.n; i++) {
		const struct so_cgroup *cg = &task.cg[i];

		printf("cgroup %d:%s:%s dir=%s\n", cg->id, cg->controllers, cg->path,
		       so_cgroup_locate(&f, cg, pid, dir, sizeof(dir), NULL) == 0 ? dir : "-");
	}
	if (so_headroom_ok(&f, &task, pid, why, sizeof(why)))
		printf("headroom=ok\n");
	else
		printf("headroom=short %s\n", why);
	return 0;
}

int main(int argc, char **argv)
{
	struct so_step_helper_config cfg;
	struct so_step_helper sh;
	struct so_node_files nf;
	struct so_lib lib = { .fd = -1 };
	const char *exe_path = NULL, *lib_path = NULL, *env_path = NULL;
	const char *exclude = NULL, *node_root = NULL, *cgroup_tree = NULL;
	uid_t trusted = geteuid();
	pid_t check_pid = 0;
	enum so_status st;
	int dump = 0;
	unsigned tasks = 0, t;
	int timeout_ms = 2000, bench = 0, reap_any = 0, no_close_range = 0, round, i;
	long max_env = 0;
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
		if (!strcmp(a, "--no-close-range")) {
			no_close_range = 1;
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
		else if (!strcmp(a, "--max-env"))
			max_env = atol(v);
		else if (!strcmp(a, "--node-files"))
			node_root = v;
		else if (!strcmp(a, "--dump-node-files"))
			node_root = v, dump = 1;
		else if (!strcmp(a, "--cgroup-check"))
			cgroup_tree = v;
		else if (!strcmp(a, "--pid"))
			check_pid = (pid_t)atoi(v);
		else if (!strcmp(a, "--trusted-uid"))
			trusted = (uid_t)strtoul(v, NULL, 10);
		else if (!strcmp(a, "--setrlimit"))
			set_limit(v);
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
	if (cgroup_tree)
		return cgroup_check(cgroup_tree, check_pid);
	if (dump)
		return dump_node_files(node_root, env_path ? so_env_value(read_env(env_path), "SLURM_CONF") : NULL,
				       timeout_ms);
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
	if (no_close_range) {
		deny_close_range();
		/* The control: the filter holds here, so in the helper too. */
		if (syscall(SYS_close_range, 1U << 30, 1U << 30, 0) != 0 && errno == ENOSYS)
			printf("close_range=ENOSYS\n");
		fflush(stdout);
	}
	if ((st = so_lib_open(&lib, lib_path, trusted, &stderr_logger)) != SO_CALLED) {
		printf("lib_status=%s\n", so_status_name(st));
		return st;
	}
	cfg.exe_fd = open(exe_path, O_RDONLY | O_CLOEXEC);
	if (cfg.exe_fd < 0) {
		fprintf(stderr, "stepdrive: %s: %s\n", exe_path, strerror(errno));
		return 2;
	}
	if (node_root && so_node_files_record(&nf, strcmp(node_root, "/") ? node_root : "",
					      so_env_value(env, "SLURM_CONF"), timeout_ms) < 0)
		fprintf(stderr, "stepdrive: no node files recorded under %s\n", node_root);
	if (node_root) {
		/* Each task asks which GPUs it may use, as the shim's does. */
		char dev[PATH_MAX];

		snprintf(dev, sizeof(dev), "%s/dev", strcmp(node_root, "/") ? node_root : "");
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
				static struct so_procstate before, after;
				struct so_logger lg = { task_emit, &task_log };
				struct so_task_request req;
				char diff[512];
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
				req.max_env_bytes = max_env;
				req.node_files = nf.buf;
				req.node_files_len = nf.buf ? nf.len : 0;
				if (nf.buf && dev_dir >= 0 &&
				    so_devices_ask(nf.buf, nf.len, dev_dir, req.devices_asked,
						   req.devices_usable) > 0)
					req.flags |= SO_REQ_DEVICES;
				/* The task gives up its end in the call. */
				if (!bench)
					so_procstate_take(&before, 0, end.fd);
				st = so_step_helper_call(&end, &req, timeout_ms, &res, &lg);
				if (bench)
					_exit(st == SO_CALLED ? 0 : 1);
				/* Kept where it changes no mapping, and released as
				 * the shim does, before the state is taken again. */
				if (res.value)
					snprintf(value, sizeof(value), "%s", res.value);
				else
					strcpy(value, "-");
				so_result_free(&res);
				so_procstate_take(&after, 0, -1);
				o = open_memstream(&out, &outlen);
				if (!o)
					_exit(2);
				fprintf(o, "task=%u status=%s rc=%d value=%s\n", t,
					so_status_name(st), res.rc, value);
				if (so_procstate_diff(&before, &after, diff, sizeof(diff)))
					fprintf(o, "task=%u state=changed %s\n", t, diff);
				else
					fprintf(o, "task=%u state=same\n", t);
				fprintf(o, "task=%u value_len=%zu\n", t,
					strcmp(value, "-") ? strlen(value) : 0);
				for (char *l = task_log.text; *l;) {
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
