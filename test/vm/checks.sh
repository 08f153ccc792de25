#!/bin/bash
# checks.sh: the checks of the cgroup v2 VM (test/vm/run.sh), run as root
# by init.sh on node v1 once Slurm is up; the jobs run as alice. Each check
# prints "vm-check: PASS NAME (N s)" or "vm-check: FAIL NAME (N s)" after
# its details; the exit status is 0 when every check passed.
#
#   identity   a step's tasks get OTEL_RESOURCE_ATTRIBUTES with their job
#              and task
#   placement  each task's v2 path is JOB/step_Y/user/task_N (JOB is
#              job_<id>, or the SLUID as 26.05 names it); the step's
#              helper (test/faultlib's placement report) is in the step
#              parent's cgroup, JOB/step_Y/slurm, under the job's
#              memory.max, on one CPU of that cgroup's
#              cpuset.cpus.effective, as the job's user without
#              capabilities
#   gpu        bound tasks (--gpus-per-task=1): each task's nv.gpu.uuid is
#              the UUID of the one /dev/nvidiaN the BPF device program
#              lets it open (ENXIO when admitted, EPERM when not)
#   memory     a job with little memory left: the step's task keeps the
#              attributes it inherits from the batch script (none of its
#              own), the helper's "not loading the library: memory
#              cgroup ..." line, and the step succeeds with no oom_kill in
#              memory.events
#   pagecache  a job whose step wrote 56 MiB to a file (synced) in its
#              64 MiB: the next step's task gets its own attributes, as
#              clean page cache (memory.stat's active_file and
#              inactive_file) counts as room
#   overlap    a step of 8 tasks asking the step's one helper at once
#              in a job holding all but 40 or 18 MiB of its 320 MiB,
#              without and with --oom-kill-step: the step exits 0,
#              oom_kill 0 in memory.events of every cgroup of the job,
#              memory.oom.group 1 only with --oom-kill-step; with 40 MiB
#              every task gets its attributes, with 18 MiB (under the
#              helper's 12 MiB once the step has started) every task says
#              the helper has no room
#   faults     the fault matrix's "Go library" rows (test/faultlib's
#              panic, threads, oom, alloc, abort, segv, exit, hang) in a
#              job limited to 160 MiB: each step exits 0 with its carrier
#              untouched, one error line of the task and one of the step
#              saying how its helper ended, one naming the fault, no
#              oom_kill in the job's memory.events, no helper left
#   cancel     a step cancelled while its helper hangs in the library
#              leaves no process named spank-otel
# /mnt/checks-wanted names the checks to run (one line; empty: all).
set -u
work=/tmp/vm-checks
stack=/etc/slurm/plugstack.conf.d/spank-otel.conf
plugindir=/usr/lib/x86_64-linux-gnu/slurm-wlm
faultlib=/usr/lib/spank-otel-test/libfault.so
slurmd_log=/var/log/slurm/slurmd.log
all="identity placement gpu memory pagecache overlap faults cancel"
wanted=$(cat /mnt/checks-wanted 2>/dev/null)
[ -n "${wanted// /}" ] || wanted=$all
install -d -m 1777 "$work"
cp "$stack" "$work/stack.orig"

failed=0
check=''
check_failed=0

# note: a detail of the running check; fail: a detail that fails it.
note() { echo "  $check: $*"; }
fail() {
	echo "  $check: FAILED: $*"
	check_failed=1
}
uptime_s() { cut -d' ' -f1 /proc/uptime; }

# as_alice CMD...: CMD as the job user, in the work directory; a job
# that hangs fails its check, not the whole run at the VM's timeout.
as_alice() { (cd "$work" && runuser -u alice -- timeout 180 "$@"); }

# value KEY FILE: the value of the KEY=value line of FILE.
value() { sed -n "s/^$1=//p" "$2" | head -n 1; }

