#!/usr/bin/env bash
# prebuild.sh: what make test's later suites need and takes minutes to
# build cold, built in the background from the start of the run, at nice
# 19, while the first suites use the cores: Slurm from source (package-test
# needs its headers and packages), the first cluster's image layers and
# Jaeger (cluster-test). Each product is what its own command leaves in its
# own cache; prebuild.sh only starts those commands early.
#
#   prebuild.sh start LANE...      start the lanes in the background and
#                                  return; a lane is products joined by +,
#                                  built one after the other (the lanes run
#                                  side by side)
#   prebuild.sh wait PRODUCT...    wait until each product is built; fail if
#                                  its build failed, ended without a result
#                                  or takes longer than the deadline
#   prebuild.sh stop               end what start started
#
# Products: slurm-source:V (packaging/slurm-source.sh V), layers:V
# (`cluster layers --slurm V`), jaeger (make jaeger).
#
# The state is in $SPANK_OTEL_PREBUILD (make test sets it to
# build/prebuild): per product a .log, and a .rc once it has ended. Without
# it, or for a product start was not given, wait returns at once: the
# caller builds the product itself, as without prebuild.sh. The deadline of
# wait is SPANK_OTEL_PREBUILD_TIMEOUT seconds (1800) from its start.
#
# Nothing started here outlives the caller: start runs the lanes in a
# session of their own, whose leader ends the session when the process
# that called start (make test's shell) is gone; stop, which make test runs
# on exit, ends it at once. An interrupted `cluster` removes its build
# containers.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
export PATH=/usr/local/go/bin:$PATH
# shellcheck source=packaging/lib/common.sh
. packaging/lib/common.sh

dir=${SPANK_OTEL_PREBUILD:-}

# file PRODUCT: the state file prefix of PRODUCT.
file() { echo "$dir/${1//:/-}"; }

# build PRODUCT runs PRODUCT's own build command.
build() {
	case $1 in
	slurm-source:*) packaging/slurm-source.sh "${1#*:}" ;;
	layers:*) test/slurm-docker/cluster layers --slurm "${1#*:}" ;;
	jaeger) make -s jaeger ;;
	*) die "unknown product '$1' (slurm-source:V, layers:V, jaeger)" ;;
	esac
}

# lane P1+P2+... builds the products in turn; after a failure the rest
# are not built, and say why.
lane() {
	local p failed='' t0 rc products
	IFS=+ read -ra products <<<"$1"
	for p in "${products[@]}"; do
		if [ -n "$failed" ]; then
			echo "not built: $failed failed before it in its lane" >"$(file "$p").log"
			echo 1 >"$(file "$p").rc"
			continue
		fi
		t0=$SECONDS
		rc=0
		build "$p" >"$(file "$p").log" 2>&1 || rc=$?
		echo "prebuild.sh: $p ended with status $rc after $((SECONDS - t0)) s" >>"$(file "$p").log"
		echo "$((SECONDS - t0))" >"$(file "$p").seconds"
		echo "$rc" >"$(file "$p").rc"
		[ "$rc" -eq 0 ] || failed=$p
	done
}

# end_session ends every process of the session, the caller last.
end_session() {
	trap - TERM INT HUP
	kill -TERM 0 2>/dev/null
	exit 143
}

# leader WATCH LANE... is the session leader: it runs the lanes and ends
# the session when they are done or WATCH is gone.
leader() {
	local watch=$1 l
	shift
	trap end_session TERM INT HUP
	for l in "$@"; do
		lane "$l" &
	done
	while kill -0 "$watch" 2>/dev/null; do
		# Every lane done: nothing left to watch.
		[ -n "$(jobs -rp)" ] || exit 0
		sleep 2
	done
	echo "prebuild.sh: process $watch is gone: ending the background builds" >&2
	end_session
}

start() {
	local l p products
	[ -n "$dir" ] || die "start needs SPANK_OTEL_PREBUILD, the directory of its state"
	[ $# -gt 0 ] || die "usage: prebuild.sh start LANE..."
	stop
	rm -rf "$dir"
	mkdir -p "$dir"
	for l in "$@"; do
		IFS=+ read -ra products <<<"$l"
		for p in "${products[@]}"; do
			build_known "$p"
			: >"$(file "$p").queued"
		done
	done
	# setsid: a session (and process group) of its own, which stop ends as
	# a whole; a background child is no group leader, so setsid (exec'd by
	# env) does not fork and $! is the group's id.
	# Without make test's make flags (a jobserver): the makes the builds
	# run are not its children.
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL \
		setsid nice -n 19 "$top/test/prebuild.sh" leader "$PPID" "$@" >"$dir/leader.log" 2>&1 </dev/null &
	echo "$!" >"$dir/pgid"
	echo "prebuild.sh: building in the background at nice 19: $* (logs: $dir)"
}

# build_known fails for a product build does not know, before anything starts.
build_known() {
	case $1 in
	slurm-source:* | layers:*) check_slurm_version "${1#*:}" ;;
	jaeger) ;;
	*) die "unknown product '$1' (slurm-source:V, layers:V, jaeger)" ;;
	esac
}

stop() {
	local pgid i
	[ -n "$dir" ] && [ -f "$dir/pgid" ] || return 0
	pgid=$(cat "$dir/pgid")
	rm -f "$dir/pgid"
	kill -0 -- "-$pgid" 2>/dev/null || return 0
	echo "prebuild.sh: stopping the background builds"
	kill -TERM -- "-$pgid" 2>/dev/null || :
	# A process that ignores TERM gets KILL after 20 s.
	for ((i = 0; i < 40; i++)); do
		kill -0 -- "-$pgid" 2>/dev/null || return 0
		sleep 0.5
	done
	kill -KILL -- "-$pgid" 2>/dev/null || :
}

wait_for() {
	local p f pgid timeout=${SPANK_OTEL_PREBUILD_TIMEOUT:-1800} t0=$SECONDS deadline
	[ -n "$dir" ] || return 0
	deadline=$((SECONDS + timeout))
	pgid=$(cat "$dir/pgid" 2>/dev/null) || pgid=''
	for p in "$@"; do
		f=$(file "$p")
		[ -e "$f.queued" ] || continue
		[ -e "$f.rc" ] || echo "prebuild.sh: waiting for $p, built in the background (log: $f.log)"
		while [ ! -e "$f.rc" ]; do
			if [ -z "$pgid" ] || ! kill -0 -- "-$pgid" 2>/dev/null; then
				# The lane may have written the result as it ended.
				[ -e "$f.rc" ] && break
				die "the background build of $p ended without a result (stopped or killed); its log: $f.log"
			fi
			((SECONDS < deadline)) ||
				die "the background build of $p did not end within $timeout s (SPANK_OTEL_PREBUILD_TIMEOUT); its log: $f.log"
			sleep 2
		done
		if [ "$(cat "$f.rc")" != 0 ]; then
			tail -n 20 "$f.log" | sed 's/^/  /' >&2
			die "the background build of $p FAILED (exit $(cat "$f.rc")); its log: $f.log"
		fi
		echo "prebuild.sh: $p built in the background in $(cat "$f.seconds" 2>/dev/null || echo '?') s; waited $((SECONDS - t0)) s for it"
	done
}

cmd=${1:-}
shift || :
case $cmd in
start) start "$@" ;;
wait) wait_for "$@" ;;
stop) stop ;;
leader) leader "$@" ;;
*) die "usage: prebuild.sh start LANE... | wait PRODUCT... | stop" ;;
esac
