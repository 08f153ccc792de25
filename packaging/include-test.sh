#!/bin/bash
# Test the way a site builds the packages for a Slurm release this project
# does not know: `make deb|rpm SLURM=X.Y SLURM_INCLUDE=/dir`, with the
# headers of its own Slurm (slurm-devel, or an installed Slurm's
# /usr/include).
#
#   packaging/include-test.sh VERSION
#
# VERSION's headers (make headers SLURM=VERSION) are copied bare into a
# scratch directory, without what slurm-headers.sh records beside them, so
# the build knows nothing but SLURM= and the headers. Then:
#   - make deb and make rpm build packages that the package tests accept
#     (packaging/deb/test.sh --offline, packaging/rpm/test.sh);
#   - make shim, deb and rpm refuse the same headers with another SLURM=,
#     naming both releases, and compile nothing.
#
# Prints "N passed, M failed"; exits non-zero when a check failed.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
# shellcheck source=packaging/lib/common.sh
. "$here/lib/common.sh"
# shellcheck source=packaging/lib/testing.sh
. "$here/lib/testing.sh"

[ $# -eq 1 ] || { echo "usage: $0 VERSION" >&2; exit 2; }
slurm=$1
check_slurm_version "$slurm"
# A release the project has no build for: the next minor.
other=$(slurm_next_minor "$slurm")

make -C "$repo" -s headers SLURM="$slurm" >/dev/null || die "make headers SLURM=$slurm failed"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/spank-otel-include.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/include"
cp -r "$repo/build/slurm-headers/$slurm/usr/include/slurm" "$tmp/include/"
full=$(header_version "$tmp/include") || die "no slurm_version.h in the $slurm headers"
build=$tmp/build
site_make() { make -C "$repo" --no-print-directory BUILD="$build" SLURM_INCLUDE="$tmp/include" "$@"; }

deb=$build/deb/spank-otel_${VERSION:-0.1.0}-1+sl${slurm/./}_amd64.deb
check "make deb SLURM=$slurm SLURM_INCLUDE=<bare $full headers> builds the package" site_make deb SLURM="$slurm"
check "the package names the headers it was built with and no Built-Using" bash -c "
	zcat <(dpkg-deb --fsys-tarfile '$deb' | tar -xO ./usr/share/doc/spank-otel/changelog.Debian.gz) |
		grep -F 'with the headers in $tmp/include (Slurm $full)' &&
	! dpkg-deb -f '$deb' Built-Using | grep ."
check "packaging/deb/test.sh accepts it" "$here/deb/test.sh" --offline "$deb"
check "make rpm SLURM=$slurm SLURM_INCLUDE=<bare $full headers> builds the package" site_make rpm SLURM="$slurm"
rpm=$(ls "$build"/rpm/RPMS/*/slurm-spank-otel-*.sl"${slurm/./}".*.rpm 2>/dev/null | head -n1)
check "packaging/rpm/test.sh accepts it" "$here/rpm/test.sh" "$rpm"

# refused TARGET: make TARGET with SLURM=$other stops before compiling and
# says why.
refused() {
	local out
	rm -rf "$build/$other" "$build/deb/$other"
	if out=$(site_make "$1" SLURM="$other" 2>&1); then
		echo "make $1 SLURM=$other accepted Slurm $full headers:"
		echo "$out"
		return 1
	fi
	expect_contains "$out" "are Slurm $full, not $other" || return 1
	# make shim compiles into $build, the package builds into a copy of the
	# tree below it.
	! find "$build" -path "*/$other/spank_otel.so" | grep . || { echo "a shim was compiled anyway"; return 1; }
}
check "make shim SLURM=$other refuses Slurm $full headers" refused shim
check "make deb SLURM=$other refuses Slurm $full headers" refused deb
check "make rpm SLURM=$other refuses Slurm $full headers" refused rpm

finish
