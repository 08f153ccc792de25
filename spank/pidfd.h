/*
 * pidfd.h - the process-descriptor constants (Linux 5.3 on), for C
 * libraries and kernel headers older than the kernels the plugin runs on:
 * the task holds its helper, and the helper its task, only by pidfd.
 */
#ifndef SPANK_OTEL_PIDFD_H
#define SPANK_OTEL_PIDFD_H

#include <sys/syscall.h>
#include <sys/wait.h>

#ifndef CLONE_PIDFD
#define CLONE_PIDFD 0x00001000
#endif
#ifndef P_PIDFD
#define P_PIDFD 3
#endif
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif

#endif
