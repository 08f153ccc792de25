#!/usr/bin/env bash
# build.sh OUT: Jaeger v2 (the version this module's go.mod pins) and the
# UI it serves, as OUT/jaeger (a static binary) and OUT/ui (assets_path).
#
# A cold build takes about 5 minutes on 2 cores, so the result is kept in
# $SPANK_OTEL_CACHE/jaeger-KEY (default /var/cache/spank-otel), KEY being a
# hash of this module, the UI unpacker and the Go version: a fresh clone
# copies it from there and rebuilds only when the module changes.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: build.sh OUT}
cache=${SPANK_OTEL_CACHE:-/var/cache/spank-otel}
go=${GO:-go}

key=$( {
	"$go" version
	cat "$here/go.mod" "$here/go.sum" "$here/uiassets/main.go" "$here/build.sh"
} | sha256sum | cut -c1-16)
dir=$cache/jaeger-$key
mkdir -p "$cache"
# One build at a time: other checkouts on this machine share the cache.
exec 9>"$cache/.lock-jaeger"
flock 9
if [[ ! -x $dir/jaeger || ! -f $dir/ui/index.html ]]; then
	echo "build.sh: building Jaeger into $dir (a cold build takes minutes)" >&2
	tmp=$(mktemp -d "$cache/jaeger-build.XXXXXX")
	trap 'rm -rf "$tmp"' EXIT
	# Stopped (make test's background build, test/prebuild.sh): the clean-up too.
	trap 'exit 143' TERM INT HUP
	start=$SECONDS
	(
		cd "$here"
		CGO_ENABLED=0 "$go" build -trimpath -buildvcs=false -ldflags='-s -w' \
			-o "$tmp/jaeger" github.com/jaegertracing/jaeger/cmd/jaeger
		"$go" run ./uiassets "$tmp/ui"
	)
	echo "build.sh: Jaeger built in $((SECONDS - start))s" >&2
	rm -rf "$dir"
	mv "$tmp" "$dir"
	chmod 0755 "$dir"
	trap - EXIT TERM INT HUP
fi
mkdir -p "$out"
rm -rf "$out/ui"
cp -a "$dir/jaeger" "$dir/ui" "$out/"
