#!/usr/bin/env bash
# make bench: what spank-otel costs, each figure printed with the command
# that produced it.
#
#  1. fork + dlopen + call in a forked child (as the plugin does per task):
#     libspankotel.so vs an empty Go c-shared library vs a plain C library,
#     interleaved.
#  2. step launch in the cluster: srun -N2 -n8 true, plugin on vs off.
#  3. the Go benchmarks, with the OpenTelemetry SDK's decoder beside ours.
#  4. what a per-task `eval "$(python3 -c ...)"` costs, for comparison.
#
# The last two lines are the two ratios, in a fixed form.
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
build=$top/build
forks=${BENCH_FORKS:-600}       # per library (at least 300)
rounds=${BENCH_ROUNDS:-30}      # interleaving rounds
pairs=${BENCH_PAIRS:-30}        # srun on/off pairs
slurm=${SLURM:-24.11}
harness=$top/spank/build/spank-otel-harness
testdata=$top/spank/build/testdata

say() { printf '\n== %s\n' "$*"; }
show() { printf '$ %s\n' "$*"; }

# percentiles FILE: p50 p90 p99 of the numbers in FILE (nanoseconds) in µs.
percentiles() {
	sort -n "$1" | awk '{ v[NR] = $1 } END {
		p50 = v[int(NR * 0.50 + 0.5)]; p90 = v[int(NR * 0.90 + 0.5)]; p99 = v[int(NR * 0.99 + 0.5)]
		printf "%d %d %d\n", p50 / 1000, p90 / 1000, p99 / 1000 }'
}

make -s lib cli >/dev/null
make -s -C spank harness goempty >/dev/null

# --- 1. per-task cost -------------------------------------------------------
say "1. per-task cost: fork + dlopen + call in the child, $forks forks each, interleaved in $rounds rounds"
envfile=$(mktemp)
trap 'rm -f "$envfile" "$tmp"/* 2>/dev/null; rmdir "$tmp" 2>/dev/null || true' EXIT
tmp=$(mktemp -d)
{ cat detect/testdata/task-env.txt; printf 'OTEL_RESOURCE_ATTRIBUTES=%s\n' "$(cat detect/testdata/carrier-25.txt)"; } > "$envfile"
declare -A libs=(
	[ours]=$build/libspankotel.so
	[emptygo]=$testdata/libgoempty.so
	[plainc]=$testdata/libfake.so
)
per_round=$(( forks / rounds ))
for name in ours emptygo plainc; do : > "$tmp/$name"; done
for ((r = 0; r < rounds; r++)); do
	for name in ours emptygo plainc; do
		"$harness" --bench "$per_round" --lib "${libs[$name]}" --env-file "$envfile" >> "$tmp/$name"
	done
done
show "$harness --bench $per_round --lib LIB --env-file <60-variable task env + 25-key carrier>   (×$rounds rounds per LIB)"
printf '%-10s %8s %8s %8s   %s\n' library p50_us p90_us p99_us size
for name in ours emptygo plainc; do
	read -r p50 p90 p99 < <(percentiles "$tmp/$name")
	eval "p50_$name=$p50 p90_$name=$p90 p99_$name=$p99"
	printf '%-10s %8d %8d %8d   %s bytes\n' "$name" "$p50" "$p90" "$p99" "$(stat -c %s "${libs[$name]}")"
done
ratio_go=$(awk -v a="$p50_ours" -v b="$p50_emptygo" 'BEGIN { printf "%.2f", a / b }')
printf 'ratios at p50: ours/emptygo %s  ours/plainc %s  (p90 %s, p99 %s vs emptygo)\n' "$ratio_go" \
	"$(awk -v a="$p50_ours" -v b="$p50_plainc" 'BEGIN { printf "%.2f", a / b }')" \
	"$(awk -v a="$p90_ours" -v b="$p90_emptygo" 'BEGIN { printf "%.2f", a / b }')" \
	"$(awk -v a="$p99_ours" -v b="$p99_emptygo" 'BEGIN { printf "%.2f", a / b }')"