# attr KEY ATTRS: the value of KEY in an OTEL_RESOURCE_ATTRIBUTES value.
attr() { tr ',' '\n' <<<"$2" | sed -n "s/^$1=//p" | head -n 1; }

# cpus LIST: the CPUs of a list such as 0-2,5, one a line.
cpus() {
	local part
	for part in ${1//,/ }; do
		if [[ $part == *-* ]]; then seq "${part%-*}" "${part#*-}"; else echo "$part"; fi
	done
}

set_stack() { echo "optional $plugindir/spank_otel.so $*" >"$stack"; }
restore_stack() { cp "$work/stack.orig" "$stack"; }

# log_mark and log_since: slurmd.log's lines written after a mark.
log_mark() { wc -l <"$slurmd_log"; }
log_since() { tail -n +"$(($1 + 1))" "$slurmd_log"; }

# The task command of the identity and placement checks: what the task is
# and where it runs, as KEY=value lines.
task_report='echo "JOB=$SLURM_JOB_ID"
echo "STEP=$SLURM_STEP_ID"
echo "TASK=$SLURM_PROCID"
echo "SLUID=${SLURM_JOB_SLUID:-}"
echo "OTEL=${OTEL_RESOURCE_ATTRIBUTES:-}"
echo "CGROUP=$(tr "\n" ";" </proc/self/cgroup)"
echo "CPUS=$(sed -n "s/^Cpus_allowed_list:[[:space:]]*//p" /proc/self/status)"
echo "EFFECTIVE=$(cat /sys/fs/cgroup$(sed -n "s/^0:://p" /proc/self/cgroup)/cpuset.cpus.effective)"'

check_identity() {
	local t f job attrs
	as_alice srun -n2 -o "$work/identity.%t" bash -c "$task_report" || fail "srun failed"
	for t in 0 1; do
		f=$work/identity.$t
		job=$(value JOB "$f") attrs=$(value OTEL "$f")
		note "task $t: OTEL_RESOURCE_ATTRIBUTES=$attrs"
		[[ -n $job && $(attr slurm.job.id "$attrs") == "$job" ]] ||
			fail "task $t of job $job: slurm.job.id is '$(attr slurm.job.id "$attrs")'"
		[[ $(attr slurm.task.id "$attrs") == "$t" ]] ||
			fail "task $t: slurm.task.id is '$(attr slurm.task.id "$attrs")'"
	done
}

# What the placement check's tasks add to task_report: their parent's (the
# step parent's) cgroup and its cpuset.cpus.effective, and the job's
# memory.max.
placement_report='p=$(sed -n "s/^0:://p" /proc/$PPID/cgroup)
echo "PARENT_CGROUP=$(tr "\n" ";" </proc/$PPID/cgroup)"
echo "PARENT_EFFECTIVE=$(cat /sys/fs/cgroup$p/cpuset.cpus.effective)"
echo "JOB_MAX=$(cat /sys/fs/cgroup${p%/step_*}/memory.max)"'

check_placement() {
	local t f cg path job sluid r helper_cg helper_cpu parent_cg eff
	# The helper's own view: test/faultlib's placement report as the
	# library.
	set_stack "lib=$faultlib timeout=20000"
	as_alice env SPANK_OTEL_TEST_FAULT=placement srun -n2 -c1 --mem=200M -o "$work/placement.%t" \
		bash -c "$task_report
$placement_report" || fail "srun failed"
	restore_stack
	for t in 0 1; do
		f=$work/placement.$t
		cg=$(value CGROUP "$f") job=$(value JOB "$f") sluid=$(value SLUID "$f")
		note "task $t: /proc/self/cgroup $cg, CPUs $(value CPUS "$f"), cpuset.cpus.effective $(value EFFECTIVE "$f")"
		path=${cg#0::}
		path=${path%;}
		[[ $cg == 0::*\; && $cg != *\;*\;* ]] || fail "task $t: not one v2 line: $cg"
		# The job's directory is job_<id> up to 25.11, its bare SLUID in
		# 26.05.
		[[ $path =~ /([^/]+)/step_([^/]+)/user/task_([0-9]+)$ ]] ||
			fail "task $t: not a JOB/step_Y/user/task_N path: $path"
		case ${BASH_REMATCH[1]:-} in
		"job_$job") note "task $t: the job's cgroup is named by its job id: job_$job" ;;
		"${sluid:-no SLUID}") note "task $t: the job's cgroup is named by its SLUID: $sluid" ;;
		*) fail "task $t: the job's cgroup ${BASH_REMATCH[1]:-} is neither job_$job nor the SLUID '$sluid'" ;;
		esac
		[[ ${BASH_REMATCH[3]:-} == "$t" ]] || fail "task $t: in task_${BASH_REMATCH[3]:-}"

		r=$(value OTEL "$f")
		helper_cg=$(tr ' ' '\n' <<<"$r" | sed -n 's/^helper\.cgroup=//p')
		helper_cpu=$(tr ' ' '\n' <<<"$r" | sed -n 's/^helper\.cpus=//p')
		parent_cg=$(value PARENT_CGROUP "$f") eff=$(value PARENT_EFFECTIVE "$f")
		note "task $t: helper in $helper_cg on CPU $helper_cpu ($r); step parent in $parent_cg, cpuset.cpus.effective $eff; the job's memory.max $(value JOB_MAX "$f")"
		[[ -n $helper_cg && "$helper_cg;" == "$parent_cg" ]] || fail "task $t: the helper's cgroup '$helper_cg' is not the step parent's '$parent_cg'"
		[[ ${helper_cg#0::} == "${path%/user/task_*}/slurm" ]] ||
			fail "task $t: the helper's cgroup '${helper_cg#0::}' is not its step's slurm cgroup '${path%/user/task_*}/slurm'"
		[[ $(value JOB_MAX "$f") == $((200 << 20)) ]] || fail "task $t: the job's memory.max is '$(value JOB_MAX "$f")', not 200 MiB"
		[[ $helper_cpu =~ ^[0-9]+$ ]] || fail "task $t: the helper is not on one CPU: '$helper_cpu'"
		cpus "$eff" | grep -qx "$helper_cpu" || fail "task $t: helper CPU $helper_cpu not in the step parent's cpuset.cpus.effective $eff"
		[[ $(tr ' ' '\n' <<<"$r" | sed -n 's/^helper\.uid=//p') == "$(id -u alice)/$(id -u alice)/$(id -u alice)/$(id -u alice)" &&
			$(tr ' ' '\n' <<<"$r" | sed -n 's/^helper\.nnp=//p') == 1 &&
			-z $(tr ' ' '\n' <<<"$r" | sed -n 's/^helper\.cap\(eff\|prm\)=//p' | tr -d '0\n') ]] ||
			fail "task $t: the helper is not alice without capabilities: $r"
	done
}

# The oracle of test/cluster/gpu_test.go: which /dev/nvidiaN the task's
# device cgroup admits (open fails with ENXIO: no driver) or refuses
# (EPERM).
gpu_report='o=
for i in 0 1 2 3; do
	m=$( (exec 3</dev/nvidia$i) 2>&1 )
	case $m in
	*"No such device or address"*) o="$o $i" ;;
	*"Operation not permitted"*) ;;
	*) echo "ORACLE_ERROR=/dev/nvidia$i: $m" ;;
	esac
