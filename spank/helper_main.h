/*
 * helper_main.h - the body of the helper process (helper_main.c); only
 * helper.c calls it, in the child of its fork.
 */
#ifndef SPANK_OTEL_HELPER_MAIN_H
#define SPANK_OTEL_HELPER_MAIN_H

#include <sys/types.h>

#include "helper.h"

/* Runs the helper: task is the pid of the task child that forked it, sock
 * its end of the request socket, err the write end of its stderr pipe.
 * Never returns. */
void so_helper_main(const struct so_helper_config *cfg, pid_t task, int sock,
		    int err) __attribute__((noreturn));

#endif
