#!/bin/bash
# The batch job of checks.sh's pagecache check (sbatch -n1 --mem=64M), on
# cgroup v2 what test/cluster/placement_test.go's TestMemoryPageCache does
# on v1: a step writes 56 MiB to a file on the root file system (ext4,
# not tmpfs: its pages are page cache, not shared memory), synced, as a
# job's finished output is within the kernel's writeback interval; a
# step without the plugin records the job's memory.max, memory.current
# and memory.stat's file pages; the last step's task must get its own
# attributes, because spank/headroom.c counts clean page cache as room.
w=/tmp/vm-checks
fill=/var/tmp/vm-checks-pagecache.$SLURM_JOB_ID
job_cg=/sys/fs/cgroup$(sed -n 's|^0::\(.*\)/step_[^/]*/.*|\1|p' /proc/self/cgroup)
srun -n1 dd if=/dev/zero of="$fill" bs=1M count=56 conv=fsync status=none
echo "DD=$?" >"$w/pagecache.result"
srun -n1 --otel-attrs=off bash -c 'cd "$1" && echo "MAX=$(cat memory.max)" && echo "CURRENT=$(cat memory.current)" &&
	sed -n "s/^\(file\|active_file\|inactive_file\|file_dirty\|file_writeback\|shmem\) \(.*\)/\U\1\E=\2/p" memory.stat' \
	_ "$job_cg" >>"$w/pagecache.result"
srun -n1 -o "$w/pagecache.step" bash -c 'echo "STEP=$SLURM_STEP_ID"; echo "OTEL=${OTEL_RESOURCE_ATTRIBUTES:-}"'
echo "RC=$?" >>"$w/pagecache.result"
rm -f "$fill"
