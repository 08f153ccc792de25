/*
 * headroom.h - is there room in the task's cgroups for the helper process?
 *
 * The helper joins the task's cgroups before it loads the library
 * (helper_main.c), so what it uses is charged to the job. A helper that
 * pushed a memory cgroup over its limit would make the kernel's OOM killer
 * pick a process of the job; a pids limit it hits would abort its Go
 * runtime. So, before joining, the helper reads the limits and usage of
 * the task's memory and pids cgroups, from the task's own up to the
 * hierarchy's root, and goes on only when the smallest headroom leaves
 * what it needs. It reads a few small files; it scans nothing.
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

/* What one helper needs. Memory: SO_HELPER_MEMORY (membound.h), the most
 * a helper can cost the job under its own bound, for each helper of the
 * step on the node: the step's tasks start together, their helpers run at
 * once in the job's cgroups, and the kernel would count an OOM kill of one
 * against the step. Tasks: measured at 5 or 6 threads, with margin for the
 * first and 8 for each further one. */
#define SO_HELPER_TASKS 16ULL
#define SO_HELPER_TASKS_EACH 8ULL

/* Returns 1 when the step's helpers on the node (helpers, at least 1) fit
 * in the cgroups of task, those of the process pid (or no limit applies),
 * 0 when they do not, with a sentence in why saying which cgroup is
 * short. */
int so_headroom_ok(const struct so_cgroup_files *f, const struct so_cgroups *task,
		   pid_t pid, unsigned helpers, char *why, size_t len);

#endif
