#!/bin/bash
# Fetch the Slurm development headers of one Slurm release.
#
#   packaging/slurm-headers.sh [--suite SUITE] [--package NAME] [--refresh] VERSION DESTDIR
#
# VERSION is a Slurm major.minor (22.05, 24.11, 25.11, 26.05). Releases a
# Debian suite ships come from that suite (22.05 bookworm, 24.11 trixie,
# 26.05 sid; --suite for another), fetched with apt-get download through a
# private apt configuration, so the host's sources, lists and cache stay as
# they are. The mirror is the one the host's apt sources already name.
# Releases no suite ships (25.11) come from the slurm-smd-dev package that
# packaging/slurm-source.sh builds from SchedMD's source archive (root, and
# minutes the first time).
#
# Afterwards DESTDIR holds:
#   usr/include/slurm/*.h   the package's files (dpkg-deb -x)
#   VERSION                 the Debian version of the package, e.g. 24.11.5-4+deb13u1
#   SLURM_VERSION           the Slurm version of the headers, e.g. 24.11.5
#   PACKAGE, SOURCE, SUITE  the package, its source package and its suite
# and the include directory (DESTDIR/usr/include) is printed on stdout.
#
# A second run with the same arguments only re-checks DESTDIR. --refresh
# fetches again (to pick up a newer Debian revision).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=packaging/lib/common.sh
. "$here/lib/common.sh"

suite="" package=libslurm-dev refresh=0
parse_options "suite: package: refresh" "$@"
[ ${#args[@]} -eq 2 ] || script_usage
version=${args[0]} dest=${args[1]}
check_slurm_version "$version"
from_source=""
if [ -z "$suite" ]; then
	if suite=$(slurm_suite "$version"); then
		:
	elif suite=$(slurm_source_suite "$version"); then
		from_source=1
		package=slurm-smd-dev
	else
		die "no Debian suite known for Slurm $version; name one with --suite"
	fi
fi
mkdir -p "$(dirname "$dest")"
dest=$(cd "$(dirname "$dest")" && pwd)/$(basename "$dest")

# verify DIR fails unless DIR has spank.h of the requested major.minor.
verify() {
	local dir=$1 hv
	[ -f "$dir/usr/include/slurm/spank.h" ] || die "$package from $suite has no usr/include/slurm/spank.h"
	hv=$(header_version "$dir/usr/include") || die "cannot read SLURM_VERSION_NUMBER from $dir/usr/include/slurm/slurm_version.h"
	[ "${hv%.*}" = "$version" ] ||
		die "$package ($suite) has Slurm $hv headers ($(cat "$dir/VERSION" 2>/dev/null)), not $version"
	echo "$hv"
}

stamp="version=$version suite=$suite package=$package${from_source:+ source}"
# One fetch per directory at a time: make test's background builds
# (test/prebuild.sh) ask for the headers a suite may be compiling against,
# and a second fetch would replace them under it. The second caller finds
# them made (at most 1800 s of waiting: a source build takes minutes).
exec 8>"$(dirname "$dest")/.lock-$(basename "$dest")"
flock -w 1800 8 || die "another fetch of $dest held its lock for 1800 s"
if [ $refresh -eq 0 ] && [ -f "$dest/.stamp" ] && [ "$(cat "$dest/.stamp")" = "$stamp" ] && [ -s "$dest/VERSION" ]; then
	verify "$dest" >/dev/null
	echo "$dest/usr/include"
	exit 0
fi

# Never delete a directory this script did not make.
if [ -e "$dest" ] && [ ! -f "$dest/.stamp" ] && [ -n "$(ls -A "$dest" 2>/dev/null)" ]; then
	die "$dest exists and was not made by this script; remove it or choose another directory"
fi

need dpkg-deb
tmp=$(mktemp -d "${TMPDIR:-/tmp}/slurm-headers.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/dl"
if [ -n "$from_source" ]; then
	built=$("$here/slurm-source.sh" "$version") || die "building Slurm $version from source failed"
	cp "$built"/slurm-smd-dev_*.deb "$tmp/dl/"
else
	need apt-get
	debapt_init "$suite" "$tmp/apt"
	note "downloading $package from Debian $suite"
	apt-get "${DEBAPT[@]}" -q update >"$tmp/update.log" 2>&1 || {
		cat "$tmp/update.log" >&2
		die "apt-get update for $suite failed"
	}
	(cd "$tmp/dl" && apt-get "${DEBAPT[@]}" -q download "$package") >"$tmp/download.log" 2>&1 || {
		cat "$tmp/download.log" >&2
		die "apt-get download $package from $suite failed"
	}
fi
deb=$(ls "$tmp"/dl/*.deb)
# Unpack beside DESTDIR so that putting it in place is a rename.
stage=$(mktemp -d "$(dirname "$dest")/.slurm-headers.XXXXXX")
trap 'rm -rf "$tmp" "$stage"' EXIT
dpkg-deb -x "$deb" "$stage"
dpkg-deb -f "$deb" Version >"$stage/VERSION"
echo "$package" >"$stage/PACKAGE"
src=$(dpkg-deb -f "$deb" Source)
echo "${src%% *}" >"$stage/SOURCE"
echo "$suite" >"$stage/SUITE"
hv=$(verify "$stage")
echo "$hv" >"$stage/SLURM_VERSION"
echo "$stamp" >"$stage/.stamp"

chmod 755 "$stage"
rm -rf "$dest"
mv "$stage" "$dest"
note "Slurm $hv headers from $package $(cat "$dest/VERSION") ($suite) in $dest"
echo "$dest/usr/include"
