#!/usr/bin/env bash
# test.sh: what a machine that never ran the project sees, without one.
#
# Every shell helper whose stdout is its result ($(...)) runs here on a
# stand-in host: the commands the project installs on demand (gcc, make,
# docker, debootstrap, mksquashfs, ...) are missing until a stub apt-get
# "installs" them, apt-get and make write their chatter to stdout as the
# real ones do, and the caches, build/ and the package ledger do not exist
# yet. Each helper's captured value must be exactly its result. A cluster
# that fails to come up must name its step and the reason in its last line.
#
# No root, no network, no docker: the stand-ins are small scripts in a
# temporary directory. Usage: test.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
# shellcheck source=../../packaging/lib/testing.sh
. "$repo/packaging/lib/testing.sh"

host=$(mktemp -d "${TMPDIR:-/tmp}/spank-otel-host.XXXXXX")
trap 'rm -rf "$host"' EXIT

# The commands the project's scripts install with ensure_packages or run
# after it; each is missing from the stand-in host until apt-get installs it.
installable=(gcc make makeself nm mksquashfs debootstrap curl docker dockerd docker-compose)

# --- the stand-in host ------------------------------------------------------

# A PATH of links to every command of the real one but the installable
# ones, which wait in $host/pending until "installed".
mkdir -p "$host/bin" "$host/pending" "$host/fake-repo" "$host/scripts" "$host/third_party"
IFS=: read -ra path_dirs <<<"/usr/local/go/bin:$PATH"
for d in "${path_dirs[@]}"; do
	for f in "$d"/*; do
		name=${f##*/}
		[ -x "$f" ] && [ ! -e "$host/bin/$name" ] || continue
		ln -s "$f" "$host/bin/$name"
	done
done
for c in "${installable[@]}"; do rm -f "$host/bin/$c"; done

# stub NAME [DIR] <<BODY: a stand-in command. The link to the real one is
# removed first: writing through it would replace the host's command.
stub() {
	local f=${2:-$host/bin}/$1
	rm -f "$f"
	{
		echo '#!/bin/bash'
		cat
	} >"$f"
	chmod +x "$f"
}

# Root, as the Makefile's targets run.
stub id <<'EOF'
[ "$1" = -u ] && { echo 0; exit 0; }
exec /usr/bin/id "$@"
EOF

# apt-get: chatter on stdout, as the real one; install makes the commands
# of the packages it is given appear and records the packages, unless
# STUB_APT_FAIL names one of them.
stub apt-get <<EOF
echo "Reading package lists..."
echo "Building dependency tree..."
echo "apt-get \$*" >>"$host/apt.log"
[ "\$1" = update ] && exit 0
for p in "\$@"; do
	[ -n "\${STUB_APT_FAIL:-}" ] && [ "\$p" = "\$STUB_APT_FAIL" ] && { echo "E: Unable to locate package \$p"; exit 100; }
done
for p in "\$@"; do
	case \$p in
	-* | install) continue ;;
	binutils) cmds=nm ;;
	squashfs-tools) cmds=mksquashfs ;;
	docker.io) cmds="docker dockerd" ;;
	*) cmds=\$p ;;
	esac
	echo "\$p" >>"$host/dpkg-installed"
	echo "Setting up \$p ..."
	for c in \$cmds; do mv "$host/pending/\$c" "$host/bin/" 2>/dev/null || :; done
done
EOF
stub dpkg-query <<EOF
{ echo "installed base-files"; sed 's/^/installed /' "$host/dpkg-installed" 2>/dev/null; } | sort -u
EOF

# The installable commands, once installed: make prints what it enters and
# makes the files the scripts then look for; docker answers inspect.
stub make "$host/pending" <<EOF
echo "make: Entering directory '\$PWD'"
echo "make \$*" >>"$host/make.log"
r=$host/fake-repo dry='' targets=()
for a in "\$@"; do
	case \$a in
	-n) dry=1 ;;
	SLURM=*) SLURM=\${a#SLURM=} ;;
	-*) ;;
	*) targets+=("\$a") ;;
	esac
