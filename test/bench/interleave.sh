#!/usr/bin/env bash
# interleave.sh HARNESS DIR ENVFILE ROUNDS BATCH COPIES NAME...
#
# Times the per-task path of each library DIR/NAME.C.so (C from 0 to
# COPIES-1) with the harness, BATCH tasks in a row, for ROUNDS rounds, and
# prints one line "NAME NANOSECONDS PAGE_FAULTS" per task. make bench runs
# it on this machine (section 1) and inside a cluster node (section 1g), so
# it needs nothing but bash and the harness. HARNESS_OPTS, when set, are
# more options for every harness run (section 1g: --node-files /). With
# STEP_HELPER set, HARNESS is spank-otel-stepdrive and each batch is one
# step of BATCH tasks around that step's helper (helper=step): one line per
# task, the step's time divided by its tasks, and no page-fault count (0).
#
# How the figures are kept fair on a machine whose speed drifts by tens of
# percent within minutes:
#  - short batches, in an order that turns around every round (ABC, CBA),
#    so that no library is always first after another's batch;
#  - every library timed from several copies of its file, used in turn:
#    where a file's pages sit in the page cache moved the same library's
#    time by 2-4%.
set -euo pipefail
(($# >= 7)) || { echo "usage: $0 HARNESS DIR ENVFILE ROUNDS BATCH COPIES NAME..." >&2; exit 2; }
harness=$1 dir=$2 envfile=$3 rounds=$4 batch=$5 copies=$6
shift 6
names=("$@")
n=${#names[@]}
for ((r = 0; r < rounds; r++)); do
	c=$(( (r / 2) % copies ))
	for ((k = 0; k < n; k++)); do
		if ((r % 2)); then name=${names[n - 1 - k]}; else name=${names[k]}; fi
		if [ -n "${STEP_HELPER:-}" ]; then
			# shellcheck disable=SC2086 # options, split on purpose
			"$harness" ${HARNESS_OPTS:-} --helper "$STEP_HELPER" --tasks "$batch" --bench 1 \
				--lib "$dir/$name.$c.so" --env-file "$envfile" |
				awk -v n="$name" -v b="$batch" -F= '$1 == "bench_us" { for (i = 0; i < b; i++) print n, int($2 * 1000 / b), 0 }'
			continue
		fi
		# shellcheck disable=SC2086 # options, split on purpose
		"$harness" ${HARNESS_OPTS:-} --bench "$batch" --lib "$dir/$name.$c.so" --env-file "$envfile" | sed "s/^/$name /"
	done
done
