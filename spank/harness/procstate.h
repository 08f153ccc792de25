/*
 * procstate.h - what a later plugin would see of the task process: its
 * threads, signal dispositions, mask and pending signals, alternate signal
 * stack, resource limits, memory mappings, descriptors, child processes,
 * umask, working directory, OOM score adjustment and environment.
 *
 * Test tooling only (the harness and the cluster's probe plugin). Taking a
 * snapshot allocates nothing and uses no stdio, so it does not change what
 * it measures.
 */
#ifndef SPANK_OTEL_PROCSTATE_H
#define SPANK_OTEL_PROCSTATE_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>

#define SO_PS_NO_HEAP 0x1u /* leave the [heap] mapping out: Slurm's own
			      setenv may grow it */

struct so_procstate {
	int threads;        /* Threads: of /proc/self/status */
	int children;       /* children of this (single-threaded) process */
	uint64_t sigaction; /* hash of every disposition, flags and mask */
	int ignored_pipe;   /* SIGPIPE is SIG_IGN */
	uint64_t sigmask;   /* hash of the thread's blocked set */
	uint64_t pending;   /* hash of the pending set (thread and process) */
	char pending_list[128]; /* their names, "CHLD USR1", for messages */
	uint64_t altstack;  /* hash of sigaltstack() */
	uint64_t limits;    /* hash of every soft and hard limit */
	uint64_t maps;      /* hash of /proc/self/maps */
	int map_count;
	uint64_t fds;       /* hash of the descriptor numbers and what they
			       are (a file's path; a socket or pipe by kind) */
	int fd_count;
	char fd_list[256];  /* the descriptor numbers, "0,1,2,5", to compare
			       two tasks whose files differ by name */
	int umask;          /* Umask: of /proc/self/status, -1 if absent */
	uint64_t cwd;       /* hash of the working directory */
	int oom_score_adj;
	uint64_t env;       /* hash of environ, in order */
};

/* Records the calling process's state; descriptor skip_fd (-1: none) is
 * left out. */
void so_procstate_take(struct so_procstate *s, unsigned flags, int skip_fd);

/* Writes a one-line summary ("threads=1 children=0 sig=... ") to buf. */
void so_procstate_format(const struct so_procstate *s, char *buf, size_t len);

/* Compares two snapshots: 0 when equal, else the number of differences,
 * named in diff ("threads 1 -> 6; maps; ..."). */
int so_procstate_diff(const struct so_procstate *a,
		      const struct so_procstate *b, char *diff, size_t len);

#endif
