#!/usr/bin/env bash
# third-party-test.sh: third_party_archive (packaging/lib/host.sh) on
# every route, against an upstream made here and served from loopback
# (no GitHub): a mirror, the upstream address, the cache, the offline
# folder; an archive whose contents differ; a mirror that does not answer;
# then every archive of packaging/third-party.tsv that ../shared/third_party
# holds. Root (apt for curl and git). Prints one line a check, exits 1 on
# any failure.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=lib/host.sh
. "$top/packaging/lib/host.sh"
ensure_packages curl git python3
tmp=$(mktemp -d)
# The servers' pids are in files: serve runs in $(...), a subshell, whose
# variables the script never sees.
stop_servers() {
	local pidfile pid
	for pidfile in "$tmp"/server.*.pid; do
		[ -f "$pidfile" ] || continue
		pid=$(<"$pidfile")
		kill "$pid" 2>/dev/null || continue # stopped already
		while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
	done
}
cleanup() {
	stop_servers
	rm -rf "$tmp"
}
trap cleanup EXIT
fail=0
check() { # name, then a command that must succeed
	local name=$1
	shift
	if out=$("$@" 2>&1); then
		echo "ok: $name"
	else
		echo "FAIL: $name"
		sed 's/^/    /' <<<"$out"
		fail=1
	fi
}

# serve DIR prints the port of an HTTP server of DIR on 127.0.0.1.
serve() {
	python3 -m http.server --bind 127.0.0.1 --directory "$1" 0 >"$tmp/server.$#.log" 2>&1 &
	echo $! >"$tmp/server.$#.pid"
	local log=$tmp/server.$#.log i
	for ((i = 0; i < 50; i++)); do
		grep -qo 'port [0-9]*' "$log" 2>/dev/null && break
		sleep 0.1
	done
	grep -o 'port [0-9]*' "$log" | head -n 1 | cut -d' ' -f2
}

# An upstream project with a tag, and its archive made two ways: git
# archive's (the mirror's copy) and one with another top directory and
# another compression (as GitHub's download differs): other bytes, the
# same contents.
up=$tmp/upstream
git init -q "$up"
mkdir -p "$up/src"
printf 'int main(void) { return 0; }\n' >"$up/src/probe.c"
printf '#!/bin/sh\necho probe\n' >"$up/run.sh"
chmod +x "$up/run.sh"
git -C "$up" add -A
git -C "$up" -c user.name=t -c user.email=t@t commit -qm v1
git -C "$up" tag v1.0
tree=$(git -C "$up" rev-parse 'v1.0^{tree}')
mkdir -p "$tmp/mirror" "$tmp/github" "$tmp/bad"
git -C "$up" archive --prefix=probe-1.0/ v1.0 | gzip -n >"$tmp/mirror/probe-1.0.tar.gz"
git -C "$up" archive --prefix=probe-v1.0/ v1.0 | gzip -9 >"$tmp/github/probe-1.0.tar.gz"
# The same name, one file changed.
printf 'int main(void) { return 1; }\n' >"$up/src/probe.c"
git -C "$up" -c user.name=t -c user.email=t@t commit -qam changed
git -C "$up" archive --prefix=probe-1.0/ HEAD | gzip >"$tmp/bad/probe-1.0.tar.gz"

mirror=$(serve "$tmp/mirror")
github=$(serve "$tmp/github" x)
manifest=$tmp/third-party.tsv
printf 'probe-1.0.tar.gz\texample/probe\tv1.0\thttp://127.0.0.1:%s/probe-1.0.tar.gz\t%s\t-\n' "$github" "$tree" >"$manifest"
printf 'other-2.0.tar.gz\texample/other\tv2.0\thttp://127.0.0.1:%s/other-2.0.tar.gz\t%s\t-\n' "$github" "$tree" >>"$manifest"
export SPANK_OTEL_THIRD_PARTY_MANIFEST=$manifest
# The caller's routes, for the project's own manifest at the end (a clone
# with no ../shared, served by a mirror); the cases here set their own.
callers_folder=${SPANK_OTEL_THIRD_PARTY-} callers_mirror=${SPANK_OTEL_MIRROR-}
unset SPANK_OTEL_THIRD_PARTY SPANK_OTEL_MIRROR

