#!/usr/bin/env bash
# run.sh VERSION...: the cluster tests on each Slurm version in turn: bring
# the cluster up (building what is missing), run the tests, take it down.
# Every test runs on the site profile (cgroups, CPU binding, memory
# enforced); the jobs of every kind also run on the basic profile (no
# cgroups), which admins without cgroups have. Ends with the fault matrix
# of every version. Exit status: non-zero when any version failed; every
# version runs regardless.
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
export PATH=/usr/local/go/bin:$PATH
failed=()
timings=() # each suite's duration, printed at the end
mkdir -p build && rm -f build/fault-matrix-*.txt
# The tests the basic profile runs: jobs of each kind and the task's state.
basic_tests='^(TestBatchJobTwoNodesWithSteps|TestSrunAlone|TestSallocWithSrun|TestArrayJob|TestTaskProcessUntouched|TestContainerPlugin)$'
for v in "$@"; do
	for profile in site basic; do
		echo "=== cluster tests on Slurm $v, $profile profile ==="
		t0=$SECONDS
		if ! test/slurm-docker/cluster up --slurm "$v" --profile "$profile"; then
			failed+=("$v $profile (cluster up)")
			continue
		fi
		timings+=("Slurm $v $profile: cluster up (build included) $((SECONDS - t0))s")
		t0=$SECONDS
		run=()
		[ "$profile" = site ] || run=(-run "$basic_tests")
		go test -count=1 -timeout 30m -tags cluster ./test/cluster/ -slurm "$v" -profile "$profile" \
			"${run[@]}" -v 2>&1 |
			tee "build/cluster-test-$v-$profile.log" | grep -vE '^=== (RUN|PAUSE|CONT)'
		rc=${PIPESTATUS[0]}
		timings+=("Slurm $v $profile: tests $((SECONDS - t0))s")
		[ "$rc" -eq 0 ] || failed+=("$v $profile")
	done
	test/slurm-docker/cluster down --slurm "$v" >/dev/null 2>&1 || true
done
matrices=()
for v in "$@"; do
	[ -f "build/fault-matrix-$v.txt" ] && matrices+=("build/fault-matrix-$v.txt")
done
[ ${#matrices[@]} -eq 0 ] || test/cluster/matrix.sh "${matrices[@]}"
printf '%s\n' "${timings[@]}"
if [ ${#failed[@]} -gt 0 ]; then
	echo "cluster tests FAILED on: ${failed[*]}"
	exit 1
fi
echo "cluster tests passed on: $*"
