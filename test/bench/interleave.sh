#!/usr/bin/env bash
# interleave.sh STEPDRIVE DIR ENVFILE ROUNDS BATCH COPIES NAME...
#
# Times the per-task path of each library DIR/NAME.C.so (C from 0 to
# COPIES-1) with spank-otel-stepdrive: each round, one step of BATCH tasks
# around that step's helper (STEP_HELPER, spank-otel-helper), for ROUNDS
# rounds, and prints one line "NAME NANOSECONDS 0" per task, the step's
# time divided by its tasks (0: no page-fault count). make bench runs it on
# this machine (section 1s) and inside a cluster node (section 1gs), so it
# needs nothing but bash, awk and the two programs. STEPDRIVE_OPTS, when set,
# are more options for every run (section 1gs: --node-files /).
#
# How the figures are kept fair on a machine whose speed drifts by tens of
# percent within minutes:
#  - short batches, in an order that turns around every round (ABC, CBA),
#    so that no library is always first after another's batch;
#  - every library timed from several copies of its file, used in turn:
#    where a file's pages sit in the page cache moved the same library's
#    time by 2-4%.
set -euo pipefail
(($# >= 7)) && [ -n "${STEP_HELPER:-}" ] ||
	{ echo "usage: STEP_HELPER=EXE $0 STEPDRIVE DIR ENVFILE ROUNDS BATCH COPIES NAME..." >&2; exit 2; }
stepdrive=$1 dir=$2 envfile=$3 rounds=$4 batch=$5 copies=$6
shift 6
names=("$@")
n=${#names[@]}
for ((r = 0; r < rounds; r++)); do
	c=$(( (r / 2) % copies ))
	for ((k = 0; k < n; k++)); do
		if ((r % 2)); then name=${names[n - 1 - k]}; else name=${names[k]}; fi
		# shellcheck disable=SC2086 # options, split on purpose
		"$stepdrive" ${STEPDRIVE_OPTS:-} --helper "$STEP_HELPER" --tasks "$batch" --bench 1 \
			--lib "$dir/$name.$c.so" --env-file "$envfile" |
			awk -v n="$name" -v b="$batch" -F= '$1 == "bench_us" { for (i = 0; i < b; i++) print n, int($2 * 1000 / b), 0 }'
	done
done
