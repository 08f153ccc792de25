#!/usr/bin/env bash
# run.sh [--jobs N] VERSION...: the cluster tests on each Slurm version, each
# in a cluster of its own, several at once. The releases SchedMD supports
# (packaging/lib/common.sh: slurm_supported) run every test on the site
# profile (cgroups, CPU binding, memory enforced), what GPU sites run; the
# others, which Debian still ships, run the jobs of every kind on the basic
# profile (no cgroups), which admins without cgroups have (the tests pick
# them: cluster_test.go's basicTests).
#
# The images are built one release at a time (`cluster build`, niced: it
# competes for the CPU with the suites already running, whose tests time
# steps), and each release's suite (test/cluster/suite.sh: cluster up, the
# tests, cluster down) starts as soon as its images are built, at most N
# suites at once (default SPANK_OTEL_CLUSTER_JOBS, else 1). A site-profile
# suite takes 15 to 20 minutes and mostly waits (on Slurm, sleeps,
# timeouts), so two of them side by side on two cores take little more than
# the longer one. The longest suites start first: the site profile's
# releases, newest first, then the basic profile's.
#
# Each suite's output goes to its own logs in build/ (suite.sh); the
# terminal gets one line per event. At the end: each version's build, up
# and test times and result, and for a failure the step, its log and that
# log's tail; then the fault matrix of every version. An interrupt (INT,
# TERM, HUP) stops every build and suite and takes down every cluster this
# run started.
# Exit status: non-zero when any version failed; every version runs
# regardless.
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
export PATH=/usr/local/go/bin:$PATH
# shellcheck source=../../packaging/lib/common.sh
. packaging/lib/common.sh

jobs=${SPANK_OTEL_CLUSTER_JOBS:-1}
if [ "${1:-}" = --jobs ]; then
	jobs=${2:-}
	shift 2 || :