done
echo "ADMITTED=${o# }"
echo "CUDA=${CUDA_VISIBLE_DEVICES:-}"
echo "OTEL=${OTEL_RESOURCE_ATTRIBUTES:-}"'

# uuid_of MINOR: the fake driver tree's UUID of /dev/nvidiaMINOR.
uuid_of() {
	grep -l "^Device Minor:[[:space:]]*$1\$" /proc/driver/nvidia/gpus/*/information |
		xargs sed -n 's/^GPU UUID:[[:space:]]*//p'
}

check_gpu() {
	local t f admitted attrs seen=''
	as_alice srun -n2 --gres=gpu:2 --gpus-per-task=1 -o "$work/gpu.%t" bash -c "$gpu_report" ||
		fail "srun failed"
	for t in 0 1; do
		f=$work/gpu.$t
		admitted=$(value ADMITTED "$f") attrs=$(value OTEL "$f")
		note "task $t: may open /dev/nvidia{$admitted}, CUDA_VISIBLE_DEVICES=$(value CUDA "$f"), attributes $attrs"
		[[ -z $(value ORACLE_ERROR "$f") ]] || fail "task $t: the oracle cannot tell: $(value ORACLE_ERROR "$f")"
		if [[ ! $admitted =~ ^[0-9]$ ]]; then
			fail "task $t: may open '$admitted', want exactly one GPU"
			continue
		fi
		[[ " $seen " != *" $admitted "* ]] || fail "task $t: /dev/nvidia$admitted is another task's too"
		seen="$seen $admitted"
		[[ $(attr nv.gpu.uuid "$attrs") == "$(uuid_of "$admitted")" ]] ||
			fail "task $t: nv.gpu.uuid '$(attr nv.gpu.uuid "$attrs")', but the task may open /dev/nvidia$admitted, $(uuid_of "$admitted")"
		[[ $(attr nv.gpu.count "$attrs") == 1 ]] || fail "task $t: nv.gpu.count '$(attr nv.gpu.count "$attrs")'"
	done
}

