#!/usr/bin/env bash
# make bench: what spank-otel costs, each figure printed with the command
# that produced it.
#
# 1s. the per-task path of the plugin: a step of BATCH tasks around the
#     step's helper (spank-otel-helper, started once per step, loading the
#     library at the first request), each task asking on its own socket;
#     per task, the step's time divided by its tasks. libspankotel.so vs
#     the same library with its call skipped (what loading it costs) vs an
#     empty Go c-shared library, interleaved, with the calls' median from
#     the helper's debug line.
# 1b. many steps starting at once, one task each (every task pays a
#     helper's start and load): the tail that sets the timeout= default.
# 1gs. section 1s on a cluster node with (fake) GPUs, for a task given two:
#     what finding a task's GPUs adds.
#  2. step launch in the cluster: srun -O -N2 -n8 true, plugin on vs off.
#  3. the Go benchmarks, with the OpenTelemetry SDK's decoder beside ours.
#  4. what a per-task `eval "$(python3 -c ...)"` costs, for comparison.
#
# The last three lines are the ratios, in a fixed form.
#
# BENCH_SECTIONS="1s 3" runs only the sections listed (1s, 1b, 1gs, 2, 3,
# 4); the default is all of them. The other BENCH_* settings are below.
# (Sections 1 and 1g timed the task's own helper, helper=task, which is
# gone; docs/performance.md keeps their figures as history.)
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
build=$top/build
forks=${BENCH_FORKS:-2400}      # per library (at least 300)
batch=${BENCH_BATCH:-5}         # tasks in a row from one library
copies=${BENCH_COPIES:-4}       # copies of each library file
pairs=${BENCH_PAIRS:-30}        # srun on/off pairs
slurm=${SLURM:-26.05}
sections=" ${BENCH_SECTIONS:-1s 1b 1gs 2 3 4} "
# The step's helper, its driver and the empty Go library, built in a
# directory of their own.
spankbuild=$top/build/bench-spank
stepdrive=$spankbuild/spank-otel-stepdrive
stephelper=$spankbuild/spank-otel-helper
testdata=$spankbuild/testdata

say() { printf '\n== %s\n' "$*"; }
# Sections 2 and 1gs run in the test cluster. One this run brought up goes
# down when it ends, so that nothing the bench started outlives it; one
# that was up already (make demo's) is left as it was.
cluster_was=
cluster_up() {
	local ctld
	if [ -z "$cluster_was" ]; then
		ctld=$(test/slurm-docker/cluster containers --slurm "$slurm" | awk '$1 == "slurmctld" { print $2 }')
		cluster_was=down
		[ "$(docker inspect -f '{{.State.Running}}' "$ctld" 2>/dev/null)" != true ] || cluster_was=up
	fi
	test/slurm-docker/cluster up --slurm "$slurm" >/dev/null
}
want() { [[ $sections == *" $1 "* ]]; }
show() { printf '$ %s\n' "$*"; }

# quantiles DIVISOR Q...: the numbers on stdin at each quantile Q (nearest
# rank), divided by DIVISOR and truncated; "-" for each when there are none.
# Sections 1s, 1b and 4 read every percentile through it.
quantiles() {
	local div=$1; shift
	sort -n | awk -v div="$div" -v qs="$*" '{ v[NR] = $1 } END {
		n = split(qs, q, " ")
		for (i = 1; i <= n; i++)
			printf "%s%s", (i > 1 ? " " : ""), (NR ? int(v[int(NR * q[i] + 0.5)] / div) : "-")
		print "" }'
}
# percentiles FILE: p50 p90 p99 p99.9 of the nanoseconds in FILE, in µs.
percentiles() { quantiles 1000 0.5 0.9 0.99 0.999 < "$1"; }
median() { quantiles 1 0.5; }
# table FILE PREFIX NAME...: one row of percentiles for each library's
# nanoseconds in FILE (interleave.sh's lines); sets PREFIX_NAME to its p50.
table() {
	local file=$1 prefix=$2 name label p50 p90 p99 p999
	shift 2
	printf '%-10s %8s %8s %8s %8s\n' library p50_us p90_us p99_us p99.9_us
	for name in "$@"; do
		read -r p50 p90 p99 p999 < <(awk -v n="$name" '$1 == n { print $2 }' "$file" | percentiles /dev/stdin)
		printf -v "${prefix}_$name" %s "$p50"
		label=$name; [ "$name" = emptygo2 ] && label="emptygo'"
		printf '%-10s %8d %8d %8d %8d\n' "$label" "$p50" "$p90" "$p99" "$p999"
	done
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }
# The libraries sections 1s and 1gs time.
declare -A src=(
	[ours]=$build/libspankotel.so
	[loadonly]=$build/bench/libspankotel-loadonly.so
	[emptygo]=$testdata/libgoempty.so
	[emptygo2]=$testdata/libgoempty.so
)
stage_runs=${BENCH_STAGE_RUNS:-300}

