/*
 * fault.c - a C function that faults, with a name the crash report in the
 * slurmd log must show.
 */
#include <stddef.h>

/* Exported and not inlined: dladdr names it. */
__attribute__((noinline)) void spank_otel_fault_segv(void)
{
	volatile int *p = NULL;

	*p = 1;
}