done
[ -z "\$dry" ] || exit 0
for t in "\${targets[@]}"; do
	case \$t in
	headers) mkdir -p "\$r/build/slurm-headers/\$SLURM/usr/include/slurm"; : >"\$r/build/slurm-headers/\$SLURM/usr/include/slurm/spank.h" ;;
	cli) mkdir -p "\$r/build"; echo cli >"\$r/build/spank-otel" ;;
	otelprobes) mkdir -p "\$r/build/otelprobe"; echo go >"\$r/build/otelprobe/otel-probe-go"; echo js >"\$r/build/otelprobe/otel-probe-js.tar" ;;
	deb) mkdir -p "\$r/build/deb"; : >"\$r/build/deb/spank-otel_0.1.0-1+sl\${SLURM//./}_amd64.deb" ;;
	esac
done
echo "make: Leaving directory '\$PWD'"
EOF
stub docker "$host/pending" <<'EOF'
case "$1 $2" in
"image inspect") echo sha256:0123456789abcdef ;;
"inspect -f") echo 192.0.2.7 ;;
"info "*) exit 1 ;;
*) echo "docker $*" ;;
esac
EOF
for c in gcc makeself nm mksquashfs debootstrap curl dockerd docker-compose; do
	stub "$c" "$host/pending" <<<'echo "$0 $*"; exit 1'
done

# The upstream archives, as in ../shared/third_party, and a manifest that
# names their contents (packaging/third-party.tsv's format).
for a in enroot-4.1.2 pyxis-0.24.0; do
	src=$host/upstream-$a
	git init -q "$src"
	echo "$a" >"$src/README"
	git -C "$src" add -A
	git -C "$src" -c user.name=t -c user.email=t@t commit -qm "$a"
	git -C "$src" archive --prefix="$a/" HEAD | gzip >"$host/third_party/$a.tar.gz"
	printf '%s.tar.gz\texample/%s\tv1\thttp://upstream.invalid/%s.tar.gz\t%s\t-\n' \
		"$a" "${a%-*}" "$a" "$(git -C "$src" rev-parse 'HEAD^{tree}')" >>"$host/third-party.tsv"
done
# The third-party builds, standing in for build-enroot.sh and
# build-pyxis.sh: chatter, then the install tree at their last argument.
for s in build-enroot.sh build-pyxis.sh build-image.sh; do
	stub "$s" "$host/scripts" <<<'echo "building $*"; : >"${@: -1}"'
done
# build-image.sh FROM OUT FILE...: OUT is its second argument.
stub build-image.sh "$host/scripts" <<<'echo "building $*"; : >"$2"'
cp "$repo/test/slurm-docker/setup-containers.sh" "$repo/test/slurm-docker/enroot.conf" \
	"$repo/test/slurm-docker/enroot-slurm.fstab" "$host/scripts/"
: >"$host/fake-repo/Makefile"