check_memory() {
	local mark r attrs line job state
	mark=$(log_mark)
	# Not sbatch --wait, which polls at growing intervals (30 s lost
	# here).
	job=$(as_alice sbatch --parsable -n1 --mem=160M -o "$work/memory.out" /mnt/memory-job.sh)
	state=$(job_end "$job")
	[[ $state == COMPLETED ]] || fail "job '$job' ended $state: $(cat "$work/memory.out" 2>/dev/null)"
	r=$work/memory.result
	note "job: limit $(value MAX "$r") B, unreclaimable use $(value USED "$r") B before the fill, filled $(value FILL "$r") B," \
		"memory.current $(value FILLED "$r") B after it; step exit $(value RC "$r");" \
		"memory.events oom $(value EVENTS_oom "$r") oom_kill $(value EVENTS_oom_kill "$r")"
	# ConstrainRAMSpace: the job's memory.max is its --mem.
	[[ $(value MAX "$r") == $((160 << 20)) ]] || fail "the job's memory.max is '$(value MAX "$r")', not 160 MiB"
	attrs=$(value OTEL "$work/memory.step")
	note "batch script: OTEL_RESOURCE_ATTRIBUTES=$(value BATCH_OTEL "$r")"
	note "step: OTEL_RESOURCE_ATTRIBUTES=$attrs"
	# No helper ran for the step's task: it has the script's value as
	# inherited, not one with its step and task.
	[[ -n $attrs && $attrs == "$(value BATCH_OTEL "$r")" ]] ||
		fail "the step's task's attributes are not the batch script's, unchanged"
	[[ -z $(attr slurm.step.id "$attrs") && -z $(attr slurm.task.id "$attrs") ]] ||
		fail "the step's task got its own attributes (slurm.step.id '$(attr slurm.step.id "$attrs")')"
	[[ $(value RC "$r") == 0 ]] || fail "the step failed: exit '$(value RC "$r")'"
	[[ $(value EVENTS_oom_kill "$r") == 0 ]] || fail "memory.events oom_kill '$(value EVENTS_oom_kill "$r")'"
	line=$(log_since "$mark" | grep -o 'not loading the library: memory cgroup .* has [0-9]* KiB left.*' | head -n 1)
	note "slurmd.log: $line"
	[[ -n $line ]] || fail "no 'not loading the library: memory cgroup ... has N KiB left' line in slurmd.log"
}

