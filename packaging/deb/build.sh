#!/bin/bash
# Build the Debian package of spank-otel for one Slurm release from artifacts
# that are already built.
#
#   packaging/deb/build.sh --slurm 24.11 [--shim FILE] [--lib FILE] [--cli FILE]
#       [--out DIR] [--version 0.1.0] [--revision 1]
#       [--headers DIR | --include DIR]
#       [--readme FILE] [--maintainer "Name <address>"] [--no-strip]
#
# Defaults, relative to the repository: --shim build/<slurm>/spank_otel.so,
# --lib build/libspankotel.so, --cli build/spank-otel, --out build/deb,
# --headers build/slurm-headers/<slurm> (only read, for Built-Using),
# --readme README.md. --include DIR says the shim was compiled against a
# site's own headers in DIR (the directory holding slurm/spank.h): they must
# be of the --slurm release, and the package records no Built-Using. --version defaults to $VERSION, else 0.1.0. The
# binaries are stripped as dh_strip would (--no-strip keeps them as given).
#
# Writes <out>/spank-otel_<version>-<revision>+sl<NNNN>_amd64.deb (NNNN is
# the Slurm major.minor without its dot) and prints its path. Needs dpkg-deb,
# dpkg-shlibdeps (dpkg-dev) and binutils; runs as any user
# (--root-owner-group). SOURCE_DATE_EPOCH, else the last commit's time, sets
# every timestamp, so a rebuild of the same inputs gives the same file.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
# shellcheck source=packaging/lib/common.sh
. "$here/../lib/common.sh"

