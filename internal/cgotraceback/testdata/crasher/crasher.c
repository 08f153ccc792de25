/*
 * crasher.c - C functions with names the crash report must show.
 */
#include <stddef.h>

/* Not static and not inlined: dladdr must find them by name. */
__attribute__((noinline)) void cgotb_test_segv(void)
{
	volatile int *p = NULL;

	*p = 1;
}

__attribute__((noinline)) void cgotb_test_outer(void)
{
	cgotb_test_segv();
	/* Code after the call: no tail call, so this frame stays. */
	__asm__ __volatile__("" ::: "memory");
}
