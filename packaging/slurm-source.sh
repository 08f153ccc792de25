#!/bin/bash
# Build Slurm from an upstream source archive into Debian packages, as a site
# that builds Slurm itself does: with the debian/ directory SchedMD ships in
# the archive (packages slurm-smd, slurm-smd-slurmd, slurm-smd-dev, ...).
#
#   packaging/slurm-source.sh VERSION
#
# VERSION is a Slurm major.minor (25.11). The archive is the one
# packaging/third-party.tsv names, found or downloaded and checked by
# host.sh's third_party_archive. A missing archive is an error that names
# the file.
#
# The build runs in a Debian chroot (debootstrap from the host's configured
# mirror, the suite below) whose build dependencies come from that mirror;
# the compilation itself runs without a network (unshare --net). Packages are
# kept in $SPANK_OTEL_CACHE/slurm-<version>-<key>/ (default
# /var/cache/spank-otel), the key being a hash of the archive and this
# recipe: a second run prints the cached directory at once. Besides the
# .deb files it holds SUITE, SLURM_VERSION, BUILD_SECONDS and build.log.
#
# Prints the directory of the packages. Needs root (debootstrap, chroot).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
# shellcheck source=packaging/lib/host.sh
. "$here/lib/host.sh"

parse_options "" "$@"
[ ${#args[@]} -eq 1 ] || script_usage
version=${args[0]}
check_slurm_version "$version"
suite=$(slurm_source_suite "$version") || die "Slurm $version is not built from source here (releases: $(slurm_source_releases))"
archive=$(third_party_archive "slurm-$version.*.tar.gz")
cache=${SPANK_OTEL_CACHE:-/var/cache/spank-otel}
# Bump when the build changes in a way the hashed inputs miss.
recipe_format=1
key=$( {
	sha256sum <"$archive"
	printf '%s\n' "$recipe_format" "$suite"
	cat "$0"
} | sha256sum | cut -c1-16)
full=$(basename "$archive" .tar.gz)
full=${full#slurm-}
out=$cache/slurm-$full-$key

if [ -f "$out/SLURM_VERSION" ]; then
	note "Slurm $full packages are cached in $out (built in $(cat "$out/BUILD_SECONDS") s)"
	echo "$out"
	exit 0
fi

[ "$(id -u)" = 0 ] || die "building Slurm from source needs root (debootstrap, chroot)"
need debootstrap chroot unshare tar sha256sum
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
[ -r "$keyring" ] || die "$keyring is missing (apt-get install debian-archive-keyring)"
mkdir -p "$cache"
# One build per release at a time; a second caller waits and reuses it.
exec 9>"$cache/.lock-slurm-source-$version"
flock 9
if [ -f "$out/SLURM_VERSION" ]; then
	echo "$out"
	exit 0
fi

mirror=$(debian_mirror)
started=$SECONDS
tmp=$(mktemp -d "$cache/slurm-build.XXXXXX")
root=$tmp/rootfs
cleanup() {
	# The chroot's mounts live in a mount namespace of their own; nothing
	# to unmount here.
	rm -rf "$tmp"
}
trap cleanup EXIT
# Stopped (make test's background build, test/prebuild.sh): the clean-up too.
trap 'exit 143' TERM INT HUP

note "bootstrapping Debian $suite (buildd) from $mirror to build Slurm $full"
debootstrap --variant=buildd --keyring="$keyring" "$suite" "$root" "$mirror" >"$tmp/debootstrap.log" 2>&1 || {
	tail -n 30 "$tmp/debootstrap.log" >&2
	die "debootstrap $suite failed (log above)"
}
mkdir -p "$root/build"
tar -C "$root/build" -xzf "$archive"
src=/build/slurm-$full
[ -f "$root$src/debian/control" ] || die "$archive has no debian/control: not an upstream Slurm archive"

# in_root [--offline] CMD...: CMD in the chroot, with its own /proc and
# /dev/pts mounted in a private mount namespace (gone when CMD ends);
# --offline gives it no network.
in_root() {
	local ns=(--mount --propagation private)
	if [ "$1" = --offline ]; then
		ns+=(--net)
		shift
	fi
	unshare "${ns[@]}" -- chroot "$root" /bin/sh -c \
		'mount -t proc proc /proc && { mount -t devpts devpts /dev/pts 2>/dev/null || :; } && exec "$@"' sh "$@"
}

note "installing the build dependencies of debian/control from $suite"
cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || :
in_root sh -c "export DEBIAN_FRONTEND=noninteractive
	apt-get -q update && apt-get -q -y --no-install-recommends install devscripts equivs &&
	cd $src && mk-build-deps -i -r -t 'apt-get -q -y --no-install-recommends' debian/control" \
	>"$tmp/deps.log" 2>&1 || {
	tail -n 40 "$tmp/deps.log" >&2
	die "installing Slurm's build dependencies failed (log above)"
}

jobs=$(nproc)
note "building Slurm $full packages offline with $jobs jobs (minutes)"
build_started=$SECONDS
# No network from here on: the archive and Debian's packages are all the
# build gets. No static libraries (enable_static=no, which libtool's
# configure takes from the environment as --disable-static would give it):
# no node links Slurm statically, and libtool would compile every library
# source twice.
if ! in_root --offline sh -c "cd $src && enable_static=no DEB_BUILD_OPTIONS='nocheck noautodbgsym parallel=$jobs' dpkg-buildpackage -b -uc -us" \
	>"$tmp/build.log" 2>&1; then
	tail -n 60 "$tmp/build.log" >&2
	die "building Slurm $full failed (log above)"
fi
build_seconds=$((SECONDS - build_started))

stage=$tmp/out
mkdir -p "$stage"
mv "$root"/build/*.deb "$stage/"
ls "$stage"/slurm-smd-dev_*.deb >/dev/null 2>&1 || die "the build made no slurm-smd-dev package"
echo "$suite" >"$stage/SUITE"
echo "$full" >"$stage/SLURM_VERSION"
echo "$build_seconds" >"$stage/BUILD_SECONDS"
cp "$tmp/build.log" "$stage/build.log"
rm -rf "$cache/slurm-$version".*-*/
mv "$stage" "$out"
note "Slurm $full built in $build_seconds s ($((SECONDS - started)) s with the build chroot): $out"
echo "$out"