# --- 3. Go benchmarks ---------------------------------------------------------
say "3. Go benchmarks (ours and the OpenTelemetry Go SDK's environment detector on the same carrier)"
show "go test -run='^\$' -bench=. -benchmem ./libcarrier ./detect ./taskenv"
go test -run='^$' -bench=. -benchmem ./libcarrier ./detect ./taskenv | grep -E '^(Benchmark|ok)'

# --- 4. Python comparison -----------------------------------------------------
say "4. per-task shell step: eval \"\$(python3 -c ...)\" vs eval \"\$(spank-otel export)\", 30 runs each"
py='import os,uuid,urllib.parse as u
e=os.environ;j=e.get("SLURM_ARRAY_JOB_ID") if "SLURM_ARRAY_TASK_ID" in e else e.get("SLURM_JOB_ID")
a={"slurm.job.id":e.get("SLURM_JOB_ID",""),"nv.dl.job.uuid":str(uuid.uuid5(uuid.NAMESPACE_URL,"nemo.lens.job/%s/%s"%(e.get("SLURM_CLUSTER_NAME") or "nocluster",j or "nojob")))}
print("export OTEL_RESOURCE_ATTRIBUTES="+",".join(k+"="+u.quote(v,safe="") for k,v in sorted(a.items())))'
timeit() { # command...: median wall time of 30 runs in µs
	local i t0 t1
	for ((i = 0; i < 30; i++)); do
		t0=$(date +%s%N); eval "$("$@")"; t1=$(date +%s%N); echo $(( t1 - t0 ))
	done | sort -n | awk '{ v[NR] = $1 } END { printf "%d\n", v[int(NR / 2 + 0.5)] / 1000 }'
}
while IFS= read -r kv; do export "$kv"; done < "$envfile"   # the task environment, values as they are
if command -v python3 >/dev/null; then
	show "eval \"\$(python3 -c '<derive job id and UUID, percent-encode, print export>')\""
	printf 'python3 -c      p50 %6d us\n' "$(timeit python3 -c "$py")"
fi
show "eval \"\$($build/spank-otel export)\""
printf 'spank-otel      p50 %6d us\n' "$(timeit "$build/spank-otel" export)"
printf 'plugin per task p50 %6d us  (from 1.)\n' "$p50_ours"

# --- 2. step launch in the cluster ------------------------------------------
say "2. step launch: srun -N2 -n8 true, plugin on vs --otel-attrs=off, $pairs interleaved pairs, Slurm $slurm"
test/slurm-docker/cluster up --slurm "$slurm" >/dev/null
# Inside one allocation, so that what is timed is the step launch and not
# the scheduler finding resources for a new job each time.
show "test/slurm-docker/cluster exec --slurm $slurm -- salloc -N2 -n8 bash -c 'srun -N2 -n8 true; srun --otel-attrs=off -N2 -n8 true' (timed, alternating)"
test/slurm-docker/cluster exec --slurm "$slurm" -- salloc -Q -N2 -n8 bash -c '
	srun -N2 -n8 true; srun --otel-attrs=off -N2 -n8 true   # warm up
	for ((i = 0; i < '"$pairs"'; i++)); do
		t0=$(date +%s%N); srun -N2 -n8 true; t1=$(date +%s%N)
		srun --otel-attrs=off -N2 -n8 true; t2=$(date +%s%N)
		echo $(( t1 - t0 )) $(( t2 - t1 ))
	done' > "$tmp/srun"
[ -s "$tmp/srun" ] || { echo "bench: no step timings" >&2; exit 1; }
read -r on_med off_med step_ratio < <(awk '{ on[NR] = $1; off[NR] = $2; r[NR] = $1 / $2 }
	function med(a, n,   i, j, t) { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
		return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
	END { printf "%d %d %.3f\n", med(on, NR) / 1e6, med(off, NR) / 1e6, med(r, NR) }' "$tmp/srun")
printf 'median srun -N2 -n8 true: on %d ms, off %d ms; median of the %d pair ratios %s\n' "$on_med" "$off_med" "$pairs" "$step_ratio"

echo
echo "per-task p50 ratio vs empty Go library: $ratio_go"
echo "srun step ratio plugin on/off: $step_ratio"
