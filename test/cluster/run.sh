#!/usr/bin/env bash
# run.sh VERSION...: the cluster tests on each Slurm version in turn: bring
# the cluster up (building what is missing), run the tests, take it down.
# Ends with the fault matrix of every version. Exit status: non-zero when any
# version failed; every version runs regardless.
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
export PATH=/usr/local/go/bin:$PATH
failed=()
mkdir -p build && rm -f build/fault-matrix-*.txt
for v in "$@"; do
	echo "=== cluster tests on Slurm $v ==="
	if ! test/slurm-docker/cluster up --slurm "$v"; then
		failed+=("$v (cluster up)")
		continue
	fi
	go test -count=1 -timeout 30m -tags cluster ./test/cluster/ -slurm "$v" -v 2>&1 |
		tee "build/cluster-test-$v.log" | grep -vE '^=== (RUN|PAUSE|CONT)'
	rc=${PIPESTATUS[0]}
	[ "$rc" -eq 0 ] || failed+=("$v")
	test/slurm-docker/cluster down --slurm "$v" >/dev/null 2>&1 || true
done
matrices=()
for v in "$@"; do
	[ -f "build/fault-matrix-$v.txt" ] && matrices+=("build/fault-matrix-$v.txt")
done
[ ${#matrices[@]} -eq 0 ] || test/cluster/matrix.sh "${matrices[@]}"
if [ ${#failed[@]} -gt 0 ]; then
	echo "cluster tests FAILED on: ${failed[*]}"
	exit 1
fi
echo "cluster tests passed on: $*"