# pagecache: TestMemoryPageCache on cgroup v2 (pagecache-job.sh).
check_pagecache() {
	local mark job state r attrs cache clean lines
	mark=$(log_mark)
	job=$(as_alice sbatch --parsable -n1 --mem=64M -o "$work/pagecache.out" /mnt/pagecache-job.sh)
	state=$(job_end "$job")
	[[ $state == COMPLETED ]] || fail "job '$job' ended $state: $(cat "$work/pagecache.out" 2>/dev/null)"
	r=$work/pagecache.result
	note "job $job after writing 56 MiB: memory.max $(value MAX "$r") B, memory.current $(value CURRENT "$r") B;" \
		"memory.stat file $(value FILE "$r") active_file $(value ACTIVE_FILE "$r") inactive_file $(value INACTIVE_FILE "$r")" \
		"file_dirty $(value FILE_DIRTY "$r") file_writeback $(value FILE_WRITEBACK "$r") shmem $(value SHMEM "$r")"
	[[ $(value DD "$r") == 0 ]] || fail "the step that writes the file failed: exit '$(value DD "$r")'"
	[[ $(value MAX "$r") == $((64 << 20)) ]] || fail "the job's memory.max is '$(value MAX "$r")', not 64 MiB"
	cache=$(($(value ACTIVE_FILE "$r") + $(value INACTIVE_FILE "$r")))
	clean=$((cache - $(value FILE_DIRTY "$r") - $(value FILE_WRITEBACK "$r")))
	# The case is only one when the page cache is what fills the job:
	# counted as used, it would leave less than one helper's 12 MiB.
	(($(value CURRENT "$r") + (12 << 20) > $(value MAX "$r"))) ||
		fail "memory.current $(value CURRENT "$r") leaves room for a helper even with the page cache counted: not the case"
	((clean >= 32 << 20)) || fail "only $clean B of clean page cache in the job's memory.stat, want at least 32 MiB"
	attrs=$(value OTEL "$work/pagecache.step")
	note "last step: OTEL_RESOURCE_ATTRIBUTES=$attrs"
	[[ $(attr slurm.job.id "$attrs") == "$job" && $(attr slurm.step.id "$attrs") == "$(value STEP "$work/pagecache.step")" &&
		$(attr slurm.task.id "$attrs") == 0 ]] ||
		fail "the last step's task has not its own attributes (slurm.step.id '$(attr slurm.step.id "$attrs")')"
	[[ $(value RC "$r") == 0 ]] || fail "the last step failed: exit '$(value RC "$r")'"
	lines=$(log_since "$mark" | grep -F "[$job." | grep -E 'error: spank-otel:|not loading the library')
	[[ -z $lines ]] || fail "slurmd.log: $lines"
}

# The cases of the overlap check, NAME:ROOM (overlap-job.sh): room for the
# step's helper, and room that Slurm's own start of the step takes down
# to under the 12 MiB the helper needs (spank/membound.h) by its first
# request: the step's slurmstepd and its 8 task children had used 8.5 to
# 12.1 MiB of it then, in eight steps. Not less: with 9 and with 14 MiB
# left they went on to get the job's memory holder OOM-killed (the
# helper, refused, had loaded nothing), more than the plugin could help.
overlap_cases="written:40 refused:18"

