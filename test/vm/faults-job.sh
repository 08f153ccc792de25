#!/bin/bash
# The batch job of checks.sh's faults check (sbatch -n1 --mem=160M, the
# plugin's library test/faultlib): the fault matrix's "Go library" rows
# (test/cluster/helper_test.go's helperFaults) in a job whose memory
# cgroup v2 limits it. Arguments: the output directory, then the faults
# (SPANK_OTEL_TEST_FAULT), a step each, whose task reports its step and
# the carrier it got (OUT/FAULT.task) and whose exit status is in
# OUT/FAULT.rc; after them, the job's memory.events in OUT/events.
out=$1
shift
job_cg=/sys/fs/cgroup$(sed -n 's|^0::\(.*\)/step_[^/]*/.*|\1|p' /proc/self/cgroup)
mkdir -p "$out"
for f in "$@"; do
	OTEL_RESOURCE_ATTRIBUTES=user.carrier=1 srun -n1 --export=ALL,SPANK_OTEL_TEST_FAULT="$f" \
		-o "$out/$f.task" bash -c 'echo "STEP=$SLURM_STEP_ID"; echo "OTEL=${OTEL_RESOURCE_ATTRIBUTES:-}"'
	echo $? >"$out/$f.rc"
done
cat "$job_cg/memory.events" >"$out/events"
