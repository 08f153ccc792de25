/*
 * pidfd.h - the process-descriptor constants (Linux 5.3 on), for C
 * libraries and kernel headers older than the kernels the plugin runs on:
 * the step parent holds the step's helper, and the recording its node-file
 * reader, only by pidfd.
 */
#ifndef SPANK_OTEL_PIDFD_H
#define SPANK_OTEL_PIDFD_H

#include <sys/ioctl.h>
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

/* How a process ended, from its pidfd once it was reaped, whoever reaped
 * it (Linux 6.15 on: PIDFD_GET_INFO with PIDFD_INFO_EXIT; older kernels
 * refuse the ioctl or leave the bit clear). The first 64 bytes of the
 * kernel's struct pidfd_info, its first version. */
struct so_pidfd_info {
	unsigned long long mask;
	unsigned long long cgroupid;
	unsigned int pid, tgid, ppid, ruid, rgid, euid, egid, suid, sgid, fsuid,
		fsgid;
	int exit_code; /* a wait status */
};
_Static_assert(sizeof(struct so_pidfd_info) == 64, "PIDFD_INFO_SIZE_VER0");
#define SO_PIDFD_INFO_EXIT (1ULL << 3)
#define SO_PIDFD_GET_INFO _IOWR(0xFF, 11, struct so_pidfd_info)

#endif
