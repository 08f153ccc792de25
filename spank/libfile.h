/*
 * libfile.h - open the spank-otel Go library file and check it.
 *
 * The plugin does this once per step in the slurmstepd parent, as root and
 * before any task exists, so the path is resolved in slurmstepd's own mount
 * namespace and never in one a user (or a container plugin acting for the
 * user) controls. The descriptor is what the helper process loads later;
 * the path is not looked at again.
 */
#ifndef SPANK_OTEL_LIBFILE_H
#define SPANK_OTEL_LIBFILE_H

#include <sys/types.h>

#include "solog.h"
#include "status.h"

/* An opened and checked library file. */
struct so_lib {
	int fd;           /* close-on-exec descriptor, -1 when not open */
	dev_t dev;        /* identity of the file checked, compared again */
	ino_t ino;        /* before loading in case the number was reused */
	const char *path; /* for messages; not owned */
};

/* Opens path read-only and checks that it may be loaded: a regular file,
 * owned by root or trusted_uid, not writable by group or others, reached
 * only through directories owned by root or trusted_uid that group and
 * others cannot write. Symbolic links are followed, one component at a
 * time: the checks apply to every directory of the resolved path and to
 * every directory that holds a link on the way, so that no user can
 * redirect the path between steps.
 * A 64-bit ELF file whose segments reach past its end (a truncated copy,
 * which would crash dlopen() with SIGBUS) is rejected with SO_LOAD_FAILED.
 * Returns SO_CALLED with *lib filled, or the reason (logged at error level)
 * with lib->fd = -1. */
enum so_status so_lib_open(struct so_lib *lib, const char *path,
			   uid_t trusted_uid, const struct so_logger *lg);

#endif