# overlap_job OPT: one job of overlap-job.sh's steps with srun's extra
# option OPT.
overlap_job() {
	local opt=$1 tag=plain mark job state c name room o t f step attrs
	local written refused others l n ev
	[[ -z $opt ]] || tag=oomkill
	mark=$(log_mark)
	job=$(as_alice sbatch --parsable -n8 -O --mem=320M -o "$work/overlap-$tag.out" \
		/mnt/overlap-job.sh "$work/overlap-$tag" "$opt" $overlap_cases)
	state=$(job_end "$job" 600)
	note "$tag: job $job ended $state"
	[[ $state == COMPLETED ]] || fail "$tag: job '$job' ended $state: $(cat "$work/overlap-$tag.out" 2>/dev/null)"
	log_since "$mark" >"$work/overlap-$tag.log"
	for c in $overlap_cases; do
		IFS=: read -r name room <<<"$c"
		o=$work/overlap-$tag/$name
		note "$tag $name: $(cat "$o.room" 2>/dev/null); step exit $(cat "$o.rc" 2>/dev/null)"
		[[ $(cat "$o.rc" 2>/dev/null) == 0 ]] || fail "$tag $name: the step exited '$(cat "$o.rc" 2>/dev/null)', want 0"
		# Slurm's words: "Detected 1 oom_kill event in StepId=...",
		# OUT_OF_MEMORY. (The plugin's own lines, which srun shows too,
		# are not Slurm's.)
		l=$(cat "$o.srun.err" "$work/overlap-$tag.out" 2>/dev/null | grep -v 'spank-otel:' | grep -iE 'oom[_-]kill|out[ _]of[ _]memory')
		[[ -z $l ]] || fail "$tag $name: srun or the job reports an OOM kill: $l"
		# memory.events of every cgroup of the job: job, steps, user,
		# tasks (task 0's view during the step), and the job's after it.
		n=0
		while read -r l; do
			[[ -n $l ]] || continue
			n=$((n + 1))
			ev=$(sed -n 's/.* oom_kill \([0-9]*\) .*/\1/p' <<<"$l")
			[[ $ev == 0 ]] || fail "$tag $name: oom_kill '$ev' in the job's cgroup ${l%% *}"
		done <<<"$(cat "$o.cgroups.step" "$o.cgroups.job" 2>/dev/null)"
		((n > 0)) || fail "$tag $name: no memory.events read"
		note "$tag $name: memory.events of $n cgroups read, oom_kill and memory.oom.group of task 0's: $(grep -o '^[^ ]*\|oom_kill [0-9]*\|oom.group [0-9]*' "$o.cgroups.step" 2>/dev/null | paste -sd' ' | sed 's| /| ; /|g')"
		step=$(value STEP "$o.task.0")
		for l in "/step_$step/" "/step_$step/slurm/" "/step_$step/user/" "/step_$step/user/task_0/" "/"; do
			grep -q "^$l " "$o.cgroups.step" 2>/dev/null || fail "$tag $name: no memory.events of the cgroup $l in task 0's report"
		done
		# --oom-kill-step on v2: memory.oom.group 1 on the cgroup of the
		# step's tasks (26.05: step_N/user), 0 without it; 0 on every
		# other cgroup of the job, the helper's step_N/slurm included.
		ev=$(sed -n "s|^/step_$step/user/ .*oom.group \([0-9]*\).*|\1|p" "$o.cgroups.step" 2>/dev/null)
		[[ $ev == $([[ -n $opt ]] && echo 1 || echo 0) ]] || fail "$tag $name: memory.oom.group of /step_$step/user/ is '$ev'"
		l=$(cat "$o.cgroups.step" "$o.cgroups.job" 2>/dev/null | grep -v "^/step_$step/user/ " | grep -v 'oom.group 0$')
		[[ -z $l ]] || fail "$tag $name: memory.oom.group set elsewhere: $l"
		written=0
		for t in 0 1 2 3 4 5 6 7; do
			f=$o.task.$t
			[[ $(value NTASKS "$f") == 8 ]] || fail "$tag $name: task $t: SLURM_STEP_NUM_TASKS '$(value NTASKS "$f")', want 8"
			attrs=$(value OTEL "$f")
			[[ $(attr slurm.job.id "$attrs") == "$job" && $(attr slurm.step.id "$attrs") == "$step" &&
				$(attr slurm.task.id "$attrs") == "$t" ]] && written=$((written + 1))
		done
		grep -F "[$job.$step]" "$work/overlap-$tag.log" | grep -v 'helper stderr:' >"$o.log"
		refused=$(grep -c "not loading the library: memory cgroup .* and the helper needs about 12288 KiB" "$o.log")
		others=$(grep 'error: spank-otel:' "$o.log" | grep -vc "not loading the library: memory cgroup")
		note "$tag $name: $written of 8 tasks got attributes, $refused said the helper had no room, $others other error lines;" \
			"$(grep -o 'not loading the library: memory cgroup .*' "$o.log" | head -n 1)"
		case $name in
		written) [[ $written == 8 && $refused == 0 && $others == 0 ]] || fail "$tag $name: want 8 tasks with attributes, no error line" ;;
		refused) [[ $written == 0 && $refused == 8 && $others == 0 ]] || fail "$tag $name: want 8 tasks saying the helper had no room, no other error line" ;;
		esac
	done
}

