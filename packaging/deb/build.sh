#!/bin/bash
# Build the Debian package of spank-otel for one Slurm release with
# dpkg-buildpackage and the debian/ directory.
#
#   packaging/deb/build.sh --slurm 24.11 [--out DIR] [--version 0.1.0]
#       [--revision 1] [--headers DIR | --include DIR] [--from-head]
#       [--maintainer "Name <address>"]
#
# 1. Takes the Slurm headers of that release: fetched by
#    packaging/slurm-headers.sh into build/slurm-headers/<slurm> (or
#    --headers DIR, a directory holding usr/include/slurm/spank.h), or a
#    site's own with --include DIR, the directory holding slurm/spank.h (the
#    package then records no Built-Using). Headers of another major.minor
#    than --slurm are refused.
# 2. Copies the source tree into <out>/<slurm>/spank-otel-<version>/ (the work
#    tree, tracked and untracked files but nothing .gitignore excludes; the
#    last commit with --from-head) and adds the release's entry to its
#    debian/changelog: version <version>-<revision>+sl<NNNN> (NNNN is the
#    major.minor without its dot), which debian/rules reads the release from.
# 3. Runs dpkg-buildpackage -b -d there. -d: the Build-Depends are not
#    checked, because Go 1.26 and the headers of every release are not
#    Debian packages on the build machine; debian/rules compiles against the
#    headers of step 1 (SLURM_INCLUDE).
#
# Moves the package to <out>/spank-otel_<version>-<revision>+sl<NNNN>_amd64.deb
# and prints its path; the build's log, .buildinfo and .changes stay in
# <out>/<slurm>/. A package already there that was built from the same
# input (<deb>.key: a hash of the staged tree, the headers and the tools) is
# reused, not built again. Default --out: build/deb. --version defaults to $VERSION,
# else 0.1.0. SOURCE_DATE_EPOCH, else the last commit's time, dates the
# changelog entry, which dates every file of the package: a rebuild of the
# same tree gives the same package. Root is not needed.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
# shellcheck source=packaging/lib/common.sh
. "$here/../lib/common.sh"

slurm="" out="" headers="" include="" from_head=0
version=${VERSION:-0.1.0} revision=1
maintainer=$(packager)
parse_options "slurm: out: version: revision: headers: include: from-head maintainer:" "$@"
[ -n "$slurm" ] && [ ${#args[@]} -eq 0 ] || script_usage
check_slurm_version "$slurm"
[[ "$version" =~ ^[0-9][A-Za-z0-9.+~]*$ ]] || die "--version '$version' is not a Debian upstream version"
[[ "$revision" =~ ^[A-Za-z0-9.+~]+$ ]] || die "--revision '$revision' is not a Debian revision"
need dpkg-buildpackage dh make
out=${out:-$repo/build/deb}

# 1. Headers, and what the changelog entry says of them.
[ -z "$headers" ] || [ -z "$include" ] || die "--headers and --include name the same thing; give one"
if [ -n "$include" ]; then
	include=$(cd "$include" && pwd)
	check_headers "$slurm" "$include"
	headers_note="with the headers in $include (Slurm $(header_version "$include"))"
else
	if [ -n "$headers" ]; then
		include=$headers/usr/include
	else
		include=$("$repo/packaging/slurm-headers.sh" "$slurm" "$repo/build/slurm-headers/$slurm")
	fi
	include=$(cd "$include" && pwd)
	check_headers "$slurm" "$include"
	headers_note="with the headers of $(cat "$include/../../PACKAGE" 2>/dev/null || echo libslurm-dev) $(cat "$include/../../VERSION" 2>/dev/null || header_version "$include")"
fi

# 2. The source tree and its changelog entry.
debversion=$version-$revision+sl${slurm/./}
epoch=$(source_date_epoch "$repo")
mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$out/$slurm
src=$work/spank-otel-$version
rm -rf "$work"
stage_source "$repo" "$src" "$from_head"
[ -x "$src/debian/rules" ] || die "$src/debian/rules is missing or not executable"
changelog=$src/debian/changelog
{
	printf 'spank-otel (%s) unstable; urgency=medium\n\n' "$debversion"
	printf '  * Build for Slurm %s\n    %s.\n\n' "$slurm" "$headers_note"
	printf ' -- %s  %s\n\n' "$maintainer" "$(LC_ALL=C date -u -R -d "@$epoch")"
	cat "$changelog"
} >"$changelog.new"
mv "$changelog.new" "$changelog"

# 3. dpkg-buildpackage, unless the package of this very input is there
# already: make test builds each release's package in package-test, and the
# cluster's image builds ask for it again (a minute of CPU each). The key
# is everything the build reads: the staged tree with its changelog entry,
# the headers, the toolchain and the variables it honours.
deb=spank-otel_${debversion}_amd64.deb
log=$work/build.log
key=$( {
	(cd "$src" && find . \( -type f -o -type l \) -print0 | LC_ALL=C sort -z | xargs -0 sha256sum)
	(cd "$include/slurm" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum)
	cat "$include/../../SOURCE" "$include/../../VERSION" 2>/dev/null || : # Built-Using
	PATH=/usr/local/go/bin:$PATH go version 2>&1 || :
	"${CC:-gcc}" --version 2>&1 | head -n 1 || :
	dpkg-buildpackage --version | head -n 1
	env | grep -E '^(GO[A-Z0-9_]*|CGO_[A-Z_]*|CC|CFLAGS|CPPFLAGS|LDFLAGS|DEB_[A-Z_]*)=' | LC_ALL=C sort || :
} | sha256sum | cut -c1-16)
if [ -f "$out/$deb" ] && [ "$(cat "$out/$deb.key" 2>/dev/null)" = "$key" ]; then
	echo "reused $out/$deb, built from the same input (key $key)" >"$log"
	note "reusing $out/$deb: built from the same source, headers and tools (key $key)"
	echo "$out/$deb"
	exit 0
fi
rm -f "$out/$deb.key"
# The make that runs this script must not hand its variables (make deb
# BUILD=...) to the package's own make.
note "dpkg-buildpackage for Slurm $slurm in $src (log: $log)"
if ! (cd "$src" && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL SLURM_INCLUDE="$include" SOURCE_DATE_EPOCH="$epoch" \
	dpkg-buildpackage -b -d -us -uc) >"$log" 2>&1; then
	tail -n 40 "$log" >&2
	die "dpkg-buildpackage failed; the whole log is $log"
fi
[ -f "$work/$deb" ] || die "dpkg-buildpackage wrote no $work/$deb (see $log)"
mv "$work/$deb" "$out/$deb"
echo "$key" >"$out/$deb.key"
note "built $out/$deb"
echo "$out/$deb"
