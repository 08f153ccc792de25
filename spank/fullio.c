/*
 * fullio.c - the whole-buffer socket loop (see fullio.h).
 */
#include <errno.h>
#include <poll.h>
#include <sys/socket.h>

#include "fullio.h"

int so_io_full(int fd, enum so_io_dir dir, void *buf, size_t len,
	       so_io_wait_fn *wait, void *ctx)
{
	char *p = buf;

	while (len > 0) {
		ssize_t n = dir == SO_IO_SEND
				    ? send(fd, p, len, MSG_DONTWAIT | MSG_NOSIGNAL)
				    : recv(fd, p, len, MSG_DONTWAIT);

		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			int w = wait(ctx, fd, dir == SO_IO_SEND ? POLLOUT : POLLIN);

			if (w <= 0)
				return w == 0 ? -2 : -1;
			continue;
		}
		return -1; /* n == 0: end of file; else an error */
	}
	return 0;
}