# overlap: TestOverlappingHelpers on cgroup v2, without and with
# --oom-kill-step.
check_overlap() {
	overlap_job ""
	overlap_job --oom-kill-step
}

# The fault matrix's "Go library" rows (test/cluster/helper_test.go):
# FAULT:a pattern (grep -E) of its lines: the task's, and the step's
# saying how its helper ended. hang runs with timeout=500. The Go runtime
# words oom's death either way under the helper's bound: "runtime: out
# of memory: cannot allocate ..." (helper_test.go's text) or "fatal
# error: out of memory allocating heap arena metadata". slurmstepd's
# wait for any child reaps the step's helper, and the VM's kernel (6.1)
# keeps no exit status for a pidfd (PIDFD_INFO_EXIT, 6.15): the step's
# line then has the helper's last words only ("said: ..."), and a helper
# that ended without a word (the library's exit, C's abort) has none.
fault_cases=(
	"panic:panic: faultlib"
	"threads:runtime: program exceeds"
	"oom:out of memory"
	"alloc:\\(over the helper's own memory bound, RLIMIT_DATA: 8 MiB"
	"abort:was killed by signal 6|ended before it answered"
	"segv:SIGSEGV"
	"exit:exited with status 3|ended before it answered"
	"hang:did not answer within 500 ms \\(timeout=\\)"
)

