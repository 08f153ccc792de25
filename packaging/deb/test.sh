#!/bin/bash
# Test a spank-otel Debian package.
#
#   packaging/deb/test.sh [--offline] build/deb/spank-otel_0.1.0-1+sl2411_amd64.deb
#
# Checks the control data and the file list with modes, then installs the
# package with dpkg into a scratch root that has its own empty dpkg database
# (--force-depends: that root has no Slurm), verifies and runs what it
# installed, and removes it again. Last, apt resolves the package's
# dependencies against the Debian suite of its Slurm release, for a compute
# node (slurmd) and a login node (slurm-client), and must refuse another
# release's Slurm. That step reads the Debian archive through a private apt
# configuration; --offline leaves it out.
#
# Prints "N passed, M failed"; exits non-zero when a check failed.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=packaging/lib/common.sh
. "$here/../lib/common.sh"
# shellcheck source=packaging/lib/testing.sh
. "$here/../lib/testing.sh"

offline=0
if [ "${1:-}" = --offline ]; then
	offline=1
	shift
fi
[ $# -eq 1 ] || { echo "usage: $0 [--offline] PACKAGE.deb" >&2; exit 2; }
deb=$(readlink -f "$1")
[ -f "$deb" ] || die "$1 does not exist"
need dpkg dpkg-deb lintian cc nm objdump readelf

# The file name says which Slurm release the package is for.
name=${deb##*/}
[[ "$name" =~ ^spank-otel_(.+\+sl([0-9]{2})([0-9]{2}))_amd64\.deb$ ]] ||
	die "$name is not named spank-otel_<version>+sl<NNNN>_amd64.deb"
version=${BASH_REMATCH[1]}
slurm=${BASH_REMATCH[2]}.${BASH_REMATCH[3]}
next=$(slurm_next_minor "$slurm")
plugindir=/usr/lib/x86_64-linux-gnu/slurm-wlm

tmp=$(mktemp -d "${TMPDIR:-/tmp}/spank-otel-debtest.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

field() { dpkg-deb -f "$deb" "$1"; }

check "dpkg-deb --info reads the package" dpkg-deb --info "$deb"
check "Package is spank-otel" expect_eq spank-otel "$(field Package)"
check "Version $version matches the file name" expect_eq "$version" "$(field Version)"
check "Architecture is amd64" expect_eq amd64 "$(field Architecture)"

depends=$(field Depends)
check "Depends on Slurm $slurm and nothing newer, Debian's or built from SchedMD's source" expect_contains "$depends" \
	"slurm-wlm-basic-plugins (>= $slurm~) | slurm-smd (>= $slurm~), slurm-wlm-basic-plugins (<< $next~) | slurm-smd (<< $next~)"
check "Depends on a program that loads SPANK plugins" expect_contains "$depends" \
	"slurmd | slurm-client | slurm-smd-slurmd | slurm-smd-client"
check "Depends on libc6 (dpkg-shlibdeps)" expect_contains "$depends" "libc6 (>= "

dpkg-deb -x "$deb" "$tmp/x"
if needs_relr_glibc "$tmp/x$plugindir/libspankotel.so"; then
	libc_min=$(grep -o 'libc6 (>= [^)]*)' <<<"$depends" | sed 's/^libc6 (>= //; s/)$//')
	check "Depends on libc6 2.36 or later: the library's relocations are packed" \
		dpkg --compare-versions "${libc_min:-0}" ge 2.36
fi

# A statically linked command comes with a lintian override saying so.
static=0
if [ "$(elf_kind "$tmp/x/usr/bin/spank-otel")" = exec ] && ! readelf -d "$tmp/x/usr/bin/spank-otel" | grep -q '(NEEDED)'; then
	static=1
fi

# The exact file list, with owner and mode.
expected_list() {
	[ $static -eq 1 ] && echo "-rw-r--r-- root/root ./usr/share/lintian/overrides/spank-otel"
	cat <<-EOF
	-rwxr-xr-x root/root ./usr/bin/spank-otel
	-rw-r--r-- root/root ./usr/lib/x86_64-linux-gnu/slurm-wlm/libspankotel.so
	-rwxr-xr-x root/root ./usr/lib/x86_64-linux-gnu/slurm-wlm/spank-otel-helper
	-rwxr-xr-x root/root ./usr/lib/x86_64-linux-gnu/slurm-wlm/spank-otel-probe
	-rw-r--r-- root/root ./usr/lib/x86_64-linux-gnu/slurm-wlm/spank_otel.so
	-rw-r--r-- root/root ./usr/share/doc/spank-otel/changelog.Debian.gz
	-rw-r--r-- root/root ./usr/share/doc/spank-otel/copyright
	-rw-r--r-- root/root ./usr/share/doc/spank-otel/README.md
	-rw-r--r-- root/root ./usr/share/doc/spank-otel/reference.md
	-rw-r--r-- root/root ./usr/share/man/man1/spank-otel.1.gz
	-rw-r--r-- root/root ./usr/share/spank-otel/plugstack.conf.example
	EOF
}
actual_list() {
	dpkg-deb -c "$deb" | awk '$1 !~ /^d/ { print $1, $2, $6 }' | sed -e 's|README\.md\.gz$|README.md|' -e 's|reference\.md\.gz$|reference.md|' | LC_ALL=C sort
}
check "file list, owners and modes" diff -u <(expected_list | LC_ALL=C sort) <(actual_list)
check "directories are root/root 0755" bash -c "! dpkg-deb -c '$deb' | awk '\$1 ~ /^d/ && (\$1 != \"drwxr-xr-x\" || \$2 != \"root/root\")' | grep ."

# Each tag lintian still finds is overridden in the package with its reason
# (debian/spank-otel.lintian-overrides); info-level tags are not asked
# about.
check "lintian finds no error and no warning" lintian --fail-on error,warning "$deb"

# Install into a scratch root with its own dpkg database.
root=$tmp/root
mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates" "$root/var/lib/dpkg/triggers"
: >"$root/var/lib/dpkg/status"
: >"$root/var/lib/dpkg/available"
dpkg_root() { dpkg --root="$root" --log=/dev/null "$@"; }
check "dpkg --root installs it" dpkg_root --force-depends --install "$deb"
check "dpkg reports it installed" expect_eq "install ok installed" "$(dpkg_root -s spank-otel 2>/dev/null | sed -n 's/^Status: //p')"
check "installed files match the md5sums (dpkg --verify)" dpkg_root --verify spank-otel
check "installed files are the ones dpkg lists" bash -c "dpkg --root='$root' -L spank-otel | while read -r f; do [ -e '$root'\"\$f\" ] || { echo \"missing \$f\"; exit 1; }; done"
check_installed "$root" "$plugindir" "$slurm"
check "copyright is machine-readable and names the licence" \
	grep -q -x 'License: Apache-2.0' "$root/usr/share/doc/spank-otel/copyright"
check "dpkg --remove removes every file" bash -c "dpkg --root='$root' --log=/dev/null --remove spank-otel >/dev/null &&
	! find '$root/usr' -type f | grep ."

# Dependency resolution against the real Slurm packages: Debian's of the
# suite that ships the release, or the slurm-smd packages built from source
# (packaging/slurm-source.sh) with the rest of their suite.
if [ $offline -eq 0 ]; then
	need apt-get
	# What a compute node and a login node ask for, besides the package.
	if suite=$(slurm_suite "$slurm"); then
		other=bookworm
		[ "$suite" = bookworm ] && other=trixie
		daemon=slurmd client=slurm-client plugins=slurm-wlm-basic-plugins origin=""
		compute=(slurmd) login=(slurm-client)
	elif suite=$(slurm_source_suite "$slurm"); then
		built=$("$here/../slurm-source.sh" "$slurm") || die "no Slurm $slurm built from source"
		# The suite's own Slurm is another release.
		other=$suite
		daemon=slurm-smd-slurmd client=slurm-smd-client plugins=slurm-smd
		origin="Slurm $slurm built from source and "
		compute=("$built"/slurm-smd_*.deb "$built"/slurm-smd-slurmd_*.deb)
		login=("$built"/slurm-smd_*.deb "$built"/slurm-smd-client_*.deb)
	else
		die "no Debian suite known for Slurm $slurm"
	fi
	for s in $(printf '%s\n' "$suite" "$other" | sort -u); do
		(debapt_init "$s" "$tmp/apt-$s" && apt-get -c "$tmp/apt-$s/apt.conf" -q update) >"$tmp/apt-$s.log" 2>&1 ||
			{ cat "$tmp/apt-$s.log" >&2; die "apt-get update for $s failed"; }
	done
	# --print-uris resolves like an install but skips ordering, which is
	# slow from an empty dpkg status; it prints one archive per package.
	resolve() {
		local s=$1
		shift
		apt-get -c "$tmp/apt-$s/apt.conf" -q --print-uris --no-install-recommends install "$@" |
			sed -n "s/^'[^']*' \([^_]*\)_.*/\1/p"
	}
	compute_node() {
		local out
		out=$(resolve "$suite" "$deb" "${compute[@]}") || { echo "$out"; return 1; }
		grep -x -E "spank-otel|$daemon|$plugins" <<<"$out"
		grep -q -x spank-otel <<<"$out" && grep -q -x "$daemon" <<<"$out"
	}
	login_node() {
		local out
		out=$(resolve "$suite" "$deb" "${login[@]}") || { echo "$out"; return 1; }
		grep -x -E "spank-otel|$daemon|$client" <<<"$out"
		grep -q -x spank-otel <<<"$out" && grep -q -x "$client" <<<"$out" && ! grep -q -x "$daemon" <<<"$out"
	}
	other_release() {
		local out
		if out=$(apt-get -c "$tmp/apt-$other/apt.conf" -q --print-uris --no-install-recommends install "$deb" slurmd 2>&1); then
			echo "apt accepted Slurm of $other:"
			echo "$out"
			return 1
		fi
		grep -E 'spank-otel : Depends: slurm-wlm-basic-plugins' <<<"$out"
	}
	check "apt resolves it with $daemon of $origin$suite (compute node)" compute_node
	check "apt resolves it with $client of $origin$suite and no $daemon (login node)" login_node
	check "apt refuses it with Debian's Slurm of $other" other_release
fi

finish
