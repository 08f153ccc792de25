/*
 * traceback.h - the traceback and symbolizer functions for
 * runtime.SetCgoTraceback (see traceback.c). Each takes a pointer to the
 * struct the Go runtime documents for it.
 */
#ifndef SPANK_OTEL_CGOTRACEBACK_H
#define SPANK_OTEL_CGOTRACEBACK_H

__attribute__((visibility("hidden"))) void cgotb_init(void);
__attribute__((visibility("hidden"))) void cgotb_traceback(void *arg);
__attribute__((visibility("hidden"))) void cgotb_symbolize(void *arg);

#endif