slurm="" shim="" lib="" cli="" out="" headers="" include="" no_strip=0
version=${VERSION:-0.1.0} revision=1 readme=$repo/README.md
maintainer=${SPANK_OTEL_MAINTAINER:-spank-otel developers <spank-otel@users.noreply.github.com>}
parse_options "slurm: shim: lib: cli: out: version: revision: headers: include: readme: maintainer: no-strip" "$@"
[ -n "$slurm" ] && [ ${#args[@]} -eq 0 ] || script_usage
check_slurm_version "$slurm"
[[ "$version" =~ ^[0-9][A-Za-z0-9.+~]*$ ]] || die "--version '$version' is not a Debian upstream version"
[[ "$revision" =~ ^[A-Za-z0-9.+~]+$ ]] || die "--revision '$revision' is not a Debian revision"
shim=${shim:-$repo/build/$slurm/spank_otel.so}
lib=${lib:-$repo/build/libspankotel.so}
cli=${cli:-$repo/build/spank-otel}
out=${out:-$repo/build/deb}
[ -z "$headers" ] || [ -z "$include" ] || die "--headers and --include name the same thing; give one"
if [ -n "$include" ]; then
	check_headers "$slurm" "$include"
else
	headers=${headers:-$repo/build/slurm-headers/$slurm}
fi
need dpkg-deb dpkg-shlibdeps gzip install strip
check_artifacts "$slurm" "$shim" "$lib" "$cli"
[ -f "$readme" ] || die "README $readme does not exist"

arch=amd64
multiarch=x86_64-linux-gnu
# Debian's Slurm packages load plugins from this PluginDir.
plugindir=/usr/lib/$multiarch/slurm-wlm
datadir=/usr/share/spank-otel
docdir=/usr/share/doc/spank-otel
slurm_nodot=${slurm/./}
debversion=$version-$revision+sl$slurm_nodot
next=$(slurm_next_minor "$slurm")
suite=$(slurm_suite "$slurm" || echo unstable)
epoch=$(source_date_epoch "$repo")

tmp=$(mktemp -d "${TMPDIR:-/tmp}/spank-otel-deb.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
root=$tmp/root
umask 022

install -d "$root/DEBIAN" "$root$plugindir" "$root/usr/bin" "$root$datadir" "$root$docdir"
# Policy 10.2: shared objects that are not executables are not executable.
install -m 0644 "$shim" "$root$plugindir/spank_otel.so"
install -m 0644 "$lib" "$root$plugindir/libspankotel.so"
install -m 0755 "$cli" "$root/usr/bin/spank-otel"
# As dh_strip does: debug symbols out, dynamic symbols (the plugin and
# library entry points) and the build id kept.
if [ "$no_strip" = 0 ]; then
	strip --remove-section=.comment --remove-section=.note --strip-unneeded \
		"$root$plugindir/spank_otel.so" "$root$plugindir/libspankotel.so"
	strip --remove-section=.comment --remove-section=.note "$root/usr/bin/spank-otel"
fi
render_plugstack "$here/../plugstack.conf.example.in" "$plugindir" |
	sed -e "s|@DATADIR@|$datadir|g" >"$root$datadir/plugstack.conf.example"
install -m 0644 "$here/copyright" "$root$docdir/copyright"
# Policy 12.3: documentation over 4 kB is compressed.
if [ "$(stat -c %s "$readme")" -gt 4096 ]; then
	gzip -9nc "$readme" >"$root$docdir/README.md.gz"
else
	install -m 0644 "$readme" "$root$docdir/README.md"
fi

# Record the exact Slurm headers the shim was compiled with, when known.
built_using="" headers_note=""
if [ -n "$include" ]; then
	headers_note=" with the headers in $include (Slurm $(header_version "$include"))"
elif [ -s "$headers/VERSION" ] && [ -s "$headers/SOURCE" ]; then
	built_using="$(cat "$headers/SOURCE") (= $(cat "$headers/VERSION"))"
	headers_note=" with the headers of $(cat "$headers/PACKAGE" 2>/dev/null || echo libslurm-dev) $(cat "$headers/VERSION")"
fi

# The command is a pure Go program linked statically on purpose: it runs in
# batch scripts and TaskProlog on any node.
if [ "$(elf_kind "$root/usr/bin/spank-otel")" = exec ] && ! readelf -d "$root/usr/bin/spank-otel" 2>/dev/null | grep -q '(NEEDED)'; then
	install -d "$root/usr/share/lintian/overrides"
	echo "spank-otel: statically-linked-binary [usr/bin/spank-otel]" >"$root/usr/share/lintian/overrides/spank-otel"
	chmod 0644 "$root/usr/share/lintian/overrides/spank-otel"
fi

{
	printf 'spank-otel (%s) %s; urgency=medium\n\n' "$debversion" "$suite"
	printf '  * Build for Slurm %s%s.\n\n' "$slurm" "$headers_note"
	printf ' -- %s  %s\n' "$maintainer" "$(LC_ALL=C date -u -R -d "@$epoch")"
} | gzip -9n >"$root$docdir/changelog.Debian.gz"
chmod 0644 "$root$docdir/changelog.Debian.gz"

# Library dependencies (libc6) as dpkg-shlibdeps computes them. The shim's
# spank_* symbols come from slurmstepd at load time, hence --warnings=0.
mkdir -p "$tmp/src/debian"
printf 'Source: spank-otel\n\nPackage: spank-otel\nArchitecture: %s\n' "$arch" >"$tmp/src/debian/control"
dynamic=()
for f in "$root$plugindir/spank_otel.so" "$root$plugindir/libspankotel.so" "$root/usr/bin/spank-otel"; do
	readelf -d "$f" 2>/dev/null | grep -q '(NEEDED)' && dynamic+=("$f")
done
shlibs=""
if [ ${#dynamic[@]} -gt 0 ]; then
	shlibs=$(cd "$tmp/src" && dpkg-shlibdeps --warnings=0 -O "${dynamic[@]}" | sed -n 's/^shlibs:Depends=//p')
fi
# dpkg-shlibdeps goes by symbols, and GLIBC_ABI_DT_RELR has none. A library
# with packed relocations (golib.mk) needs glibc 2.36, the first to apply
# them; an older one would refuse to load it.
if needs_relr_glibc "$root$plugindir/libspankotel.so"; then
	shlibs=$(sed -E 's/libc6 \(>= 2\.([0-9]|[12][0-9]|3[0-5])(\.[0-9]+)?\)/libc6 (>= 2.36)/' <<<"$shlibs")
	[[ "$shlibs" == *"libc6 (>= "* ]] || shlibs="libc6 (>= 2.36)${shlibs:+, $shlibs}"
fi

# Every Debian Slurm daemon and client (slurmd, slurm-client, slurmctld)
# depends on exactly its own version of slurm-wlm-basic-plugins, which owns
# the PluginDir. Bounding that one package pins whichever of them is installed
# to this major.minor, on compute nodes (slurmd) and login nodes
# (slurm-client) alike. Sites that build Slurm from source with the debian/
# directory SchedMD ships get slurm-smd in its place, which every daemon and
# client of theirs depends on in the same way (the two conflict, so only one
# is ever installed). The last clause asks for something that loads SPANK
# plugins.
depends="slurm-wlm-basic-plugins (>= $slurm~) | slurm-smd (>= $slurm~)"
depends+=", slurm-wlm-basic-plugins (<< $next~) | slurm-smd (<< $next~)"
depends+=", slurmd | slurm-client | slurm-smd-slurmd | slurm-smd-client"
[ -n "$shlibs" ] && depends="$shlibs, $depends"
installed_size=$(du -k -s --apparent-size --exclude=DEBIAN "$root" | cut -f1)

{
	echo "Package: spank-otel"
	echo "Version: $debversion"
	echo "Architecture: $arch"
	echo "Maintainer: $maintainer"
	echo "Installed-Size: $installed_size"
	echo "Depends: $depends"
	echo "Enhances: slurmd, slurm-client"
	[ -n "$built_using" ] && echo "Built-Using: $built_using"
	echo "Section: admin"
	echo "Priority: optional"
	echo "Homepage: https://github.com/spank-otel/spank-otel"
	echo "Description: Slurm SPANK plugin that adds job identity to OpenTelemetry"
	echo " spank-otel writes the identity of the Slurm job (job and array ids, a"
	echo " stable job UUID, cluster, partition, user, account and more) into the"
	echo " OTEL_RESOURCE_ATTRIBUTES variable of every task, merged with what the user"
	echo " set there. OpenTelemetry SDKs in every language read that variable, so"
	echo " all telemetry of a job names the job without a code change."
	echo " ."
	echo " This build is for Slurm $slurm. It is enabled in plugstack.conf; see"
	echo " $datadir/plugstack.conf.example. The spank-otel command"
	echo " computes the same attributes where the plugin is not installed."
} >"$root/DEBIAN/control"

(cd "$root" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | LC_ALL=C sort -z | xargs -0 md5sum) >"$root/DEBIAN/md5sums"
chmod 0644 "$root/DEBIAN/control" "$root/DEBIAN/md5sums"
find "$root" -type d -exec chmod 0755 {} +
find "$root" -exec touch -h -d "@$epoch" {} +

mkdir -p "$out"
deb=$out/spank-otel_${debversion}_$arch.deb
SOURCE_DATE_EPOCH=$epoch dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >/dev/null
note "built $deb"
echo "$deb"
