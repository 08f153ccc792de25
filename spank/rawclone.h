/*
 * rawclone.h - clone(2) as a fork with exit signal 0 and a pidfd from the
 * same system call: no moment in which the parent holds the child's pid
 * without a pidfd to it, and no wait without __WALL (slurmstepd's, a
 * task's) ever reaps the child or is woken by its end.
 */
#ifndef SPANK_OTEL_RAWCLONE_H
#define SPANK_OTEL_RAWCLONE_H

#if !defined(__x86_64__) && !defined(__aarch64__)
#error "spank-otel supports x86_64 and aarch64 only: the raw clone of its helper and of its node-file reader passes clone's arguments in those architectures' order"
#endif

#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "pidfd.h"

/* Returns the child's pid in the parent (*pidfd set), 0 in the child, -1
 * with errno. flags are added to CLONE_PIDFD; with CLONE_CHILD_SETTID or
 * CLONE_CHILD_CLEARTID, tid is where the kernel writes the child's thread
 * id. The child has the parent's memory as fork leaves it and glibc as a
 * raw system call leaves it: see each caller for what it may then call. */
static inline long so_raw_clone(unsigned long flags, int *pidfd, int *tid)
{
#if defined(__x86_64__)
	return syscall(SYS_clone, CLONE_PIDFD | flags, NULL, pidfd, tid, 0UL);
#else /* aarch64 */
	return syscall(SYS_clone, CLONE_PIDFD | flags, NULL, pidfd, 0UL, tid);
#endif
}

#endif
