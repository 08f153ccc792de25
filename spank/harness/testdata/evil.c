/*
 * evil.c - a library that must never be loaded: its constructor leaves a
 * marker file (path from SPANK_OTEL_EVIL_MARKER in the process environment,
 * else EVIL_MARKER, set at build time) and its export answers
 * "evil=1". The harness points a forged /proc/self/fd at it to show that
 * the helper process loads the checked file, not what a user's mount
 * namespace names.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../../cgo/contract.h"

#define EXPORT __attribute__((visibility("default")))

#ifndef EVIL_MARKER
#define EVIL_MARKER "/tmp/spank-otel-evil-ran"
#endif

__attribute__((constructor)) static void evil_load(void)
{
	const char *marker = getenv("SPANK_OTEL_EVIL_MARKER");
	int fd;

	if (!marker)
		marker = EVIL_MARKER;
	if ((fd = open(marker, O_WRONLY | O_CREAT | O_CLOEXEC, 0644)) >= 0)
		close(fd);
}

EXPORT int spank_otel_abi(void)
{
	return SO_ABI_VERSION;
}

EXPORT int spank_otel_task_env(struct so_task_request *req, char **value,
			       char **log)
{
	(void)req;
	*value = strdup("evil=1");
	*log = NULL;
	return 1;
}
