/*
 * solog.c - formatting for the logging hook (see solog.h).
 */
#include <stdarg.h>
#include <stdio.h>

#include "solog.h"

void so_logf(const struct so_logger *lg, enum so_level level,
	     const char *fmt, ...)
{
	/* Long enough for a path, an errno text and a dlerror() message. */
	char buf[2048];
	va_list ap;

	if (!lg || !lg->emit)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	lg->emit(lg->ctx, level, buf);
}

const char *so_level_name(enum so_level level)
{
	switch (level) {
	case SO_LOG_ERROR:
		return "error";
	case SO_LOG_INFO:
		return "info";
	case SO_LOG_VERBOSE:
		return "verbose";
	case SO_LOG_DEBUG:
		return "debug";
	}
	return "?";
}
