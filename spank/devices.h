/*
 * devices.h - which GPUs the task may use, asked by the task itself.
 *
 * The step's helper is not in the task's cgroups, so it cannot ask the
 * kernel which /dev/nvidia<N> the task's device cgroup admits. The task
 * child asks in task_init, where Slurm has placed it: faccessat with its
 * real ids, which reaches the device controller (v1 list, v2 BPF program)
 * after the mode bits, and never opens a device. The names asked are the
 * GPU device nodes the step's records (nodefiles.h) hold; the answers
 * travel in the request (contract.h, SO_REQ_DEVICES).
 */
#ifndef SPANK_OTEL_DEVICES_H
#define SPANK_OTEL_DEVICES_H

#include <stddef.h>
#include <stdint.h>

/* Asks, for every /dev/nvidia<N> (N below 256) recorded as a character
 * device in records, whether the calling process may read and write it:
 * relative to dev_dir, a descriptor of the node's /dev opened in the step
 * parent (a container plugin may have given the task a /dev of its own).
 * Sets bit N of asked and, when admitted, of usable (word N / 64, bit
 * N % 64). Returns how many it asked. */
int so_devices_ask(const char *records, size_t len, int dev_dir,
		   uint64_t asked[4], uint64_t usable[4]);

#endif
