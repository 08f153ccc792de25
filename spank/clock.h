/*
 * clock.h - the one clock the helper code reads: CLOCK_MONOTONIC, which
 * neither NTP steps nor an admin's date change move, for the timeout
 * deadlines of the task's side and the helper's own debug timings.
 */
#ifndef SPANK_OTEL_CLOCK_H
#define SPANK_OTEL_CLOCK_H

#include <time.h>

static inline long long so_monotonic_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

#endif