# fault_job TIMEOUT FAULT...: one job of faults-job.sh with the plugin's
# timeout= TIMEOUT, checked as helperFaults checks each row.
fault_job() {
	local timeout=$1 mark job state o c f want step got lines errors task_errors left
	shift
	set_stack "lib=$faultlib timeout=$timeout"
	mark=$(log_mark)
	o=$work/faults-$timeout
	job=$(as_alice sbatch --parsable -n1 --mem=160M -o "$o.out" /mnt/faults-job.sh "$o" "$@")
	state=$(job_end "$job" 600)
	restore_stack
	[[ $state == COMPLETED ]] || fail "job '$job' ended $state: $(cat "$o.out" 2>/dev/null)"
	note "job $job (timeout=$timeout): memory.events $(tr '\n' ' ' <"$o/events" 2>/dev/null)"
	[[ $(sed -n 's/^oom_kill //p' "$o/events" 2>/dev/null) == 0 ]] ||
		fail "job $job: memory.events oom_kill '$(sed -n 's/^oom_kill //p' "$o/events" 2>/dev/null)', want 0"
	for f in "$@"; do
		for c in "${fault_cases[@]}"; do [[ ${c%%:*} == "$f" ]] && want=${c#*:}; done
		step=$(value STEP "$o/$f.task") got=$(value OTEL "$o/$f.task")
		lines=$(log_since "$mark" | grep -F "[$job.$step]")
		errors=$(grep -F 'error: spank-otel:' <<<"$lines")
		# The step parent's line says how the step's helper ended.
		task_errors=$(grep -vE "error: spank-otel: the step's helper (was killed|exited|said)" <<<"$errors")
		note "$f (step $step): exit $(cat "$o/$f.rc" 2>/dev/null), carrier '$got'; $(grep -c . <<<"$errors") error line(s): $(head -n 1 <<<"$errors" | sed 's/.*error: spank-otel: //' | cut -c1-160)"
		[[ -n $step ]] || fail "$f: the task did not run"
		[[ $(cat "$o/$f.rc" 2>/dev/null) == 0 ]] || fail "$f: the step exited '$(cat "$o/$f.rc" 2>/dev/null)', want 0"
		[[ $got == user.carrier=1 ]] || fail "$f: the carrier is '$got', want it left as it was (user.carrier=1)"
		[[ $(grep -c . <<<"$task_errors") == 1 ]] || fail "$f: want one error line of the task, got: $task_errors"
		[[ $(grep -c . <<<"$errors") == 2 || ($f =~ ^(exit|abort)$ && $(grep -c . <<<"$errors") == 1) ]] ||
			fail "$f: want one error line of the task and one of its step (none for a wordless exit), got: $errors"
		grep -qE -- "$want" <<<"$errors" || fail "$f: its error lines have no '$want'"
	done
	left=$(helpers)
	[[ -z ${left// /} ]] || fail "helpers left after job $job: $left"
}

# faults: the fault matrix's Go library rows in a memory-limited job.
check_faults() {
	fault_job 20000 panic threads oom alloc abort segv exit
	fault_job 500 hang
}

# job_gone NAME: squeue answers and lists no job NAME (a squeue that
# fails is no answer).
job_gone() {
	local q
	q=$(timeout 20 squeue -h -n "$1") && [[ -z $q ]]
}

# job_end JOB [SECONDS]: the job's state once it has ended (COMPLETED,
# FAILED...), or "still STATE" after SECONDS (180).
job_end() {
	local i state
	for i in $(seq $((${2:-180} * 2))); do
		state=$(timeout 20 scontrol -o show job "$1" 2>/dev/null | grep -o 'JobState=[A-Z_]*')
		state=${state#JobState=}
		case $state in
		'' | PENDING | CONFIGURING | RUNNING | COMPLETING) sleep 0.5 ;;
		*)
			echo "$state"
			return
			;;
		esac
	done
	echo "still ${state:-unknown}"
}

# helpers: the processes named spank-otel.
helpers() { pgrep -x spank-otel | tr '\n' ' '; }

check_cancel() {
	local i n left
	[[ -z $(helpers) ]] || fail "helpers before the check: $(helpers)"
	set_stack "lib=$faultlib timeout=60000"
	as_alice env SPANK_OTEL_TEST_FAULT=hang setsid -f srun -n2 -J vm-cancel sleep 1 >/dev/null 2>&1 </dev/null
	for i in $(seq 300); do
		n=$(pgrep -cx spank-otel)
		[[ $n -lt 1 ]] || break
		sleep 0.2
	done
	note "$n helpers hanging in the library: $(helpers)"
	[[ $n -ge 1 ]] || fail "want the step's helper, found $n"
	as_alice scancel -n vm-cancel
	for i in $(seq 300); do
		job_gone vm-cancel && break
		sleep 0.2
	done
	restore_stack
	job_gone vm-cancel || fail "the job is still there 60 s after scancel: $(squeue -h -n vm-cancel 2>&1)"
	for i in $(seq 50); do
		left=$(helpers)
		left=${left% }
		[[ -n $left ]] || break
		sleep 0.2
	done
	[[ -z $left ]] || fail "helpers left after the step ended: $left ($(ps -o pid,stat,etime,args -p "${left// /,}" | tail -n +2))"
}

for check in $wanted; do
	case " $all " in
	*" $check "*) ;;
	*)
		echo "vm-check: FAIL $check (no such check)"
		failed=1
		continue
		;;
	esac
	check_failed=0
	start=$(uptime_s)
	"check_$check"
	took=$(awk -v a="$start" -v b="$(uptime_s)" 'BEGIN { printf "%.1f", b - a }')
	if ((check_failed)); then
		echo "vm-check: FAIL $check ($took s)"
		failed=1
	else
		echo "vm-check: PASS $check ($took s)"
	fi
done
restore_stack
exit "$failed"