make -s lib cli build/bench/libspankotel-loadonly.so >/dev/null   # paths as the Makefile names them
make -s -C spank stephelper goempty "$stepdrive" BUILD="$spankbuild" >/dev/null

# --- 1s, 1b: the libraries' copies --------------------------------------------
rounds=$(( forks / batch ))
envfile=$(mktemp) libdir=
trap 'rm -f "$envfile" "$tmp"/* 2>/dev/null; rmdir "$tmp" 2>/dev/null; [ -z "$libdir" ] || rm -rf "$libdir"; [ "$cluster_was" != down ] || test/slurm-docker/cluster down --slurm "$slurm" >/dev/null 2>&1 || :' EXIT
tmp=$(mktemp -d)
{ cat detect/slurm/testdata/task-env.txt; printf 'OTEL_RESOURCE_ATTRIBUTES=%s\n' "$(cat detect/slurm/testdata/carrier-25.txt)"; } > "$envfile"
step_ratio=- step_go=- step_noise=- gpu_step=- gpu_step_noise=-
# The library copies live where the plugin's rule for a library holds: a
# root-owned directory that no one else can write, all the way up. Not in
# build/: a checkout under /tmp (1777) or in a home directory would fail
# that rule, and the step's helper refuses to load them. /var/cache/spank-otel is
# the project's own root-owned cache (the cluster keeps its base images
# there); /run would do too, but is a tmpfs on most machines, and the
# copies' page-cache placement is part of what is timed. The directory
# goes when the bench ends.
if want 1b || want 1s; then
	install -d -m 0755 /var/cache/spank-otel
	libdir=$(mktemp -d /var/cache/spank-otel/bench-libs.XXXXXX)
	chmod 0755 "$libdir"
fi

# --- 1s. per-task cost ------------------------------------------------------
if want 1s; then
say "1s. per-task cost: steps of $batch tasks around one helper each (the load once per step), $forks tasks each, in $rounds interleaved steps"
step_names=(ours loadonly emptygo emptygo2)
for name in "${step_names[@]}"; do
	for ((c = 0; c < copies; c++)); do [ -f "$libdir/$name.$c.so" ] || cp "${src[$name]}" "$libdir/$name.$c.so"; done
done
STEP_HELPER=$stephelper test/bench/interleave.sh "$stepdrive" "$libdir" "$envfile" "$rounds" "$batch" "$copies" "${step_names[@]}" > "$tmp/steps"
show "STEP_HELPER=spank-otel-helper interleave.sh spank-otel-stepdrive DIR <task env> $rounds $batch $copies ${step_names[*]}"
table "$tmp/steps" step "${step_names[@]}"
step_go=$(ratio "$step_ours" "$step_emptygo")
step_noise=$(ratio "$step_emptygo2" "$step_emptygo")
printf "ratios at p50, helper=step: ours/emptygo %s (noise emptygo'/emptygo %s); loadonly/emptygo %s\n" \
	"$step_go" "$step_noise" "$(ratio "$step_loadonly" "$step_emptygo")"
# The helper times the load and each call itself and says so in a debug
# line, which the driver prints for each task: a step of one task, so that
# every run loads the library.
for ((r = 0; r < stage_runs; r++)); do
	for name in ours loadonly emptygo; do
		"$stepdrive" --helper "$stephelper" --lib "$libdir/$name.$((r % copies)).so" --tasks 1 --env-file "$envfile" |
			sed -n "s/.*step helper: library loaded and started in \([0-9]*\) us (once for the step), call \([0-9]*\) us\$/$name \1 \2/p"
	done
done > "$tmp/stages"
show "spank-otel-stepdrive --helper spank-otel-helper --lib LIB --tasks 1 --env-file <task env>   (×$stage_runs per LIB, interleaved; the helper's debug line)"
printf '%-10s %8s %8s   (medians of %d each)\n' library load_us call_us "$stage_runs"
for name in ours loadonly emptygo; do
	printf '%-10s %8s %8s\n' "$name" "$(awk -v n="$name" '$1 == n { print $2 }' "$tmp/stages" | median)" \
		"$(awk -v n="$name" '$1 == n { print $3 }' "$tmp/stages" | median)"
