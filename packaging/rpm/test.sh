#!/bin/bash
# Test a slurm-spank-otel binary RPM.
#
#   packaging/rpm/test.sh build/rpm/RPMS/x86_64/slurm-spank-otel-0.1.0-1.sl2411.x86_64.rpm
#
# Reads the RPM's header (name, release, file list, modes, flags, requires,
# provides), runs rpmlint on it and on the spec, then installs it with rpm into scratch roots that each have
# their own rpm database:
#   - with --nodeps, to verify, run and remove what it installed;
#   - without --nodeps, next to stand-in packages named "slurm" of several
#     versions (empty RPMs built here, plus one that provides the C library
#     the binaries need), so that rpm's own dependency check shows which
#     Slurm releases the package accepts.
#
# Prints "N passed, M failed"; exits non-zero when a check failed.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=packaging/lib/common.sh
. "$here/../lib/common.sh"
# shellcheck source=packaging/lib/testing.sh
. "$here/../lib/testing.sh"

[ $# -eq 1 ] || { echo "usage: $0 PACKAGE.rpm" >&2; exit 2; }
pkg=$(readlink -f "$1")
[ -f "$pkg" ] || die "$1 does not exist"
need rpm rpmbuild rpmlint cc nm objdump readelf

q() { rpm -qp --nosignature "$@" "$pkg" 2>/dev/null; }
name=$(q --qf '%{NAME}')
release=$(q --qf '%{RELEASE}')
[[ "$release" =~ \.sl([0-9]{2})([0-9]{2})(\.|$) ]] || die "release '$release' does not carry .slNNNN"
slurm=${BASH_REMATCH[1]}.${BASH_REMATCH[2]}
next=$(slurm_next_minor "$slurm")
plugindir=/usr/lib64/slurm

tmp=$(mktemp -d "${TMPDIR:-/tmp}/spank-otel-rpmtest.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

check "rpm reads the package" q -qi
check "Name is slurm-spank-otel" expect_eq slurm-spank-otel "$name"
check "Release $release is <n>.sl${slurm/./}" bash -c "[[ '$release' =~ ^[0-9]+\\.sl${slurm/./}(\\..+)?\$ ]]"
check "Architecture is x86_64" expect_eq x86_64 "$(q --qf '%{ARCH}')"
check "License names Apache-2.0" expect_contains "$(q --qf '%{LICENSE}')" Apache-2.0

# Files with mode, owner and flags (d = %doc, l = %license). The doc and
# licence directories depend on the rpm's _docdir_fmt, so they are
# normalised to <doc> and <lic>.
expected_files() {
	cat <<-EOF
	-rwxr-xr-x root:root - /usr/bin/spank-otel
	-rwxr-xr-x root:root - /usr/lib64/slurm/libspankotel.so
	-rwxr-xr-x root:root - /usr/lib64/slurm/spank-otel-helper
	-rwxr-xr-x root:root - /usr/lib64/slurm/spank-otel-probe
	-rwxr-xr-x root:root - /usr/lib64/slurm/spank_otel.so
	-rw-r--r-- root:root d <doc>/README.md
	-rw-r--r-- root:root d <doc>/reference.md
	-rw-r--r-- root:root l <lic>/LICENSE
	-rw-r--r-- root:root d /usr/share/man/man1/spank-otel.1.gz
	-rw-r--r-- root:root - /usr/share/spank-otel/plugstack.conf.example
	EOF
}
actual_files() {
	# rpm prints no flags as an empty field; a dash stands for it.
	q --qf '[%{FILEMODES:perms}|%{FILEUSERNAME}:%{FILEGROUPNAME}|%{FILEFLAGS:fflags}|%{FILENAMES}\n]' |
		awk -F'|' '$1 !~ /^d/ { print $1, $2, ($3 == "" ? "-" : $3), $4 }' |
		sed -E -e "s#/usr/share/doc/$name(-[^/]+)?/#<doc>/#" -e "s#/usr/share/licenses/$name(-[^/]+)?/#<lic>/#" |
		LC_ALL=C sort -k4
}
check "file list, modes, owners, %doc and %license" diff -u <(expected_files | LC_ALL=C sort -k4) <(actual_files)
check "directories it owns are root:root 0755 and none is Slurm's" bash -c "
	rpm -qp --nosignature --qf '[%{FILEMODES:perms} %{FILEUSERNAME}:%{FILEGROUPNAME} %{FILENAMES}\n]' '$pkg' 2>/dev/null |
	awk '\$1 ~ /^d/' | tee /dev/stderr | awk '\$1 != \"drwxr-xr-x\" || \$2 != \"root:root\" || \$3 == \"$plugindir\" { bad = 1 } END { exit bad }'"

requires=$(q --requires)
check "Requires slurm >= $slurm" grep -q -x "slurm(x86-64) >= $slurm" <<<"$requires"
check "Requires slurm < $next" grep -q -x "slurm(x86-64) < $next" <<<"$requires"
# EL9, the oldest release the package is for, has glibc 2.34.
check "needs no glibc newer than EL9's 2.34" bash -c "! grep -E 'GLIBC_(2\.(3[5-9]|[4-9][0-9])|ABI_DT_RELR)' <<<'$requires'"
check "does not provide the private libspankotel.so" bash -c "! rpm -qp --nosignature --provides '$pkg' 2>/dev/null | grep -i spankotel"

# rpmlint on the package and on the spec as rpmbuild reads it for this
# release (slurm_version from a private ~/.rpmmacros): each finding left is
# filtered in rpmlint.toml with its reason.
rpmlint_clean() {
	local out
	mkdir -p "$tmp/home"
	echo "%slurm_version $slurm" >"$tmp/home/.rpmmacros"
	out=$(HOME=$tmp/home rpmlint -c "$here/rpmlint.toml" "$pkg" "$here/slurm-spank-otel.spec" 2>&1)
	echo "$out"
	grep -q -E ' 0 errors, 0 warnings' <<<"$out"
}
check "rpmlint finds no error and no warning in the RPM and the spec" rpmlint_clean

# Install with --nodeps into a scratch root: files, verify, run, remove.
root=$tmp/root
mkdir -p "$root"
rpm_root() { rpm --root="$root" "$@"; }
check "rpm --initdb in a scratch root" rpm_root --initdb
check "rpm -i --nodeps installs it" rpm_root -i --nodeps --nosignature "$pkg"
check "rpm -q finds it installed" rpm_root -q "$name"
check "installed files pass rpm -V" rpm_root -V --nodeps "$name"
check "every listed file exists" bash -c "rpm --root='$root' -ql '$name' | while read -r f; do [ -e '$root'\"\$f\" ] || { echo \"missing \$f\"; exit 1; }; done"
check_installed "$root" "$plugindir" "$slurm"
check "rpm -e removes every file" bash -c "rpm --root='$root' -e '$name' && ! find '$root/usr' -type f | grep ."

# Stand-ins: one package providing every requirement that is not Slurm's
# (the C library, rpmlib features excluded), and "slurm" at several versions.
standin() { # NAME VERSION [PROVIDES...]
	local n=$1 v=$2 p d=$tmp/standin
	shift 2
	mkdir -p "$d"
	{
		echo "Name: $n"
		echo "Version: $v"
		echo "Release: 1"
		echo "Summary: stand-in for tests"
		echo "License: none"
		for p in "$@"; do echo "Provides: $p"; done
		printf '%%description\nstand-in\n%%files\n'
	} >"$d/$n-$v.spec"
	rpmbuild -bb --quiet --define "_topdir $d" --define "_rpmdir $d/out" "$d/$n-$v.spec" >"$d/$n-$v.log" 2>&1 ||
		{ cat "$d/$n-$v.log" >&2; return 1; }
	ls "$d"/out/*/"$n-$v-1."*.rpm
}
mapfile -t base_provides < <(grep -v -E '^(rpmlib\(|slurm)' <<<"$requires")
base=$(standin spank-otel-test-base 1 "${base_provides[@]}") || die "cannot build the stand-in base package"

accepts() { # SLURM_FULL_VERSION: install the package next to that "slurm"
	local v=$1 r=$tmp/root-$1 s
	s=$(standin slurm "$v") || return 1
	mkdir -p "$r"
	rpm --root="$r" --initdb &&
		rpm --root="$r" -i --nosignature "$base" "$s" &&
		rpm --root="$r" -i --nosignature "$pkg"
}
refuses() {
	if accepts "$1"; then
		echo "rpm installed it next to slurm $1"
		return 1
	fi
}
major=${slurm%.*} minor=${slurm#*.}
check "rpm installs it next to slurm $slurm.0" accepts "$slurm.0"
check "rpm installs it next to slurm $slurm.5" accepts "$slurm.5"
check "rpm refuses it without slurm" bash -c "d='$tmp/root-none'; mkdir -p \$d; rpm --root=\$d --initdb && rpm --root=\$d -i --nosignature '$base' &&
	! rpm --root=\$d -i --nosignature '$pkg'"
check "rpm refuses it next to slurm $((10#$major - 1)).$minor.3 (older release)" refuses "$((10#$major - 1)).$minor.3"
check "rpm refuses it next to slurm $next.0 (newer release)" refuses "$next.0"
check "rpm refuses it next to slurm $((10#$major + 1)).05.0 (newer release)" refuses "$((10#$major + 1)).05.0"

finish
