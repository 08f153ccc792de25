#!/usr/bin/env bash
# run.sh VERSION...: the cluster tests on each Slurm version in turn: bring
# the cluster up (building what is missing), run the tests, take it down.
# The releases SchedMD supports (packaging/lib/common.sh: slurm_supported)
# run every test on the site profile (cgroups, CPU binding, memory
# enforced), what GPU sites run; the others, which Debian still ships, run
# the jobs of every kind on the basic profile (no cgroups), which admins
# without cgroups have (the tests pick them: cluster_test.go's basicTests).
# Prints each suite's time and ends with the fault matrix of every version.
# Exit status: non-zero when any version failed; every version runs
# regardless.
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
export PATH=/usr/local/go/bin:$PATH
# shellcheck source=../../packaging/lib/common.sh
. packaging/lib/common.sh
failed=()
times=()
testsuite_release=26.05
mkdir -p build && rm -f build/fault-matrix-*.txt
for v in "$@"; do
	profile=basic
	slurm_supported "$v" && profile=site
	echo "=== cluster tests on Slurm $v, $profile profile ==="
	started=$SECONDS
	test/slurm-docker/cluster up --slurm "$v" --profile "$profile" 2>&1 | tee "build/cluster-up-$v.log"
	if [ "${PIPESTATUS[0]}" -ne 0 ]; then
		# The cluster's last line names the step that failed and why.
		why=$(grep -a 'FAILED at step' "build/cluster-up-$v.log" | tail -n 1)
		failed+=("$v $profile (${why:-cluster up failed; build/cluster-up-$v.log})")
		times+=("Slurm $v $profile: cluster up failed after $((SECONDS - started)) s")
		continue
	fi
	up=$((SECONDS - started))
	# The tests choose what the profile runs (cluster_test.go: basicTests).
	go test -count=1 -timeout 30m -tags cluster ./test/cluster/ -slurm "$v" -profile "$profile" -v 2>&1 |
		tee "build/cluster-test-$v-$profile.log" | grep -vE '^=== (RUN|PAUSE|CONT)'
	rc=${PIPESTATUS[0]}
	[ "$rc" -eq 0 ] || failed+=("$v $profile")
	# The Python SDK's side of test/sdkinterop, in the node image of a
	# release whose nodes have the SDK (test/slurm-docker/python.sh).
	if slurm_supported "$v"; then
		test/sdkinterop/python.sh "$v" 2>&1 | tee "build/sdkinterop-python-$v.log" | grep -vE '^=== RUN' ||
			failed+=("$v Python SDK interop")
	fi
	# SchedMD's own tests of what a SPANK plugin may change (7.9 descriptors,
	# 7.11 a plugin beside ours, 7.15 signals, 116.40 the environment), with
	# the plugin off and on, on the newest release.
	if [ "$v" = "$testsuite_release" ]; then
		test/slurm-testsuite/run.sh --slurm "$v" || failed+=("$v SchedMD's testsuite")
	fi
	test/slurm-docker/cluster down --slurm "$v" >/dev/null 2>&1 || true
	times+=("Slurm $v $profile: $((SECONDS - started)) s (cluster up $up s, tests $((SECONDS - started - up)) s)")
	echo "=== Slurm $v, $profile profile: ${times[-1]#*: }"
done
printf '=== suite time: %s\n' "${times[@]}"
matrices=()
for v in "$@"; do
	[ -f "build/fault-matrix-$v.txt" ] && matrices+=("build/fault-matrix-$v.txt")
done
[ ${#matrices[@]} -eq 0 ] || test/cluster/matrix.sh "${matrices[@]}"
if [ ${#failed[@]} -gt 0 ]; then
	echo "cluster tests FAILED on:"
	printf '  %s\n' "${failed[@]}"
	exit 1
fi
echo "cluster tests passed on: $*"
