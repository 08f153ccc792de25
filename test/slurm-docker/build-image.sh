#!/usr/bin/env bash
# build-image.sh DOCKER_IMAGE OUT.sqsh SPANK_OTEL OTEL_PROBE_GO OTEL_PROBE_JS_TAR
#
# The squashfs image the cluster's container jobs run in (pyxis's
# --container-image=/srv/images/base.sqsh), made offline with mksquashfs
# from the file system of DOCKER_IMAGE: the Debian root the cluster
# bootstraps for a Slurm release, with Debian's nodejs (backend.sh). It
# adds what the tests look for:
#   /etc/spank-otel-test-image   a marker: the task runs inside the image
#   /etc/environment             OTEL_RESOURCE_ATTRIBUTES=image.attr=from-image,
#                                which enroot puts in the container's
#                                environment and pyxis imports into the task
#   /usr/bin/spank-otel          the CLI, where the package installs it
#   /usr/local/bin/otel-probe-go, otel-probe-js   the probes, where the nodes
#                                have them (srun resolves a command's path
#                                on the submitting host)
# and leaves out the cluster's munge key and Docker's device nodes.
set -euo pipefail

usage() {
	echo "usage: build-image.sh DOCKER_IMAGE OUT.sqsh SPANK_OTEL OTEL_PROBE_GO OTEL_PROBE_JS_TAR" >&2
	exit 2
}
(($# == 5)) || usage
from=$1 out=$2 cli=$3 probe_go=$4 probe_js=$5
for f in "$cli" "$probe_go" "$probe_js"; do
	[[ -f $f ]] || { echo "build-image.sh: $f does not exist" >&2; exit 1; }
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/spank-otel-image.XXXXXX")
cid=''
cleanup() {
	[[ -z $cid ]] || docker rm -f "$cid" >/dev/null 2>&1 || :
	rm -rf "$tmp"
}
trap cleanup EXIT
root=$tmp/root
mkdir "$root"
cid=$(docker create "$from" /bin/true)
docker export "$cid" | tar -C "$root" --numeric-owner -xpf -
# Docker's own files (the container's hosts, hostname and resolv.conf are
# empty placeholders; enroot mounts the node's) and the cluster's secret.
rm -f "$root/.dockerenv" "$root/etc/munge/munge.key"
# Mount points only: enroot mounts the node's /dev, /proc and /sys (an
# unprivileged unsquashfs cannot create device nodes anyway).
find "$root/dev" "$root/proc" "$root/sys" -mindepth 1 -delete

printf 'spank-otel test image: Debian %s, %s\n' "$(cat "$root/etc/debian_version")" "$from" \
	>"$root/etc/spank-otel-test-image"
printf '%s\n' 'OTEL_RESOURCE_ATTRIBUTES=image.attr=from-image' >>"$root/etc/environment"
install -m 0755 "$cli" "$root/usr/bin/spank-otel"
install -m 0755 "$probe_go" "$root/usr/local/bin/otel-probe-go"
js=/usr/lib/spank-otel-test/otel-probe-js
install -d -m 0755 "$root$js"
tar -C "$root$js" --no-same-owner -xf "$probe_js"
printf '#!/bin/sh\nexec node %s/probe.js "$@"\n' "$js" >"$root/usr/local/bin/otel-probe-js"
chmod 0755 "$root/usr/local/bin/otel-probe-js"

# lz4: the fastest to unpack, which every container step does (pyxis's
# `enroot create` unsquashes the image per step and node).
mksquashfs "$root" "$out.tmp" -noappend -comp lz4 -quiet -processors "$(nproc)" >&2
mv "$out.tmp" "$out"
