/*
 * headroom.h - is there room in the task's cgroups for the helper process?
 *
 * The helper is charged to the cgroups the task child is in when it forks
 * it (the step's, under Slurm's task/cgroup). A helper that pushes a memory
 * cgroup over its limit would make the kernel's OOM killer pick a process
 * of the job; a pids limit it hits would abort its Go runtime. So before
 * forking, the shim reads the limits and usage of the memory and pids
 * cgroups, from the task's own up to the hierarchy's root, and forks only
 * when the smallest headroom leaves what the helper needs. It reads a few
 * small files; it scans nothing.
 */
#ifndef SPANK_OTEL_HEADROOM_H
#define SPANK_OTEL_HEADROOM_H

#include "solog.h"

/* What the helper needs, with margin: measured at 2.8 MiB of memory beyond
 * the task child's (the Go runtime touches little of what it reserves) and
 * 5 or 6 threads. */
#ifndef SO_HELPER_MEMORY
#define SO_HELPER_MEMORY (16UL << 20)
#endif
#ifndef SO_HELPER_TASKS
#define SO_HELPER_TASKS 16UL
#endif

/* Returns 1 when the helper fits (or no limit applies), 0 when it does
 * not, with one error line saying which cgroup is short. root is where the
 * cgroup hierarchies are mounted ("/sys/fs/cgroup"), cgroup_file the
 * process's cgroup list ("/proc/self/cgroup"); tests pass others. */
int so_headroom_ok(const char *root, const char *cgroup_file,
		   const struct so_logger *lg);

#endif
