#!/bin/bash
# The batch job of checks.sh's overlap check (sbatch -n8 -O --mem=320M,
# the real library), on cgroup v2 what test/cluster/memory_test.go's
# TestOverlappingHelpers does on v1 (issue 43, sections 2 and 3).
# Arguments: the output directory, then srun's extra option ("" or
# --oom-kill-step), then cases NAME:ROOM, each a step of 8 tasks that ask
# the step's one helper at once while the job holds all of its memory but
# ROOM MiB (a process holding the rest; clean page cache counted free, as
# the helper counts it). Per case, in OUT/NAME.*: room (what was held), rc
# (srun's exit), srun.err, task.N (what each task got), and cgroups.step /
# cgroups.job: memory.events and memory.oom.group of every cgroup of the
# job, read by task 0 once all 8 tasks run (each has had its answer then,
# and the step's cgroups exist) and by the script after the step.
out=$1 opt=$2
shift 2
# The job's cgroup: the parent of the batch step's (the SLUID in 26.05).
job=/sys/fs/cgroup$(sed -n 's|^0::\(.*\)/step_[^/]*/.*|\1|p' /proc/self/cgroup)
report() {
	find "$job" -name memory.events | sort | while read -r f; do
		d=${f%/memory.events}
		echo "${d#"$job"}/ $(tr '\n' ' ' <"$f")oom.group $(cat "$d/memory.oom.group")"
	done
}
# used: what the job uses that reclaim cannot free, in MiB (as
# spank/headroom.c counts it: memory.current less the clean file pages).
used() {
	awk -v cur="$(cat "$job/memory.current")" '
		$1 == "active_file" || $1 == "inactive_file" { cache += $2 }
		$1 == "file_dirty" || $1 == "file_writeback" { busy += $2 }
		END { c = cache - busy; if (c < 0) c = 0; print int((cur - c) / 1048576) }' "$job/memory.stat"
}
mkdir -p "$out"
export job
# For task 0, run through sh, which drops exported bash functions.
{ declare -f report; echo report; } >"$out/report.sh"
limit=$(($(cat "$job/memory.max") / 1048576))
for c in "$@"; do
	IFS=: read -r name room <<<"$c"
	o=$out/$name
	hold=$((limit - $(used) - room))
	rm -f "$out/held"
	perl -e '$x = "x" x ($ARGV[0] * 1048576); open(F, ">", $ARGV[1]) and close(F); sleep 600' "$hold" "$out/held" &
	holder=$!
	while [ ! -e "$out/held" ]; do sleep 0.1; done
	echo "limit $limit MiB, held $hold MiB, in use $(used) MiB: room $((limit - $(used))) MiB" >"$o.room"
	export out o holder
	# Each task's first act, once spank-otel is done with it, ends the
	# holder: what the tasks then need is theirs, not the plugin's.
	# shellcheck disable=SC2086 # opt is one option or none
	srun $opt -n8 -O sh -c 'kill "$holder" 2>/dev/null; exec bash -c "$0"' 'printf "%s\n" "JOB=$SLURM_JOB_ID" "STEP=$SLURM_STEP_ID" "TASK=$SLURM_PROCID" \
			"NTASKS=$SLURM_STEP_NUM_TASKS" "OTEL=${OTEL_RESOURCE_ATTRIBUTES:-}" >"$o.task.$SLURM_PROCID"
		if [ "$SLURM_PROCID" = 0 ]; then
			for i in $(seq 600); do [ "$(ls "$o".task.* | wc -l)" -ge 8 ] && break; sleep 0.1; done
			bash "$out/report.sh" >"$o.cgroups.step"
		fi' 2>"$o.srun.err"
	echo $? >"$o.rc"
	report >"$o.cgroups.job"
	kill "$holder" 2>/dev/null
	wait "$holder" 2>/dev/null || true
done
