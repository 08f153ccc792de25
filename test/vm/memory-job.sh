#!/bin/bash
# The batch job of checks.sh's memory check (sbatch --mem=160M): a first
# step, without the plugin, measures what the job uses that the kernel
# cannot reclaim (memory.current less the clean file pages, as the
# helper counts); the script then fills tmpfs (memory no reclaim frees
# without swap) until about 6 MiB of the job's limit are left, less than
# the 12 MiB one helper needs (SO_HELPER_MEMORY, spank/membound.h), and runs the step of the check.
w=/tmp/vm-checks
# The job's cgroup: the parent of the batch step's (job_<id> up to 25.11,
# the job's SLUID in 26.05).
job_cg=/sys/fs/cgroup$(sed -n 's|^0::\(.*\)/step_[^/]*/.*|\1|p' /proc/self/cgroup)
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
# The step inherits the script's attributes (the batch step's, no
# slurm.step.id); without its helper it keeps them unchanged.
printf '%s\n' "MAX=$max" "USED=$used" "FILL=$fill" "BATCH_OTEL=${OTEL_RESOURCE_ATTRIBUTES:-}" >"$w/memory.result"
head -c "$fill" /dev/zero >"/dev/shm/vm-checks-fill.$SLURM_JOB_ID"
echo "FILLED=$(cat "$job_cg/memory.current")" >>"$w/memory.result"
srun -n1 -o "$w/memory.step" bash -c 'echo "OTEL=${OTEL_RESOURCE_ATTRIBUTES:-}"'
echo "RC=$?" >>"$w/memory.result"
sed 's/^/EVENTS_/; s/ /=/' "$job_cg/memory.events" >>"$w/memory.result"
rm -f "/dev/shm/vm-checks-fill.$SLURM_JOB_ID"
