#!/bin/bash
# The batch job of checks.sh's memory check (sbatch --mem=160M): a first
# step, without the plugin, measures what the job uses that the kernel
# cannot reclaim (memory.current less the clean file pages, as the
# helper counts); the script then fills tmpfs (memory no reclaim frees
# without swap) until about 6 MiB of the job's limit are left, less than
# the 16 MiB the helper needs, and runs the step of the check.
w=/tmp/vm-checks
job_cg=/sys/fs/cgroup$(sed -n 's|^0::\(.*/job_[^/]*\)/.*|\1|p' /proc/self/cgroup)
srun -n1 --otel-attrs=off -o "$w/memory.probe" bash -c \
	'cd "$1" && cat memory.max memory.current && grep -E "^(in)?active_file " memory.stat' _ "$job_cg"
{
	read -r max
	read -r current
	read -r _ file1
	read -r _ file2
} <"$w/memory.probe"
used=$((current - file1 - file2))
fill=$((max - used - 6 * 1024 * 1024))
printf '%s\n' "MAX=$max" "USED=$used" "FILL=$fill" >"$w/memory.result"
head -c "$fill" /dev/zero >"/dev/shm/vm-checks-fill.$SLURM_JOB_ID"
srun -n1 -o "$w/memory.step" bash -c 'echo "OTEL=${OTEL_RESOURCE_ATTRIBUTES:-}"'
echo "RC=$?" >>"$w/memory.result"
sed 's/^/EVENTS_/; s/ /=/' "$job_cg/memory.events" >>"$w/memory.result"
rm -f "/dev/shm/vm-checks-fill.$SLURM_JOB_ID"