# on_new_host SCRIPT: SCRIPT in bash, with the cluster script's functions
# loaded, on a fresh stand-in host (nothing installed, no cache, no build/,
# no ledger). Its stdout is what a caller's $(...) would capture.
on_new_host() {
	rm -rf "$host/cache" "$host/fake-repo/build" "$host/ledger" "$host/dpkg-installed" "$host/apt.log"
	mv "$host/pending"/* "$host/bin/" 2>/dev/null || :
	for c in "${installable[@]}"; do mv "$host/bin/$c" "$host/pending/" 2>/dev/null || :; done
	PATH=$host/bin SPANK_OTEL_CACHE=$host/cache SPANK_OTEL_LEDGER=$host/ledger \
		SPANK_OTEL_THIRD_PARTY=$host/third_party SPANK_OTEL_THIRD_PARTY_MANIFEST=$host/third-party.tsv \
		SPANK_OTEL_DEBIAN_MIRROR=http://mirror.invalid/debian \
		/bin/bash -c '
		set -euo pipefail
		. "$1/test/slurm-docker/cluster"
		repo=$2/fake-repo here=$2/scripts command=test version=26.05
		eval "$3"' on-new-host "$repo" "$host" "$1"
}

# captures NAME WANT SCRIPT: SCRIPT's stdout on a new host is WANT, exactly.
captures() {
	local got
	got=$(on_new_host "$3" 2>"$host/stderr") || {
		echo "$1 failed:"
		tail -n 20 "$host/stderr"
		return 1
	}
	expect_eq "$2" "$got"
}

# --- the helpers whose stdout is their result -------------------------------

ensure_packages_quiet() {
	captures ensure_packages "" 'ensure_packages gcc make nm=binutils' || return 1
	grep -q 'apt-get .*install.* gcc make binutils' "$host/apt.log" || { echo "apt-get was not asked for gcc make binutils"; return 1; }
	expect_eq "binutils gcc make" "$(xargs <"$host/ledger")"
}
check "ensure_packages prints nothing on stdout, whatever apt prints, and lists what it installed" ensure_packages_quiet

check "ensure_packages installs nothing present" \
	captures ensure_packages-present "" 'ensure_packages sh=dash /bin/sh=dash; [ ! -e "$SPANK_OTEL_LEDGER" ]'

third_party=$host/third_party
check "third_party_archive prints only the archive" \
	captures third_party_archive "$third_party/enroot-4.1.2.tar.gz" 'third_party_archive "enroot-*.tar.gz"'

check "debian_mirror prints only the mirror" \
	captures debian_mirror http://mirror.invalid/debian debian_mirror

# The release table is the one source of the release facts: each helper
# reads it, the Makefile too, and a release it does not name is none.
release_table() {
	local t=$host/releases.tsv got
	printf '# release\tsuite\tsource\tsupported\n20.02\tbuster\tdebian\tno\n21.08\tbullseye\tschedmd\tyes\n22.05\tbookworm\tdebian\tyes\n' >"$t"
	got=$(SPANK_OTEL_RELEASES=$t bash -c '. "$1/packaging/lib/common.sh"
		echo "$(slurm_suite 20.02) $(slurm_source_suite 21.08) $(slurm_suite 21.08 || echo -) $(slurm_source_suite 22.05 || echo -)"
		echo "$(slurm_releases | paste -sd,) $(slurm_source_releases) $(slurm_releases supported yes | paste -sd,) $(slurm_default)"
		slurm_supported 21.08 && ! slurm_supported 20.02 && ! slurm_supported 23.02 && ! slurm_suite 23.02 && echo ok' _ "$repo")
	expect_eq "buster bullseye - -"$'\n'"20.02,21.08,22.05 21.08 21.08,22.05 22.05"$'\n'"ok" "$got" || return 1
	got=$(make -s -C "$repo" --eval 'show-releases: ; @echo "$(SLURMS)|$(PACKAGE_SLURMS)|$(SLURM)"' show-releases)
	expect_eq "$(bash -c '. "$1/packaging/lib/common.sh"; echo "$(slurm_releases | xargs)|$(slurm_releases supported yes | xargs)|$(slurm_default)"' _ "$repo")" "$got"
}
check "the release table gives every helper and the Makefile its releases" release_table

# The cached builds: the path of the install tree, built on a new host
# (apt-get installs gcc, make, makeself first), then cached.
enroot_tree() {
	local want
	captures enroot_build "" 'out=$(enroot_build); [ -f "$out" ] && [[ $out == $SPANK_OTEL_CACHE/third-party/enroot-4.1.2-*.tar ]] || echo "not a cached tree: $out"' || return 1
	want=$(on_new_host 'p=$(enroot_build); echo "$p"; enroot_build') || return 1
	[ "$(sed -n 1p <<<"$want")" = "$(sed -n 2p <<<"$want")" ] || { echo "cold and cached paths differ: $want"; return 1; }
}
check "enroot_build prints only its install tree, cold and cached" enroot_tree

check "pyxis_build prints only its install tree, the headers made on the way" \
	captures pyxis_build "" 'ensure_packages make; out=$(pyxis_build 26.05); [ -f "$out" ] && [[ $out == $SPANK_OTEL_CACHE/third-party/pyxis-0.24.0-slurm26.05-*.tar ]] || echo "not a cached tree: $out"'

check "container_inputs prints only the squashfs image (mksquashfs installed on the way)" \
	captures container_inputs "$host/fake-repo/build/images/26.05/base.sqsh" 'ensure_packages make docker=docker.io; container_inputs 26.05'

check "plugin_deb prints only the package" \
	captures plugin_deb "$host/fake-repo/build/deb/spank-otel_0.1.0-1+sl2605_amd64.deb" 'ensure_packages make; plugin_deb 26.05'

check "test_libs prints only the libraries" captures test_libs "$(printf '%s\n' \
	"$host/fake-repo/build/testlibs/26.05/spankprobe.so" "$host/fake-repo/build/testlibs/libevil.so" \
	"$host/fake-repo/build/testlibs/libfault.so" "$host/fake-repo/build/testlibs/26.05/spank_otel-initfails.so" \
	"$host/fake-repo/build/testlibs/26.05/spank_otel-initfails-nomode.so")" 'ensure_packages make; test_libs 26.05'

check "backend_inputs prints only the files" captures backend_inputs "$(printf '%s\n' \
	"$host/scripts/task-prolog.sh" "$host/scripts/otlp-endpoint.sh" \
	"$host/fake-repo/build/otelprobe/otel-probe-go" "$host/fake-repo/build/otelprobe/otel-probe-js.tar" \
	"$host/fake-repo/test/pyjob/train.py" "$host/fake-repo/test/pyjob/launch.py")" \
	'ensure_packages make; backend_inputs'

check "jaeger_url prints only the address (docker installed on the way)" \
	captures jaeger_url http://192.0.2.7:16686 'ensure_packages docker; tag=2605; jaeger_url'

# --- a cluster that does not come up says where and why ---------------------

# up_fails SCRIPT WANT...: `cluster up` on a new host fails, and its last
# line holds each WANT.
up_fails() {
	local script=$1 last want
	shift
	if on_new_host "$script" >"$host/up.out" 2>&1; then
		echo "cluster up succeeded"
		return 1
	fi
	last=$(tail -n 1 "$host/up.out")
	for want in "$@"; do
		expect_contains "$last" "$want" || { tail -n 10 "$host/up.out"; return 1; }
	done
}
check "cluster up names the step and the reason when an install fails" up_fails \
	'export STUB_APT_FAIL=docker.io; main up --slurm 26.05' \
	'cluster: up --slurm 26.05 FAILED at step "docker (install, start dockerd)" after ' \
	' s: apt-get install docker.io failed'
check "cluster up names the step when a command fails without a message" up_fails \
	'ensure_dockerd() { :; }; need_compose() { :; }; main up --slurm 26.05' \
	'cluster: up --slurm 26.05 FAILED at step "base image (Debian sid, Slurm 26.05)" after ' \
	' s: a command failed (exit 1), its output is above'

# --- the gate of SchedMD's testsuite runs ---------------------------------

# gate WANT_RC OFF ON: table.py on one test's junit results in each mode.
gate() {
	local want=$1 dir=$host/gate-$2-$3 m r
	mkdir -p "$dir"
	for m in off on; do
		r=$2
		[ "$m" = on ] && r=$3
		case $r in
		passed) r='' ;;
		failed) r='<failure message="x"/>' ;;
		skipped) r='<skipped message="x"/>' ;;
		esac
		printf '<testsuites><testsuite><testcase classname="expect.test_7_9" name="test_expect" time="1.5">%s</testcase></testsuite></testsuites>\n' \
			"$r" >"$dir/results-$m-tests.xml"
	done
	python3 "$repo/test/slurm-testsuite/table.py" /dev/null "$dir" expect/test_7_9.py >"$dir/out" && rc=0 || rc=$?
	expect_eq "$want" "$rc" || { cat "$dir/out"; return 1; }
}
check "the testsuite gate passes a test that passes in both modes" gate 0 passed passed
check "the testsuite gate fails a test that passes only without spank-otel" gate 1 passed failed
check "the testsuite gate fails a test that fails in both modes and is not known" gate 1 failed failed
check "the testsuite gate fails a test skipped in both modes and not known" gate 1 skipped skipped

# --- make test's background builds (test/prebuild.sh) -----------------------

# prebuild_wait STATE WANT: prebuild.sh wait on a product whose background
# build failed, ended without a result or runs past the deadline (a
# process group that outlives it) fails, and says WANT.
prebuild_wait() {
	local dir=$host/prebuild-$1 want=$2 out rc=0 group=''
	mkdir -p "$dir"
	: >"$dir/layers-26.05.queued"
	case $1 in
	failed)
		echo "debootstrap: no route" >"$dir/layers-26.05.log"
		echo 1 >"$dir/layers-26.05.rc"
		;;
	late)
		# A group of its own: not a group leader here, setsid does not fork.
		setsid sleep 60 &
		group=$!
		echo "$group" >"$dir/pgid"
		;;
	esac
	out=$(SPANK_OTEL_PREBUILD=$dir SPANK_OTEL_PREBUILD_TIMEOUT=2 "$repo/test/prebuild.sh" wait layers:26.05 2>&1) || rc=$?
	[ -z "$group" ] || kill "$group"
	[ "$rc" -ne 0 ] || { echo "wait passed: $out"; return 1; }
	expect_contains "$out" "$want"
}
check "prebuild.sh wait fails when the background build failed, with its log" prebuild_wait failed \
	'debootstrap: no route'
check "prebuild.sh wait fails when the background build ended without a result" prebuild_wait gone \
	'the background build of layers:26.05 ended without a result'
check "prebuild.sh wait fails at its deadline" prebuild_wait late \
	'the background build of layers:26.05 did not end within 2 s'
check "prebuild.sh wait returns at once for what was not built in the background" \
	env SPANK_OTEL_PREBUILD="$host/prebuild-none" "$repo/test/prebuild.sh" wait slurm-source:25.11 jaeger

# --- the cgroup v2 VM's console watch (test/vm/run.sh) ---------------------

# vm_watch STUCK WANT: run.sh's console watch reads a kernel report of a
# CPU stuck STUCK seconds; a stand-in qemu (its command line names this
# run's initrd) is ended (WANT ended) or left running (WANT running).
vm_watch() {
	local stuck=$1 want=$2 dir=$host/vm-$1 fake rc=0 i
	mkdir -p "$dir"
	# exec -a: the stand-in's command line is what pkill -f matches, once
	# bash has exec'd.
	bash -c 'exec -a "qemu-system-x86_64 -initrd $0/initrd.gz" sleep 10' "$dir" &
	fake=$!
	for ((i = 0; i < 100; i++)); do
		grep -q qemu-system "/proc/$fake/cmdline" 2>/dev/null && break
		sleep 0.05
	done
	(
		# shellcheck source=../vm/run.sh
		. "$repo/test/vm/run.sh"
		out=$dir started=$SECONDS
		printf 'boot\r\n[ 1592.575412] watchdog: BUG: soft lockup - CPU#0 stuck for %ss! [slurmctld:210]\r\n' "$stuck" |
			watch_console >/dev/null
	)
	if [ "$want" = ended ]; then
		# Ended by the watch: SIGTERM's status, not sleep's 0.
		wait "$fake" || rc=$?
		[ "$rc" = 143 ] || { echo "the stand-in qemu ended with status $rc after a report of $stuck s, not by SIGTERM"; return 1; }
		expect_contains "$(cat "$dir/lockup")" "stuck for ${stuck}s"
	else
		kill -0 "$fake" 2>/dev/null || { echo "the stand-in qemu was ended after a report of $stuck s"; return 1; }
		kill "$fake"
		wait "$fake" 2>/dev/null || :
		[ ! -e "$dir/lockup" ] || { echo "lockup written after a report of $stuck s"; return 1; }
	fi
}
check "the VM's console watch ends a VM whose kernel reports a CPU stuck 1479 s" vm_watch 1479 ended
check "the VM's console watch leaves a VM whose kernel reports a CPU stuck 22 s" vm_watch 22 running

finish
