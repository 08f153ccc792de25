/*
 * fullio.h - move a whole buffer through the task's socket to its helper:
 * the one send/receive loop both ends use (helper.c for the task,
 * helperproc.c for the step's helper).
 */
#ifndef SPANK_OTEL_FULLIO_H
#define SPANK_OTEL_FULLIO_H

#include <stddef.h>

enum so_io_dir { SO_IO_SEND, SO_IO_RECV };

/* Called when the socket would block: waits until fd has one of events,
 * or decides to stop. Returns 1 to try again, 0 when a deadline passed,
 * -1 when waiting failed or the peer is known to be gone. */
typedef int so_io_wait_fn(void *ctx, int fd, short events);

/* Sends or receives exactly len bytes on the stream socket fd. Every call
 * is nonblocking (MSG_DONTWAIT; sends also MSG_NOSIGNAL, so a peer that
 * went away never raises SIGPIPE) and wait decides how long a socket that
 * is not ready is waited for. Returns 0, -1 at end of file or on an error,
 * -2 when wait returned 0. */
int so_io_full(int fd, enum so_io_dir dir, void *buf, size_t len,
	       so_io_wait_fn *wait, void *ctx);

#endif