done
fi

# --- 1b. many steps at once ------------------------------------------------
# A step of one task is the longest a task waits: its helper starts, loads
# the library and answers it alone, and 16 of them share the CPUs.
conc=${BENCH_CONCURRENT:-16}
if want 1b; then
[ -f "$libdir/ours.0.so" ] || cp "$build/libspankotel.so" "$libdir/ours.0.so"
say "1b. $conc steps of one task starting at once on $(nproc) CPUs, 40 rounds: the tail that sets the timeout= default"
show "$conc × spank-otel-stepdrive --helper spank-otel-helper --tasks 1 --bench 40 --lib $build/libspankotel.so --env-file <task env>   (in parallel)"
for ((i = 0; i < conc; i++)); do
	"$stepdrive" --helper "$stephelper" --tasks 1 --bench 40 --lib "$libdir/ours.0.so" --env-file "$envfile" > "$tmp/conc.$i" &
done
wait
# The driver's microseconds, as nanoseconds for percentiles.
sed -n 's/^bench_us=\([0-9]*\)$/\1000/p' "$tmp"/conc.* > "$tmp/conc"
read -r c50 c90 c99 c999 < <(percentiles "$tmp/conc")
timeout_ms=$(sed -n 's/^#define SO_DEFAULT_TIMEOUT_MS \([0-9]*\)$/\1/p' spank/args.h)
printf 'per task, %d steps at once: p50 %d us, p99 %d us, p99.9 %d us (of %d); timeout= default %d ms is %dx the p99.9\n' \
	"$conc" "$c50" "$c99" "$c999" "$(wc -l < "$tmp/conc")" "$timeout_ms" "$(( timeout_ms * 1000 / (c999 > 0 ? c999 : 1) ))"
fi

# --- 3. Go benchmarks ---------------------------------------------------------
if want 3; then
say "3. Go benchmarks (ours and the OpenTelemetry Go SDK's environment detector on the same carrier)"
show "go test -run='^\$' -bench=. -benchmem ./libcarrier ./detect/... ./taskenv ./cgo"
go test -run='^$' -bench=. -benchmem ./libcarrier ./detect/... ./taskenv ./cgo | grep -E '^(Benchmark|ok)'
# The SDK's side, in the module that depends on it.
show "(cd test/sdkinterop && go test -run='^\$' -bench=. -benchmem .)"
(cd test/sdkinterop && go test -run='^$' -bench=. -benchmem .) | grep -E '^(Benchmark|ok)'
fi

# --- 4. Python comparison -----------------------------------------------------
if want 4; then
say "4. per-task shell step: eval \"\$(python3 -c ...)\" vs eval \"\$(spank-otel export)\", 30 runs each"
py='import os,uuid,urllib.parse as u
e=os.environ;j=e.get("SLURM_ARRAY_JOB_ID") if "SLURM_ARRAY_TASK_ID" in e else e.get("SLURM_JOB_ID")
a={"slurm.job.id":e.get("SLURM_JOB_ID",""),"nv.dl.job.uuid":str(uuid.uuid5(uuid.NAMESPACE_URL,"nemo.lens.job/%s/%s"%(e.get("SLURM_CLUSTER_NAME") or "nocluster",j or "nojob")))}
print("export OTEL_RESOURCE_ATTRIBUTES="+",".join(k+"="+u.quote(v,safe="") for k,v in sorted(a.items())))'
timeit() { # command...: median wall time of 30 runs in µs
	local i t0 t1
	for ((i = 0; i < 30; i++)); do
		t0=$(date +%s%N); eval "$("$@")"; t1=$(date +%s%N); echo $(( t1 - t0 ))
	done | quantiles 1000 0.5
}
while IFS= read -r kv; do export "$kv"; done < "$envfile"   # the task environment, values as they are
if command -v python3 >/dev/null; then
	show "eval \"\$(python3 -c '<derive job id and UUID, percent-encode, print export>')\""
	printf 'python3 -c      p50 %6d us\n' "$(timeit python3 -c "$py")"
fi
show "eval \"\$($build/spank-otel export)\""
printf 'spank-otel      p50 %6d us\n' "$(timeit "$build/spank-otel" export)"
if [ -n "${step_ours:-}" ]; then
	printf 'plugin per task p50 %6d us  (from 1s.)\n' "$step_ours"
fi
fi

