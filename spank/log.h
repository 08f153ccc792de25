/*
 * log.h - the plugin's messages, through Slurm's logging, always prefixed
 * "spank-otel: ". Errors a user or admin must act on use slurm_error; the
 * rest slurm_verbose or slurm_debug.
 */
#ifndef SPANK_OTEL_LOG_H
#define SPANK_OTEL_LOG_H

#include <slurm/spank.h>

#include "solog.h"

#define SO_PREFIX "spank-otel: "

#define so_error(fmt, ...) slurm_error(SO_PREFIX fmt, ##__VA_ARGS__)
#define so_info(fmt, ...) slurm_info(SO_PREFIX fmt, ##__VA_ARGS__)
#define so_verbose(fmt, ...) slurm_verbose(SO_PREFIX fmt, ##__VA_ARGS__)
#define so_debug(fmt, ...) slurm_debug(SO_PREFIX fmt, ##__VA_ARGS__)

/* Routes messages of the loader, guards and argument parser to Slurm. */
static inline void so_slurm_emit(void *ctx, enum so_level level,
				 const char *msg)
{
	(void)ctx;
	switch (level) {
	case SO_LOG_ERROR:
		so_error("%s", msg);
		break;
	case SO_LOG_INFO:
		so_info("%s", msg);
		break;
	case SO_LOG_VERBOSE:
		so_verbose("%s", msg);
		break;
	case SO_LOG_DEBUG:
	default:
		so_debug("%s", msg);
		break;
	}
}

#endif
