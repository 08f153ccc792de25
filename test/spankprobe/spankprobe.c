/*
 * spankprobe.c - a test-only SPANK plugin for the spank-otel cluster tests.
 * Never installed outside the test cluster. Three roles, from its
 * plugstack.conf arguments:
 *
 *   role=probe name=NAME
 *       In task_init, records what the task process looks like (threads,
 *       children, signal dispositions and mask, alternate stack, limits,
 *       mappings without [heap], descriptors, CPUs, uid) and puts it into
 *       the task's environment as SPANK_PROBE_<NAME>. Placed before and
 *       after spank-otel it shows what spank-otel's task_init changed.
 *
 *   role=container [image_env=FILE] [keep=VAR[,VAR...]] [forge_proc=LIB]
 *       What a container plugin such as pyxis does in task_init: enters a
 *       new user and mount namespace (the kernel refuses that to a
 *       multithreaded process), optionally makes every /proc/self/fd entry point to
 *       LIB there (a container's user owns that namespace and can), and
 *       imports the image's environment from FILE (NAME=value lines) with
 *       overwrite, except the variables in keep= (pyxis's
 *       --container-env). The result goes into SPANK_CONTAINER as
 *       "ok" or the failing step and its errno text.
 *
 *   role=hold ms=N
 *       Sleeps N milliseconds in task_init: placed before spank-otel it
 *       holds each task between task_init_privileged (the helper started)
 *       and spank-otel's task_init (the helper asked), where a step
 *       cancelled while its tasks start finds them.
 *
 * Every callback returns 0, so a failure shows in the task's environment
 * instead of failing the job.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <slurm/spank.h>

#include "procstate.h"

#define EXPORT __attribute__((visibility("default")))

#pragma GCC visibility push(default)
SPANK_PLUGIN(spankprobe, 1)
#pragma GCC visibility pop

static const char *arg(int ac, char **av, const char *key)
{
	size_t len = strlen(key);
	int i;

	for (i = 0; i < ac; i++)
		if (!strncmp(av[i], key, len) && av[i][len] == '=')
			return av[i] + len + 1;
	return NULL;
}

static void probe(spank_t sp, const char *name)
{
	struct so_procstate s;
	char summary[1024], var[128];
	cpu_set_t set;
	int cpus = -1;

	so_procstate_take(&s, SO_PS_NO_HEAP, -1);
	if (sched_getaffinity(0, sizeof(set), &set) == 0)
		cpus = CPU_COUNT(&set);
	so_procstate_format(&s, summary, sizeof(summary));
	snprintf(summary + strlen(summary), sizeof(summary) - strlen(summary),
		 " cpus=%d uid=%u", cpus, (unsigned)getuid());
	snprintf(var, sizeof(var), "SPANK_PROBE_%s", name);
	spank_setenv(sp, var, summary, 1);
}

static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = write(fd, text, strlen(text));
	close(fd);
	return n == (ssize_t)strlen(text) ? 0 : -1;
}

/* A /proc/self/fd whose every entry names lib, bind-mounted over the real
 * one: any dlopen of /proc/self/fd/N from here on loads lib. */
static int forge_proc_fd(const char *lib)
{
	char dir[] = "/tmp/spankprobe-fd.XXXXXX", path[PATH_MAX], self[64];
	int i;

	if (mount("spankprobe", "/tmp", "tmpfs", 0, "mode=1777") != 0 ||
	    !mkdtemp(dir))
		return -1;
	for (i = 0; i < 256; i++) {
		snprintf(path, sizeof(path), "%s/%d", dir, i);
		if (symlink(lib, path) != 0)
			return -1;
	}
	snprintf(self, sizeof(self), "/proc/%d/fd", (int)getpid());
	return mount(dir, self, NULL, MS_BIND, NULL);
}

static int kept(const char *keep, const char *name, size_t len)
{
	const char *p = keep;

	while (p && *p) {
		const char *end = strchr(p, ',');
		size_t n = end ? (size_t)(end - p) : strlen(p);

		if (n == len && !strncmp(p, name, len))
			return 1;
		p = end ? end + 1 : NULL;
	}
	return 0;
}

static int import_env(spank_t sp, const char *file, const char *keep)
{
	char line[8192];
	FILE *f = fopen(file, "re");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char *eq = strchr(line, '=');
		size_t len = strcspn(line, "\n");

		line[len] = '\0';
		if (!eq || eq == line)
			continue;
		*eq = '\0';
		if (kept(keep, line, strlen(line)))
			continue;
		spank_setenv(sp, line, eq + 1, 1);
	}
	fclose(f);
	return 0;
}

static void container(spank_t sp, int ac, char **av)
{
	const char *image_env = arg(ac, av, "image_env");
	const char *keep = arg(ac, av, "keep");
	const char *lib = arg(ac, av, "forge_proc");
	char map[64], result[256];
	const char *step = "ok";
	uid_t uid = geteuid();
	gid_t gid = getegid();

	/* After the switch from root the task is not dumpable, which makes
	 * its uid_map root's; a container runtime's helper has exec'd. */
	prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
	if (unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) {
		step = "unshare(CLONE_NEWUSER|CLONE_NEWNS)";
		goto out;
	}
	snprintf(map, sizeof(map), "%u %u 1", (unsigned)uid, (unsigned)uid);
	if (write_file("/proc/self/uid_map", map) != 0) {
		step = "uid_map";
		goto out;
	}
	write_file("/proc/self/setgroups", "deny");
	snprintf(map, sizeof(map), "%u %u 1", (unsigned)gid, (unsigned)gid);
	if (write_file("/proc/self/gid_map", map) != 0) {
		step = "gid_map";
		goto out;
	}
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) {
		step = "mount --make-rprivate /";
		goto out;
	}
	if (lib && forge_proc_fd(lib) != 0) {
		step = "forging /proc/self/fd";
		goto out;
	}
	if (image_env && import_env(sp, image_env, keep) != 0)
		step = "reading image_env";
out:
	if (strcmp(step, "ok"))
		snprintf(result, sizeof(result), "%s: %s", step, strerror(errno));
	else
		snprintf(result, sizeof(result), "ok");
	spank_setenv(sp, "SPANK_CONTAINER", result, 1);
}

EXPORT int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
	const char *role = arg(ac, av, "role");
	const char *name = arg(ac, av, "name");

	if (!spank_remote(sp) || !role)
		return 0;
	if (!strcmp(role, "probe"))
		probe(sp, name ? name : "X");
	else if (!strcmp(role, "container"))
		container(sp, ac, av);
	else if (!strcmp(role, "hold") && arg(ac, av, "ms")) {
		long ms = atol(arg(ac, av, "ms"));
		struct timespec left = { ms / 1000, (ms % 1000) * 1000000L };

		while (nanosleep(&left, &left) != 0 && errno == EINTR)
			;
	}
	return 0;
}
