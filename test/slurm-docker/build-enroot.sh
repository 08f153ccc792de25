#!/usr/bin/env bash
# build-enroot.sh ARCHIVE OUT.tar: build NVIDIA's enroot from its release
# archive (../shared/third_party/enroot-*.tar.gz, a `git archive` of the
# upstream tag) offline, on this Debian host, and pack what `make install`
# puts under / into OUT.tar: /usr/local/bin/enroot and its helpers,
# /usr/local/lib/enroot, /usr/local/share/enroot, /etc/enroot.
#
# The archive lacks enroot's three git submodules (deps/makeself, deps/musl,
# deps/linux-headers), so this build stands in for them:
#   - deps/makeself: Debian's makeself (2.4.5, the release the submodule
#     pins) installed as enroot-makeself. Only `enroot bundle` uses it, and
#     that passes its own --header, so the Debian script's header path
#     (/usr/share/makeself) is never read.
#   - deps/musl: FORCE_GLIBC=1 links the five helpers against the host's
#     glibc instead of a static musl. The helpers then need the glibc of the
#     build host or newer: bookworm's 2.36 here, older than every node's.
#   - deps/linux-headers: an empty include directory, so the system's kernel
#     headers (linux-libc-dev) are used.
#   - glibc 2.36 has no strlcpy/strlcat, which musl provides and
#     enroot-mount calls: a two-line header declares them and the helpers
#     link Debian's static libbsd (libbsd-dev) for their code. The in-tree
#     libbsd (closefrom, strtonum...) is still built and linked first.
#   - `make install DESTDIR=...` bakes DESTDIR into the enroot script and
#     enroot.conf; it is stripped again, as enroot's own `make dist` does.
#   - `git submodule update` fails outside a git checkout; enroot's Makefile
#     ignores that failure itself (`-git ...`), and the stamps below tell
#     deps/Makefile that makeself and the kernel headers are in place.
# Host packages: gcc, make, makeself, libbsd-dev (./cluster installs them).
set -euo pipefail

usage() {
	echo "usage: build-enroot.sh ARCHIVE OUT.tar" >&2
	exit 2
}
(($# == 2)) || usage
archive=$1 out=$2
[[ -f $archive ]] || { echo "build-enroot.sh: $archive does not exist" >&2; exit 1; }
for f in /usr/bin/makeself /usr/lib/x86_64-linux-gnu/libbsd.a /usr/include/bsd/string.h; do
	[[ -e $f ]] || { echo "build-enroot.sh: $f is missing: install makeself and libbsd-dev" >&2; exit 1; }
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/enroot-build.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
tar -C "$tmp" -xzf "$archive"
src=$(find "$tmp" -mindepth 1 -maxdepth 1 -type d -name 'enroot-*' | head -n1)
[[ -n $src && -f $src/Makefile ]] || { echo "build-enroot.sh: $archive holds no enroot-*/Makefile" >&2; exit 1; }

# The submodules' stand-ins (see the top of this file).
install -D -m 0755 /usr/bin/makeself "$src/deps/dist/makeself/bin/enroot-makeself"
mkdir -p "$src/deps/makeself" "$src/deps/linux-headers" "$src/deps/dist/linux/include"
touch "$src/deps/makeself/.stamp" "$src/deps/linux-headers/.stamp"
printf '%s\n' '#include <stddef.h>' \
	'size_t strlcpy(char *, const char *, size_t);' \
	'size_t strlcat(char *, const char *, size_t);' >"$tmp/strl.h"

# CPPFLAGS through the environment: enroot's Makefile appends it to its own
# flags, where a command-line value would replace them. LDLIBS on the
# command line replaces the Makefile's -l:libbsd.a, so it is named again.
CPPFLAGS="-include $tmp/strl.h" make -C "$src" -s FORCE_GLIBC=1 \
	prefix=/usr/local sysconfdir=/etc DESTDIR="$tmp/root" \
	LDLIBS="-l:libbsd.a /usr/lib/x86_64-linux-gnu/libbsd.a" install >&2

# enroot's Makefile writes the staging directory into the paths of the
# enroot script and enroot.conf; its own `make dist` strips it the same way.
sed -i "s;$tmp/root;;g" "$tmp/root/usr/local/bin/enroot" "$tmp/root/etc/enroot/enroot.conf"
if grep -q "$tmp" "$tmp/root/usr/local/bin/enroot" "$tmp/root/etc/enroot/enroot.conf"; then
	echo "build-enroot.sh: the staging directory is still named in enroot's paths" >&2
	exit 1
fi

# Every helper must be a complete program (no unresolved strl* left).
for b in "$tmp"/root/usr/local/bin/enroot-*; do
	[[ $b == */enroot-makeself ]] && continue
	if nm -D "$b" 2>/dev/null | grep -qE ' U strl(cpy|cat)$'; then
		echo "build-enroot.sh: $b still imports strlcpy/strlcat" >&2
		exit 1
	fi
done
tar -C "$tmp/root" --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -cf "$out.tmp" .
mv "$out.tmp" "$out"
