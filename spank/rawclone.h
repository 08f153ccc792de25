/*
 * rawclone.h - clone(2) as a fork with exit signal 0 and a pidfd from the
 * same system call: no moment in which the parent holds the child's pid
 * without a pidfd to it, and no wait without __WALL (slurmstepd's, a
 * task's) ever reaps the child or is woken by its end.
 */
#ifndef SPANK_OTEL_RAWCLONE_H
#define SPANK_OTEL_RAWCLONE_H

#if !defined(__x86_64__) && !defined(__aarch64__)
#error "spank-otel supports x86_64 and aarch64 only: the raw clones that start its step's helper and its node-file reader pass clone's arguments in those architectures' order"
#endif

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pidfd.h"

/* Returns the child's pid in the parent (*pidfd set), 0 in the child, -1
 * with errno (ENOSYS: the kernel gave no pidfd; Linux 5.4 is needed). The child has the parent's memory as fork leaves it and
 * glibc as a raw system call leaves it (its thread descriptor still names
 * the parent's thread): it may make system calls only, up to its exec or
 * exit. */
static inline long so_raw_clone(int *pidfd)
{
	long pid;
	int i;

	*pidfd = -1;
#if defined(__x86_64__)
	pid = syscall(SYS_clone, CLONE_PIDFD, NULL, pidfd, NULL, 0UL);
#else /* aarch64 */
	pid = syscall(SYS_clone, CLONE_PIDFD, NULL, pidfd, 0UL, NULL);
#endif
	if (pid <= 0 || *pidfd >= 0)
		return pid;
	/* A kernel before 5.2 ignores CLONE_PIDFD: a child no pidfd can
	 * reach is ended at once, while it is still this process's to kill
	 * and reap by pid; a child already blocked in the kernel is reaped
	 * by init once it dies, never waited for beyond 100 ms. */
	syscall(SYS_kill, (pid_t)pid, SIGKILL);
	for (i = 0; i < 100; i++) {
		struct timespec ms = { 0, 1000000 };

		if (syscall(SYS_wait4, (pid_t)pid, NULL, WNOHANG | __WALL, NULL) != 0)
			break;
		nanosleep(&ms, NULL);
	}
	errno = ENOSYS;
	return -1;
}

#endif
