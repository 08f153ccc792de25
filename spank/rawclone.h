/*
 * rawclone.h - clone(2) as a fork with exit signal 0 and a pidfd from the
 * same system call: no moment in which the parent holds the child's pid
 * without a pidfd to it, and no wait without __WALL (slurmstepd's, a
 * task's) ever reaps the child or is woken by its end.
 */
#ifndef SPANK_OTEL_RAWCLONE_H
#define SPANK_OTEL_RAWCLONE_H

#if !defined(__x86_64__) && !defined(__aarch64__)
#error "spank-otel supports x86_64 and aarch64 only: the raw clones that start its step's helper and its node-file reader passes clone's arguments in those architectures' order"
#endif

#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "pidfd.h"

/* Returns the child's pid in the parent (*pidfd set), 0 in the child, -1
 * with errno. The child has the parent's memory as fork leaves it and
 * glibc as a raw system call leaves it (its thread descriptor still names
 * the parent's thread): it may make system calls only, up to its exec or
 * exit. */
static inline long so_raw_clone(int *pidfd)
{
#if defined(__x86_64__)
	return syscall(SYS_clone, CLONE_PIDFD, NULL, pidfd, NULL, 0UL);
#else /* aarch64 */
	return syscall(SYS_clone, CLONE_PIDFD, NULL, pidfd, 0UL, NULL);
#endif
}

#endif
