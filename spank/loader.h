/*
 * loader.h - open, check, load and call the spank-otel Go library.
 *
 * The library is a Go c-shared object. It is only ever loaded in the forked
 * task child right before execve(): a Go runtime must not start in a process
 * that forks afterwards and calls it again (golang/go#15538), and must not
 * start in slurmd, srun, sbatch, salloc or the slurmstepd parent at all.
 * It is never unloaded (a Go runtime cannot be).
 *
 * Use: so_lib_open() once (the plugin does it in the slurmstepd parent, so
 * the checks run once per step and the file is pinned before any container
 * namespace is entered), then so_lib_call() in each task child.
 */
#ifndef SPANK_OTEL_LOADER_H
#define SPANK_OTEL_LOADER_H

#include <sys/types.h>

#include "solog.h"

/* The library ABI this loader speaks (spank_otel_abi() must return it). */
#define SO_ABI_VERSION 1

enum so_status {
	SO_CALLED = 0,      /* spank_otel_task_env ran; see so_result */
	SO_REFUSED,         /* the file failed the ownership/permission checks */
	SO_OPEN_FAILED,     /* the file could not be opened */
	SO_LIMITS,          /* a resource limit would make the runtime abort */
	SO_LOAD_FAILED,     /* dlopen() failed */
	SO_SYMBOL_MISSING,  /* a required symbol is not exported */
	SO_ABI_MISMATCH,    /* spank_otel_abi() returned another version */
};

/* A short name for a status ("called", "refused", ...). */
const char *so_status_name(enum so_status st);

/* An opened and checked library file. */
struct so_lib {
	int fd;      /* close-on-exec descriptor, -1 when not open */
	dev_t dev;   /* identity of the file checked, verified again before */
	ino_t ino;   /* loading in case the descriptor was closed and reused */
	const char *path; /* for messages; not owned */
};

/* Opens path read-only and checks that it may be loaded: a regular file,
 * owned by root or trusted_uid, not writable by group or others, in a
 * directory (and ancestors) owned by root or trusted_uid that group and
 * others cannot write. Symbolic links are followed; the checks apply to the
 * file actually opened and to the directories of its resolved path.
 * A 64-bit ELF file whose segments reach past its end (a truncated copy,
 * which would crash dlopen() with SIGBUS) is rejected with SO_LOAD_FAILED.
 * Returns SO_CALLED with *lib filled, or the reason (logged at error level)
 * with lib->fd = -1. */
enum so_status so_lib_open(struct so_lib *lib, const char *path,
			   uid_t trusted_uid, const struct so_logger *lg);

#define SO_FLAG_NO_ABI_CHECK 0x1u /* harness: accept a library without
				     spank_otel_abi (empty-library baseline) */
#define SO_FLAG_NO_GUARD 0x2u     /* harness: leave the signal state as the
				     library left it, to show the difference */

struct so_request {
	char **envp;           /* the task's environment (not the process's) */
	const char *exclude;   /* comma-separated keys never written, or NULL */
	long max_env_bytes;    /* see so_exec_budget(); 0 = library default */
	unsigned flags;        /* SO_FLAG_* */
};

struct so_result {
	int rc;      /* 1: set value; 0: leave the variable; -1: internal error */
	char *value; /* malloc'd or NULL; free() it */
	char *log;   /* malloc'd "E|V|D <text>\n" lines or NULL; free() it */
};

/* Loads the library opened by so_lib_open and calls spank_otel_task_env. Around the call: the resource limits are checked and
 * raised if needed, GOMAXPROCS=1 and GOGC=off are set in the process
 * environment (a few threads and no collector for one short call), and the
 * signal dispositions, mask and alternate stack are saved; all of it is put
 * back before returning. Returns SO_CALLED with *res filled, or the reason
 * nothing was called (logged once at error level). */
enum so_status so_lib_call(const struct so_lib *lib,
			   const struct so_request *rq, struct so_result *res,
			   const struct so_logger *lg);

/* Passes each line of the library's log to lg: "E " lines at error level,
 * "V " at verbose, "D " at debug; anything else at verbose, unchanged. */
void so_emit_library_log(const char *log, const struct so_logger *lg);

#endif