fi
[[ $jobs =~ ^[1-9][0-9]*$ ]] || die "--jobs wants a number of suites at once, got '$jobs'"
[ $# -gt 0 ] || die "usage: run.sh [--jobs N] VERSION..."
declare -A profile=()
for v in "$@"; do
	[ -z "${profile[$v]:-}" ] || die "Slurm $v named twice: one cluster per release"
	slurm_field "$v" suite >/dev/null || die "unknown Slurm release $v (packaging/releases.tsv)"
	profile[$v]=basic
	! slurm_supported "$v" || profile[$v]=site
done

# The order the builds and suites start in: site, newest first, then basic.
order=()
for p in site basic; do
	for ((i = $# ; i >= 1; i--)); do
		[ "${profile[${!i}]}" != "$p" ] || order+=("${!i}")
	done
done

mkdir -p build
for v in "$@"; do
	rm -f "build/fault-matrix-$v.txt" "build/cluster-result-$v" "build/cluster-build-$v.log"
done

declare -A build_time=() pid_of=() what_of=() started_at=() suite_rc=()
started=$SECONDS
suites_started=()

# spawn WHAT VERSION CMD...: runs CMD in the background in a session of its
# own (setsid; a background child of a script is no group leader, so setsid
# does not fork and $! is the group's id), so that an interrupt can end it
# with every process it started (go test's cluster.test, make, docker's
# clients) by its process group.
spawn() {
	local what=$1 v=$2
	shift 2
	setsid "$@" &
	pid_of[$!]=$v
	what_of[$!]=$what
	started_at[$!]=$SECONDS
}

start_build() {
	local v=$1
	echo "=== building the images of Slurm $v (build/cluster-build-$v.log)"
	# Niced: the suites already running time their steps.
	spawn build "$v" nice -n 10 test/slurm-docker/cluster build --slurm "$v" >"build/cluster-build-$v.log" 2>&1
}

start_suite() {
	local v=$1 deb
	echo "=== cluster tests on Slurm $v, ${profile[$v]} profile"
	suites_started+=("$v")
	# The plugin package the build made: cluster up would run make deb again
	# (dpkg-buildpackage, a minute of CPU) beside the other suites.
	deb=$(ls -t "$top"/build/deb/spank-otel_*+sl"${v//./}"_amd64.deb 2>/dev/null | head -n 1) || :
	SPANK_OTEL_DEB=${SPANK_OTEL_DEB:-$deb} spawn suite "$v" test/cluster/suite.sh "$v" "${profile[$v]}"
}

# stop_all ends every build and suite still running, then takes down the
# cluster of every suite this run started (not the others: another run's
# cluster of the same release and instance would be this run's too).
stopping=0
stop_all() {
	local sig=$1 pid v i
	((stopping == 0)) || return
	stopping=1
	trap '' INT TERM HUP
	echo "=== $sig: stopping the builds and suites that run"
	for pid in "${!pid_of[@]}"; do
		kill -TERM -- "-$pid" 2>/dev/null || :
	done
	# A process that ignores TERM gets KILL after 20 s.
	for ((i = 0; i < 40; i++)); do
		local left=0
		for pid in "${!pid_of[@]}"; do
			kill -0 -- "-$pid" 2>/dev/null && left=1
		done
		((left)) || break
		sleep 0.5
	done
	for pid in "${!pid_of[@]}"; do
		kill -KILL -- "-$pid" 2>/dev/null || :
	done
	wait
	for v in "${suites_started[@]}"; do
		echo "=== taking down the cluster of Slurm $v"
		test/slurm-docker/cluster down --slurm "$v" >/dev/null 2>&1 &
	done
	wait
	echo "=== interrupted after $((SECONDS - started)) s"
	exit 130
}
trap 'stop_all INT' INT
trap 'stop_all TERM' TERM
trap 'stop_all HUP' HUP

# The scheduler: one build at a time, in order; a built release's suite
# starts when fewer than $jobs run.
next=0
building=''
ready=()
running=0
while :; do
	if [ -z "$building" ] && ((next < ${#order[@]})); then
		building=${order[next]}
		next=$((next + 1))
		start_build "$building"
	fi
	while ((${#ready[@]} > 0 && running < jobs)); do
		start_suite "${ready[0]}"
		ready=("${ready[@]:1}")
		running=$((running + 1))
	done
	((${#pid_of[@]} > 0)) || break
	# wait -n returns on a trapped signal too; then pid is empty.
	pid=''
	wait -n -p pid
	rc=$?
	[ -n "$pid" ] || continue
	v=${pid_of[$pid]}
	what=${what_of[$pid]}
	took=$((SECONDS - ${started_at[$pid]}))
	unset "pid_of[$pid]" "what_of[$pid]" "started_at[$pid]"
	if [ "$what" = build ]; then
		building=''
		build_time[$v]=$took
		if [ "$rc" -eq 0 ]; then
			echo "=== Slurm $v: images built in $took s"
			ready+=("$v")
		else
			# The cluster's last line names the step that failed and why.
			why=$(grep -a 'FAILED at step' "build/cluster-build-$v.log" | tail -n 1) || :
			printf 'fail %s\t%s\t%s\n' "images (cluster build)" "build/cluster-build-$v.log" \
				"${why:-cluster build failed}" >"build/cluster-result-$v"
			suite_rc[$v]=1
			echo "=== Slurm $v: building the images FAILED after $took s"
		fi
	else
		running=$((running - 1))
		suite_rc[$v]=$rc
		echo "=== Slurm $v, ${profile[$v]} profile: $([ "$rc" -eq 0 ] && echo passed || echo FAILED) after $took s"
	fi
done
trap - INT TERM HUP

# The summary, in the order the versions were given.
failed=()
echo
for v in "$@"; do
	up='' tests=''
	touch "build/cluster-result-$v"
	while read -r key val; do
		case $key in
		up) up=$val ;;
		tests) tests=$val ;;
		esac
	done <"build/cluster-result-$v"
	# A suite that ended without saying why (killed, or suite.sh itself
	# failed) is a failure of its own.
	if [ "${suite_rc[$v]}" -ne 0 ] && ! grep -q '^fail ' "build/cluster-result-$v"; then
		printf 'fail %s\t%s\t%s\n' "suite" "build/cluster-up-$v.log" \
			"test/cluster/suite.sh exited ${suite_rc[$v]}" >>"build/cluster-result-$v"
	fi
	line="Slurm $v ${profile[$v]}: images ${build_time[$v]} s"
	[ -z "$up" ] || line+=", cluster up $up s"
	[ -z "$tests" ] || line+=", tests $tests s"
	if [ "${suite_rc[$v]}" -eq 0 ]; then
		echo "=== suite time: $line: PASS"
	else
		echo "=== suite time: $line: FAIL"
		failed+=("$v")
	fi
done
echo "=== cluster tests took $((SECONDS - started)) s in all ($jobs suites at once at most)"
matrices=()
for v in "$@"; do
	[ -f "build/fault-matrix-$v.txt" ] && matrices+=("build/fault-matrix-$v.txt")
done
[ ${#matrices[@]} -eq 0 ] || test/cluster/matrix.sh "${matrices[@]}"
if [ ${#failed[@]} -gt 0 ]; then
	echo
	echo "cluster tests FAILED on:"
	for v in "${failed[@]}"; do
		while IFS=$'\t' read -r step log why; do
			printf '  %s %s: %s FAILED: %s\n' "$v" "${profile[$v]}" "${step#fail }" "$why"
			printf '    log: %s; its last lines:\n' "$log"
			tail -n 15 "$log" | sed 's/^/      /'
		done < <(grep '^fail ' "build/cluster-result-$v")
	done
	exit 1
fi
echo "cluster tests passed on: $*"
