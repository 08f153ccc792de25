/*
 * headroom.h - is there room for the step's helper in its cgroups?
 *
 * The step's helper runs in the step parent's cgroups (under the job's
 * limits), so what it uses is charged to the job. A helper that pushed a
 * memory cgroup over its limit would make the kernel's OOM killer pick a
 * process of the job, and Slurm would count the kill against the step; a
 * pids limit it hits would abort its Go runtime. So, before it loads the
 * library, the helper reads the limits and usage of its memory and pids
 * cgroups, from its own up to the hierarchy's root, and goes on only when
 * the smallest headroom leaves what it needs. It reads a few small files;
 * it scans nothing.
 *
 * Memory in use is what the kernel cannot take back at once: the usage
 * minus the clean page cache (file pages that are neither dirty nor under
 * writeback, which it drops before it resorts to the OOM killer). Dirty
 * and writeback pages count as used: they must reach the disk first. On
 * cgroup v1 with swap accounting the memory+swap limit is read too
 * (memory.memsw.*): swapping out frees nothing under it.
 */
#ifndef SPANK_OTEL_HEADROOM_H
#define SPANK_OTEL_HEADROOM_H

#include <stddef.h>

#include "cgroup.h"
#include "membound.h"

/* What the helper needs. Memory: SO_HELPER_MEMORY (membound.h), the most
 * it can cost the job under its own bound. Tasks: measured at 5 or 6
 * threads, with margin. */
#define SO_HELPER_TASKS 16ULL

/* Returns 1 when the helper fits in the cgroups of task, those of the
 * process pid (or no limit applies), 0 when it does not, with a sentence
 * in why saying which cgroup is short. */
int so_headroom_ok(const struct so_cgroup_files *f, const struct so_cgroups *task,
		   pid_t pid, char *why, size_t len);

#endif