# --- 2. step launch in the cluster ------------------------------------------
if want 2; then
say "2. step launch: srun -O -N2 -n8 true, plugin on vs --otel-attrs=off, $pairs interleaved pairs, Slurm $slurm"
cluster_up
# Inside one allocation, so that what is timed is the step launch and not
# the scheduler finding resources for a new job each time.
show "test/slurm-docker/cluster exec --slurm $slurm -- salloc -O -N2 -n8 bash -c 'srun -O -N2 -n8 true; srun --otel-attrs=off -O -N2 -n8 true' (timed, alternating)"
test/slurm-docker/cluster exec --slurm "$slurm" -- salloc -Q -O -N2 -n8 bash -c '
	srun -O -N2 -n8 true; srun --otel-attrs=off -O -N2 -n8 true   # warm up
	for ((i = 0; i < '"$pairs"'; i++)); do
		t0=$(date +%s%N); srun -O -N2 -n8 true; t1=$(date +%s%N)
		srun --otel-attrs=off -O -N2 -n8 true; t2=$(date +%s%N)
		echo $(( t1 - t0 )) $(( t2 - t1 ))
	done' > "$tmp/srun"
[ -s "$tmp/srun" ] || { echo "bench: no step timings" >&2; exit 1; }
read -r on_med off_med step_ratio < <(awk '{ on[NR] = $1; off[NR] = $2; r[NR] = $1 / $2 }
	function med(a, n,   i, j, t) { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
		return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
	END { printf "%d %d %.3f\n", med(on, NR) / 1e6, med(off, NR) / 1e6, med(r, NR) }' "$tmp/srun")
printf 'median srun -O -N2 -n8 true: on %d ms, off %d ms; median of the %d pair ratios %s\n' "$on_med" "$off_med" "$pairs" "$step_ratio"
fi

# --- 1gs. per-task cost on a node with GPUs --------------------------------
# Section 1s on compute node c1 of the site cluster, which has four fake
# GPUs (gres.conf, device nodes, the driver's tree; see entrypoint.sh), for
# a task that Slurm gave two of them: the whole search of package gpu, on
# the files a real node has. The task's environment is a real one: a step
# of a batch job, with the plugin off for that step only, so that it holds
# what the batch script inherited from the plugin, as a task of a training
# job's srun does. The driver reads the node's files once per step, as the
# plugin's user_init does (--node-files /), every task asks which GPUs it
# may use and its request carries both to the step's helper. Every timed
# step runs in a device cgroup that admits what that task's own
# cgroup admitted (its devices.list, copied from the step), so that the
# search asks the kernel and answers as it does in the job: in the
# container's cgroup every GPU of the node is admitted, more than the
# task's two, and the search would time its refusal instead.
if want 1gs; then
node_rounds=$(( ${BENCH_NODE_FORKS:-1200} / batch ))
say "1gs. per-task cost on node c1 of the Slurm $slurm cluster (4 fake GPUs), a task given 2 of them; ${BENCH_NODE_FORKS:-1200} tasks each"
cluster_up
on_c1() { test/slurm-docker/cluster exec --slurm "$slurm" --node c1 --root -- "$@"; }
stage=$(mktemp -d)
# The task writes its environment and its device cgroup's list.
test/slurm-docker/cluster exec --slurm "$slurm" -- bash -c 'cd /shared && rm -f bench-task.env bench-devices.list &&
	printf "%s\n" "#!/bin/sh" "env > /shared/bench-task.env" \
		"cat /sys/fs/cgroup/devices\$(sed -n \"s/^[0-9]*:devices://p\" /proc/self/cgroup)/devices.list > /shared/bench-devices.list" > bench-task.sh &&
	chmod 755 bench-task.sh &&
	sbatch --wait --quiet -N1 -w c1 --gres=gpu:2 --mem=128M -o /dev/null \
		--wrap "srun --otel-attrs=off --mem=64M /shared/bench-task.sh" && cat bench-task.env' > "$stage/env.gpu" || true
test/slurm-docker/cluster exec --slurm "$slurm" -- cat /shared/bench-devices.list > "$stage/devices.list" || true
grep -q '^SLURM_STEP_GPUS=' "$stage/env.gpu" && grep -q '^OTEL_RESOURCE_ATTRIBUTES=.*slurm.job.id=' "$stage/env.gpu" ||
	{ echo "bench: the batch job's task names no GPUs or has no carrier from the batch script" >&2; exit 1; }
[ "$(grep -c '^c 195:' "$stage/devices.list")" -ge 1 ] && ! grep -q '^a ' "$stage/devices.list" ||
	{ echo "bench: the task's device cgroup on c1 (cgroup v1's devices.list) admits no GPU or every device" >&2; exit 1; }
grep -v -E '^(CUDA_VISIBLE_DEVICES|SLURM_STEP_GPUS|GPU_DEVICE_ORDINAL|SLURM_GPUS_ON_NODE)=' "$stage/env.gpu" > "$stage/env.none"
node_names=(ours loadonly emptygo emptygo2)
for name in "${node_names[@]}"; do
	for ((c = 0; c < copies; c++)); do cp "${src[$name]}" "$stage/$name.$c.so"; done
done
cp "$stepdrive" "$stephelper" test/bench/interleave.sh "$stage/"
# Root-owned all the way up, as the plugin's rule for a library wants.
dir=/var/cache/spank-otel-bench
tar -C "$stage" -c --owner=0 --group=0 . | on_c1 sh -c "rm -rf $dir && install -d -m 0755 $dir && tar -x -o -C $dir"
rm -rf "$stage"
# in_task_devices CMD...: CMD in a device cgroup of c1 that admits what
# the task's did (v1: deny all, then allow each line of its list).
devcg=/sys/fs/cgroup/devices/spank-otel-bench
on_c1 sh -c "mkdir -p $devcg && echo a > $devcg/devices.deny && while read -r l; do echo \"\$l\" > $devcg/devices.allow; done < $dir/devices.list"
in_task_devices() { on_c1 sh -c 'echo $$ > '"$devcg"'/cgroup.procs && exec "$@"' sh "$@"; }
show "cluster exec --node c1 -- env STEP_HELPER=spank-otel-helper STEPDRIVE_OPTS='--node-files /' interleave.sh spank-otel-stepdrive DIR <env of srun in sbatch --gres=gpu:2 on c1> $node_rounds $batch $copies ${node_names[*]}"
in_task_devices env STEP_HELPER="$dir/spank-otel-helper" STEPDRIVE_OPTS="--node-files /" "$dir/interleave.sh" \
	"$dir/spank-otel-stepdrive" "$dir" "$dir/env.gpu" "$node_rounds" "$batch" "$copies" "${node_names[@]}" > "$tmp/node.steps"
table "$tmp/node.steps" nodestep "${node_names[@]}"
gpu_step=$(ratio "$nodestep_ours" "$nodestep_emptygo")
gpu_step_noise=$(ratio "$nodestep_emptygo2" "$nodestep_emptygo")
printf "ratios at p50 on c1: ours/emptygo %s (noise emptygo'/emptygo %s); loadonly/emptygo %s\n" \
	"$gpu_step" "$gpu_step_noise" "$(ratio "$nodestep_loadonly" "$nodestep_emptygo")"
# The call alone, from the helper's debug line: the task given GPUs and
# the same task without its GPU variables, steps of one task.
show "cluster exec --node c1 -- spank-otel-stepdrive --helper spank-otel-helper --lib ours --tasks 1 --env-file ENV --node-files /   (×$stage_runs each, interleaved; the helper's debug line)"
in_task_devices bash -c 'for ((r = 0; r < '"$stage_runs"'; r++)); do for e in gpu none; do
	"$0/spank-otel-stepdrive" --helper "$0/spank-otel-helper" --node-files / --tasks 1 --lib "$0/ours.$((r % '"$copies"')).so" --env-file "$0/env.$e" 2>&1 |
		sed -n -e "s/.*, call \([0-9]*\) us\$/$e \1/p" -e "s/^task=0 status=called .*nv\.gpu\.count=\([0-9]*\).*/$e-gpus \1/p"; done; done' "$dir" > "$tmp/node.calls"
# What is timed must be the search that answers: each task given GPUs
# got its two, as in the job.
[ "$(grep -c -x 'gpu-gpus 2' "$tmp/node.calls")" -eq "$stage_runs" ] ||
	{ echo "bench: not every timed task given GPUs got nv.gpu.count=2 on c1" >&2; exit 1; }
printf 'call, median: a task given 2 GPUs %s us, the same task without GPUs %s us\n' \
	"$(awk '$1 == "gpu" { print $2 }' "$tmp/node.calls" | median)" "$(awk '$1 == "none" { print $2 }' "$tmp/node.calls" | median)"
on_c1 sh -c "rm -rf $dir && rmdir $devcg"
fi

echo
echo "per-task p50 ratio vs empty Go library: $step_go (noise $step_noise)"
echo "per-task p50 ratio vs empty Go library on a node with GPUs: $gpu_step (noise $gpu_step_noise)"
echo "srun step ratio plugin on/off: $step_ratio"