from_mirror() {
	local got
	got=$(SPANK_OTEL_CACHE=$tmp/cache1 SPANK_OTEL_MIRROR=http://127.0.0.1:$mirror third_party_archive 'probe-*.tar.gz')
	[ "$got" = "$tmp/cache1/third-party/archives/probe-1.0.tar.gz" ] && cmp -s "$got" "$tmp/mirror/probe-1.0.tar.gz"
}
check "a missing archive is downloaded from SPANK_OTEL_MIRROR by its name, checked, cached" from_mirror

from_upstream() {
	local got
	got=$(SPANK_OTEL_CACHE=$tmp/cache2 third_party_archive 'probe-*.tar.gz')
	cmp -s "$got" "$tmp/github/probe-1.0.tar.gz"
}
check "without a mirror, from its upstream address: other bytes, the same contents, accepted" from_upstream

cached() {
	kill "${servers[@]}"
	wait "${servers[@]}" 2>/dev/null || :
	servers=()
	[ "$(SPANK_OTEL_CACHE=$tmp/cache1 third_party_archive 'probe-*.tar.gz')" = "$tmp/cache1/third-party/archives/probe-1.0.tar.gz" ]
}
check "a cached archive is used with no server" cached

offline() {
	[ "$(SPANK_OTEL_CACHE=$tmp/cache3 SPANK_OTEL_THIRD_PARTY=$tmp/mirror third_party_archive 'probe-*.tar.gz')" = "$tmp/mirror/probe-1.0.tar.gz" ]
}
check "SPANK_OTEL_THIRD_PARTY is the offline route" offline

refused() {
	local out
	if out=$(SPANK_OTEL_CACHE=$tmp/cache4 SPANK_OTEL_THIRD_PARTY=$tmp/bad third_party_archive 'probe-*.tar.gz' 2>&1); then
		return 1
	fi
	grep -q "$tmp/bad/probe-1.0.tar.gz is not example/probe v1.0: its contents have git tree [0-9a-f]*, the manifest .* says $tree" <<<"$out"
}
check "an archive whose contents changed is refused, and named" refused

unreachable() {
	local out start=$SECONDS
	if out=$(SPANK_OTEL_CACHE=$tmp/cache5 SPANK_OTEL_MIRROR=http://127.0.0.1:1 third_party_archive 'other-*.tar.gz' 2>&1); then
		return 1
	fi
	((SECONDS - start < 15)) || { echo "took $((SECONDS - start)) s"; return 1; }
	grep -q 'cannot download other-2.0.tar.gz from http://127.0.0.1:1/other-2.0.tar.gz' <<<"$out" &&
		grep -q '^  probe-1.0.tar.gz (example/probe v1.0): http' <<<"$out" &&
		grep -q '^  other-2.0.tar.gz (example/other v2.0): http' <<<"$out"
}
check "a mirror that does not answer fails in seconds, naming every archive needed and where to put it" unreachable

not_in_folder() {
	local out
	if out=$(SPANK_OTEL_CACHE=$tmp/cache6 SPANK_OTEL_THIRD_PARTY=$tmp/github SPANK_OTEL_MIRROR=http://127.0.0.1:1 third_party_archive 'other-*.tar.gz' 2>&1); then
		return 1
	fi
	grep -q "missing third-party archive $tmp/github/other-2.0.tar.gz (SPANK_OTEL_THIRD_PARTY is set, so nothing is downloaded)" <<<"$out"
}
check "with SPANK_OTEL_THIRD_PARTY set a missing archive is an error, not a download" not_in_folder

# The project's own manifest: every archive it names, wherever
# third_party_archive finds it (the caller's SPANK_OTEL_THIRD_PARTY,
# ../shared/third_party, the cache, or a download from the caller's
# SPANK_OTEL_MIRROR or upstream), has the contents the manifest says; one
# that cannot be had is a failure that names it.
unset SPANK_OTEL_THIRD_PARTY_MANIFEST
[ -z "$callers_folder" ] || export SPANK_OTEL_THIRD_PARTY=$callers_folder
[ -z "$callers_mirror" ] || export SPANK_OTEL_MIRROR=$callers_mirror
while IFS=$'\t' read -r file _; do
	[[ $file == \#* || -z $file ]] && continue
	check "packaging/third-party.tsv: $file has the contents it names" \
		bash -c '. "$1"; third_party_archive "$2" >/dev/null' _ "$top/packaging/lib/host.sh" "$file"
done <"$top/packaging/third-party.tsv"

# Nothing the test started outlives it.
no_server_left() {
	stop_servers
	! pgrep -f "http.server --bind 127.0.0.1 --directory $tmp/" >/dev/null
}
check "no HTTP server of the test is left running" no_server_left
exit "$fail"
