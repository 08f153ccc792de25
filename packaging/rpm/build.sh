#!/bin/bash
# Build the binary RPM of spank-otel for one Slurm release, on Debian, with
# Debian's rpmbuild (apt package "rpm").
#
#   packaging/rpm/build.sh --slurm 24.11 [--version 0.1.0] [--release 1]
#       [--topdir build/rpm] [--src DIR] [--headers DIR | --include DIR]
#       [--from-head] [--vendor] [--srpm]
#
# 1. Fetches the Slurm headers of that release (packaging/slurm-headers.sh
#    into build/slurm-headers/<slurm>), or uses --headers DIR, a directory
#    holding usr/include/slurm/spank.h, or --include DIR, one holding
#    slurm/spank.h (a site's installed slurm-devel, say: /usr/include).
#    Headers of another major.minor than --slurm are refused.
# 2. Makes the source tarball <topdir>/SOURCES/slurm-spank-otel-<version>.tar.gz
#    from the work tree of --src (default: this repository), tracked and
#    untracked files alike but nothing .gitignore excludes, or with
#    --from-head from the last commit (git archive HEAD). --vendor adds the
#    Go modules (go mod vendor in the copy), for builders without network.
# 3. Runs rpmbuild -bb (-ba with --srpm) on packaging/rpm/slurm-spank-otel.spec
#    with _topdir <topdir>, slurm_version <slurm> and slurm_include pointing
#    at the Debian headers. --nodeps: the spec's BuildRequires (slurm-devel,
#    golang, gcc, make) are RPM names that Debian's rpm database does not
#    have; the same tools come from Debian packages here. The Packager tag
#    is SPANK_OTEL_MAINTAINER, else the project's address.
#
# Prints the path of the binary RPM, <topdir>/RPMS/x86_64/
# slurm-spank-otel-<version>-<release>.sl<NNNN>.x86_64.rpm.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
# shellcheck source=packaging/lib/common.sh
. "$here/../lib/common.sh"

name="slurm-spank-otel"
slurm="" version=${VERSION:-0.1.0} release=1 topdir=$repo/build/rpm src=$repo headers="" include=""
from_head=0 vendor=0 srpm=0
parse_options "slurm: version: release: topdir: src: headers: include: from-head vendor srpm" "$@"
[ -n "$slurm" ] && [ ${#args[@]} -eq 0 ] || script_usage
check_slurm_version "$slurm"
[[ "$version" =~ ^[0-9][A-Za-z0-9.+~^]*$ ]] || die "--version '$version' is not an RPM version"
[[ "$release" =~ ^[0-9][A-Za-z0-9.+~^]*$ ]] || die "--release '$release' is not an RPM release"
need rpmbuild tar gzip make
src=$(cd "$src" && pwd)
mkdir -p "$topdir"
topdir=$(cd "$topdir" && pwd)
spec=$src/packaging/rpm/$name.spec
[ -f "$spec" ] || die "$spec does not exist: --src must be a spank-otel source tree"
for f in LICENSE README.md docs/reference.md packaging/plugstack.conf.example.in; do
	[ -f "$src/$f" ] || die "$src/$f does not exist; the RPM ships or uses it"
done

# The spec's %build and %install run these targets; say so now rather than in rpmbuild's
# log. make -p prints the rule database without building anything.
[ -f "$src/Makefile" ] || die "$src/Makefile does not exist; the spec runs make lib cli shim man, make install and make check-artifacts"
targets=$({ make -C "$src" -p -q .spank-otel-probe 2>/dev/null || true; } | sed -n 's/^\([A-Za-z0-9_.-]*\):.*/\1/p')
for target in lib cli shim man install check-artifacts; do
	grep -q -x -F "$target" <<<"$targets" ||
		die "$src/Makefile has no '$target' target, which the spec runs (make lib cli shim man, make install, make check-artifacts)"
done

# 1. Headers.
[ -z "$headers" ] || [ -z "$include" ] || die "--headers and --include name the same thing; give one"
if [ -n "$headers" ]; then
	include=$headers/usr/include
elif [ -z "$include" ]; then
	include=$("$repo/packaging/slurm-headers.sh" "$slurm" "$repo/build/slurm-headers/$slurm")
fi
include=$(cd "$include" && pwd)
check_headers "$slurm" "$include"

# 2. Source tarball.
epoch=$(source_date_epoch "$src")
tmp=$(mktemp -d "${TMPDIR:-/tmp}/spank-otel-rpm.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
prefix=$name-$version
stage=$tmp/$prefix
stage_source "$src" "$stage" "$from_head"
if [ $vendor -eq 1 ]; then
	need go
	(cd "$stage" && go mod vendor) || die "go mod vendor failed"
fi
mkdir -p "$topdir/SOURCES"
tarball=$topdir/SOURCES/$prefix.tar.gz
tar -C "$tmp" --sort=name --mtime="@$epoch" --owner=0 --group=0 --numeric-owner -c "$prefix" |
	gzip -9n >"$tarball"
note "source $tarball"

# 3. rpmbuild.
mode=-bb
[ $srpm -eq 1 ] && mode=-ba
log=$topdir/build-$slurm.log
note "rpmbuild $mode for Slurm $slurm (log: $log)"
# The spec's own make must not inherit the variables of a make that runs
# this script (make rpm BUILD=...): MAKEFLAGS would carry them into %build.
if ! env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL SOURCE_DATE_EPOCH="$epoch" rpmbuild "$mode" --nodeps \
	--define "_topdir $topdir" \
	--define "slurm_version $slurm" \
	--define "slurm_include $include" \
	--define "pkgver $version" \
	--define "pkgrel $release" \
	--define "packager $(packager)" \
	--define "use_source_date_epoch_as_buildtime 1" \
	--define "clamp_mtime_to_source_date_epoch 1" \
	"$stage/packaging/rpm/$name.spec" >"$log" 2>&1; then
	tail -n 40 "$log" >&2
	die "rpmbuild failed; the whole log is $log"
fi
rpm=$(sed -n 's/^Wrote: \(.*\/RPMS\/.*\.rpm\)$/\1/p' "$log" | tail -n 1)
[ -f "$rpm" ] || die "rpmbuild wrote no binary RPM (see $log)"
sed -n 's/^Wrote: \(.*\/SRPMS\/.*\.rpm\)$/\1/p' "$log" | while read -r s; do note "source RPM $s"; done
note "built $rpm"
echo "$rpm"
