#!/usr/bin/env bash
# suite.sh VERSION PROFILE: one Slurm release's cluster suite, as
# test/cluster/run.sh runs it beside other releases' (each in a cluster of
# its own: the cluster's containers, network and volumes are named by
# release and SPANK_OTEL_INSTANCE). Brings the cluster up (run.sh has built
# its images), runs the tests of PROFILE, the Python SDK's interop on the
# releases whose nodes have it and SchedMD's tests on the newest release,
# and takes the cluster down.
#
# Its output goes to logs in build/, never to the terminal, which several
# suites share: build/cluster-up-VERSION.log, build/cluster-test-VERSION-
# PROFILE.log, build/sdkinterop-python-VERSION.log and
# build/slurm-testsuite-VERSION.log. On stdout it prints one line per event
# (each test's result, each step's end), prefixed with the release. What
# run.sh's summary needs is in build/cluster-result-VERSION, which it reads
# once the suite has ended:
#   up SECONDS            the cluster came up (absent when it did not)
#   tests SECONDS         the tests, interop and SchedMD's tests took
#   fail STEP<TAB>LOG<TAB>WHY   a step failed (one line per step)
# Exit status: non-zero when any step failed.
set -euo pipefail
ver=${1:?usage: suite.sh VERSION PROFILE}
profile=${2:?usage: suite.sh VERSION PROFILE}
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
export PATH=/usr/local/go/bin:$PATH
# shellcheck source=../../packaging/lib/common.sh
. packaging/lib/common.sh
testsuite_release=26.05
result=build/cluster-result-$ver
: >"$result"
started=$SECONDS
failed=0

say() { printf '[%s] %s\n' "$ver" "$*"; }

# fail STEP LOG WHY records a failed step for run.sh's summary.
fail() {
	printf 'fail %s\t%s\t%s\n' "$1" "$2" "$3" >>"$result"
	say "FAILED: $1 ($2)"
	failed=1
}

down() {
	test/slurm-docker/cluster down --slurm "$ver" >/dev/null 2>&1 || true
}

up_log=build/cluster-up-$ver.log
if ! test/slurm-docker/cluster up --slurm "$ver" --profile "$profile" >"$up_log" 2>&1; then
	# The cluster's last line names the step that failed and why.
	why=$(grep -a 'FAILED at step' "$up_log" | tail -n 1) || :
	fail "cluster up" "$up_log" "${why:-cluster up failed after $((SECONDS - started)) s}"
	down
	exit 1
fi
up=$((SECONDS - started))
echo "up $up" >>"$result"
say "cluster up in $up s"

# The tests choose what the profile and the release run (cluster_test.go:
# basicTests, releaseIndependent, printed as "=== release" lines). Each
# top-level test's result goes to the terminal, the rest to the log. The
# timeout only guards against a hang: a site suite takes 17 to 19 minutes
# alone and, beside another on two loaded cores, went past 30.
test_log=build/cluster-test-$ver-$profile.log
go test -count=1 -timeout 60m -tags cluster ./test/cluster/ -slurm "$ver" -profile "$profile" -v >"$test_log" 2>&1 &
gotest=$!
# tail follows the log while go test writes it, and ends with it.
tail -n +1 -f --pid="$gotest" "$test_log" 2>/dev/null |
	grep --line-buffered -E '^(--- (PASS|FAIL|SKIP)|=== release|FAIL|ok|panic:)' | sed -u "s/^/[$ver] /" || :
if ! wait "$gotest"; then
	# The failed tests by name, and go test's own timeout with the test it
	# stopped in.
	why=$(grep -a -E '^--- FAIL' "$test_log" | sed 's/^--- FAIL: //; s/ (.*//' | paste -sd' ') || :
	if grep -aq '^panic: test timed out' "$test_log"; then
		why+="${why:+; }$(grep -a '^panic: test timed out' "$test_log" | head -n 1 | sed 's/^panic: //') in $(grep -a -A2 '^panic: test timed out' "$test_log" | sed -n '3{s/^[[:space:]]*//;p}')"
	fi
	fail "tests" "$test_log" "${why:-go test failed}"
fi

# The Python SDK's side of test/sdkinterop, in the node image of a release
# whose nodes have the SDK (test/slurm-docker/python.sh).
if slurm_supported "$ver"; then
	py_log=build/sdkinterop-python-$ver.log
	if test/sdkinterop/python.sh "$ver" >"$py_log" 2>&1; then
		say "Python SDK interop passed"
	else
		fail "Python SDK interop" "$py_log" "TestPythonSDKAgrees failed"
	fi
fi
# SchedMD's own tests of what a SPANK plugin may change (7.9 descriptors,
# 7.11 a plugin beside ours, 7.15 signals, 116.40 the environment), with the
# plugin off and on, on the newest release.
if [ "$ver" = "$testsuite_release" ]; then
	ts_log=build/slurm-testsuite-$ver.log
	if test/slurm-testsuite/run.sh --slurm "$ver" >"$ts_log" 2>&1; then
		say "SchedMD's tests passed"
	else
		fail "SchedMD's testsuite" "$ts_log" "$(tail -n 1 "$ts_log")"
	fi
fi
down
echo "tests $((SECONDS - started - up))" >>"$result"
exit "$failed"
