#!/usr/bin/env bash
# build-pyxis.sh ARCHIVE SLURM_INCLUDE OUT.tar: build NVIDIA's pyxis SPANK
# plugin from its release archive (../shared/third_party/pyxis-*.tar.gz, a
# `git archive` of the upstream tag) against one Slurm release's headers
# (SLURM_INCLUDE/slurm/spank.h: Slurm loads a SPANK plugin only when it was
# built for its own major.minor), and pack what `make install` puts under /
# into OUT.tar: /usr/local/lib/slurm/spank_pyxis.so and
# /usr/local/share/pyxis/pyxis.conf, the plugstack line that enables it.
# No workaround is needed: pyxis has no submodules and needs only libc.
set -euo pipefail

usage() {
	echo "usage: build-pyxis.sh ARCHIVE SLURM_INCLUDE OUT.tar" >&2
	exit 2
}
(($# == 3)) || usage
archive=$1 include=$2 out=$3
[[ -f $archive ]] || { echo "build-pyxis.sh: $archive does not exist" >&2; exit 1; }
[[ -f $include/slurm/spank.h ]] || { echo "build-pyxis.sh: no slurm/spank.h under $include" >&2; exit 1; }
include=$(cd "$include" && pwd)

tmp=$(mktemp -d "${TMPDIR:-/tmp}/pyxis-build.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
tar -C "$tmp" -xzf "$archive"
src=$(find "$tmp" -mindepth 1 -maxdepth 1 -type d -name 'pyxis-*' | head -n1)
[[ -n $src && -f $src/Makefile ]] || { echo "build-pyxis.sh: $archive holds no pyxis-*/Makefile" >&2; exit 1; }

# CPPFLAGS through the environment: pyxis's Makefile appends it to its own
# (_GNU_SOURCE, the version), which a command-line value would replace.
CPPFLAGS="-I$include" make -C "$src" -s prefix=/usr/local DESTDIR="$tmp/root" install >&2
so=$tmp/root/usr/local/lib/slurm/spank_pyxis.so
[[ -f $so ]] || { echo "build-pyxis.sh: make install left no $so" >&2; exit 1; }
tar -C "$tmp/root" --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -cf "$out.tmp" .
mv "$out.tmp" "$out"
