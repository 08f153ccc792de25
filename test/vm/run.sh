#!/usr/bin/env bash
# run.sh: a Slurm 26.05 node on cgroup v2 in a qemu virtual machine, the
# checks that depend on the cgroup version run there (issue 47).
#
# The host keeps its cgroup v1 hierarchies (it cannot switch); the VM boots
# Debian's kernel with the unified hierarchy only. Its root file system is
# the node image the docker cluster builds (spank-otel-slurm:26.05, the
# plugin's package installed), exported into an ext4 disk image once per
# image id and cached; the VM writes to a throw-away overlay of it
# (snapshot=on). A second small disk carries this directory's scripts in
# and the results out. PID 1 in the VM is init.sh: it mounts cgroup2,
# starts munged, slurmctld and slurmd with CgroupPlugin=cgroup/v2, runs
# checks.sh and powers the VM off. Nothing runs afterwards: qemu is killed
# when it outlives SPANK_OTEL_VM_TIMEOUT.
#
# Usage: test/vm/run.sh (as root, on Debian; the Makefile's vm-test builds
# the node image first). Exit status 0 when every check passed.
#
# Environment:
#   SPANK_OTEL_VM_IMAGE    the node image (default spank-otel-slurm:26.05,
#                          with -$SPANK_OTEL_INSTANCE when that is set)
#   SPANK_OTEL_VM_TIMEOUT  seconds the VM may run (default 1800)
#   SPANK_OTEL_CACHE       cache directory (/var/cache/spank-otel); the
#                          kernel, busybox and the root disk are in vm/
#   SPANK_OTEL_VM_CHECKS   checks to run (default: all of checks.sh)
#   SPANK_OTEL_VM_APPEND   kernel command line after console= and panic=
#                          (default "quiet loglevel=5"; "" shows the boot)
#   SPANK_OTEL_VM_LOCKUP   seconds a CPU may be reported stuck before the
#                          VM is ended and booted once more (default 90)
set -euo pipefail
shopt -s inherit_errexit

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
# shellcheck source=../../packaging/lib/host.sh
. "$repo/packaging/lib/host.sh"

cache=${SPANK_OTEL_CACHE:-/var/cache/spank-otel}/vm
out=$repo/build/vm
image=${SPANK_OTEL_VM_IMAGE:-spank-otel-slurm:26.05${SPANK_OTEL_INSTANCE:+-$SPANK_OTEL_INSTANCE}}
timeout=${SPANK_OTEL_VM_TIMEOUT:-1800}
# A CPU stuck this long (seconds) in the VM's kernel is a lockup
# (watch_console); the kernel reports one from 20 s on.
lockup_limit=${SPANK_OTEL_VM_LOCKUP:-90}
# The drivers the initramfs loads, Debian builds them as modules: those
# that reach the disks (ext4 asks for crc32c through the crypto API, a
# soft dependency, which the generic module provides on any CPU), and
# dummy, whose dummy0 gives the VM a non-loopback address: Slurm resolves
# its listening addresses with AI_ADDRCONFIG, which finds nothing on a
# machine with loopback alone, and slurmctld and slurmd then die.
root_modules=(virtio_pci virtio_blk crc32c_generic ext4 dummy)
# Bump when the root disk recipe changes.
root_format=1
started=$SECONDS

log() { printf '[vm %4ds] %s\n' "$((SECONDS - started))" "$*" >&2; }

# kernel_dir prints the cache directory of Debian's current kernel (the
# host suite's linux-image-amd64) and of busybox, filling it the first
# time: vmlinuz, busybox, and the modules root_modules needs with their
# dependencies (modules/*.ko and modules/order, the load order). Nothing
# is installed on the host.
kernel_dir() {
	local pkg version dir tmp
	if ! pkg=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/ { print $2; exit }') ||
		[[ -z $pkg ]]; then
		apt-get update -q >&2 || die "apt-get update failed"
		pkg=$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-[0-9]/ { print $2; exit }')
	fi
	[[ -n $pkg ]] || die "apt knows no linux-image-amd64"
	version=$(apt-cache show --no-all-versions "$pkg" | awk '/^Version:/ { print $2; exit }')
	# The directory is named by the module list too: a new module makes
	# a new one.
	dir=$cache/${pkg}_${version}_$(printf '%s\n' "${root_modules[@]}" | sha256sum | cut -c1-8)
	if [[ -f $dir/modules/order ]]; then
		echo "$dir"
		return
	fi
	log "downloading $pkg $version and busybox-static (apt-get download; nothing installed)"
	mkdir -p "$cache"
	tmp=$(mktemp -d "$cache/kernel.XXXXXX")
	# apt's download sandbox user must be able to write there.
	chmod 0755 "$tmp"
	chown _apt "$tmp" 2>/dev/null || :
	(cd "$tmp" && apt-get download -q "$pkg" busybox-static) >&2 || die "apt-get download $pkg busybox-static failed"
	dpkg-deb -x "$tmp/${pkg}_"*.deb "$tmp/x"
	dpkg-deb -x "$tmp/busybox-static_"*.deb "$tmp/x"
	mkdir -p "$tmp/out/modules"
	cp "$tmp/x/boot/vmlinuz-${pkg#linux-image-}" "$tmp/out/vmlinuz"
	cp "$tmp/x/bin/busybox" "$tmp/out/busybox"
	copy_modules "$tmp/x/lib/modules/${pkg#linux-image-}" "$tmp/out/busybox" "$tmp/out/modules"
	rm -rf "$dir" "$cache/linux-image-"*
	mv "$tmp/out" "$dir"
	rm -rf "$tmp"
	echo "$dir"
}

# copy_modules KDIR BUSYBOX DEST copies root_modules and what they depend
# on (the depends= of each module's .modinfo) from the kernel's module tree
# KDIR into DEST, writing DEST/order: the file names in load order.
copy_modules() {
	local kdir=$1 bb=$2 dest=$3 f name
	local -A path=() seen=()
	local order=()
	while IFS= read -r f; do
		name=${f##*/}
		name=${name%.ko}
		path[${name//-/_}]=$f
	done < <(find "$kdir" -name '*.ko')
	add() {
		local m=${1//-/_} dep deps
		[[ -z ${seen[$m]:-} ]] || return 0
		seen[$m]=1
		[[ -n ${path[$m]:-} ]] || die "the kernel has no module $m"
		deps=$("$bb" strings "${path[$m]}" | sed -n 's/^depends=//p' | tr ',' ' ')
		for dep in $deps; do add "$dep"; done
		order+=("$m")
	}
	for name in "${root_modules[@]}"; do add "$name"; done
	for name in "${order[@]}"; do
		cp "${path[$name]}" "$dest/$name.ko"
	done
	printf '%s.ko\n' "${order[@]}" >"$dest/order"
}

# initramfs KDIR: build/vm/initrd.gz, which loads the modules, mounts the
# two disks and hands over to init.sh on the second.
initramfs() {
	local kdir=$1 d=$out/initramfs
	rm -rf "$d"
	mkdir -p "$d/bin" "$d/dev" "$d/proc" "$d/sys" "$d/newroot" "$d/modules"
	cp "$kdir/busybox" "$d/bin/busybox"
	cp "$kdir/modules/"* "$d/modules/"
	install -m 0755 "$here/initramfs-init" "$d/init"
	# The kernel opens the initramfs's /dev/console for /init's output.
	mknod -m 0600 "$d/dev/console" c 5 1
	(cd "$d" && find . | LC_ALL=C sort | cpio -o -H newc --quiet -R 0:0) | gzip -1 >"$out/initrd.gz"
	rm -rf "$d"
}

# root_disk prints the cached ext4 image of the node image's file system,
# made when the image id changed: docker export, unpacked as root (owners
# kept), mkfs.ext4 -d.
root_disk() {
	local id key disk tmp cid
	ensure_packages docker=docker.io dockerd=docker.io
	ensure_dockerd
	id=$(docker image inspect -f '{{.Id}}' "$image" 2>/dev/null) ||
		die "no docker image $image: build it with test/slurm-docker/cluster build --slurm 26.05 (make vm-test does)"
	key=$(printf '%s\n' "$root_format" "$id" | sha256sum | cut -c1-16)
	disk=$cache/root-$key.ext4
	if [[ -f $disk ]]; then
		log "root disk $disk is up to date ($image)"
		echo "$disk"
		return
	fi
	log "exporting $image into an ext4 disk image"
	mkdir -p "$cache"
	tmp=$(mktemp -d "$cache/root.XXXXXX")
	cid=$(docker create "$image" /bin/true)
	if ! docker export "$cid" | tar -C "$tmp" --numeric-owner -xpf -; then
		docker rm "$cid" >/dev/null
		die "docker export $image failed"
	fi
	docker rm "$cid" >/dev/null
	mkdir -p "$tmp/mnt"
	# Room for the state and logs of a run; the file is sparse.
	mkfs.ext4 -q -F -L spank-otel-root -d "$tmp" "$tmp.ext4" 4G >&2 || die "mkfs.ext4 of the root disk failed"
	rm -rf "$tmp"
	rm -f "$cache"/root-*.ext4
	mv "$tmp.ext4" "$disk"
	echo "$disk"
}

# data_disk: build/vm/data.ext4, what init.sh needs besides the image
# (this directory's scripts, busybox, the entrypoint's functions) and
# where it leaves the results (out/).
data_disk() {
	local kdir=$1 d=$out/data
	rm -rf "$d"
	mkdir -p "$d/out"
	install -m 0755 "$here/init.sh" "$here/checks.sh" "$here/memory-job.sh" "$here/pagecache-job.sh" "$here/overlap-job.sh" "$here/faults-job.sh" "$kdir/busybox" "$d/"
	install -m 0644 "$here/slurm-vm.conf" "$here/cgroup.conf" "$here/gres.conf" "$d/"
	install -m 0644 "$repo/test/slurm-docker/entrypoint.sh" "$d/entrypoint.sh"
	install -m 0644 "$repo/test/slurm-docker/slurm.conf" "$d/slurm-common.conf"
	printf '%s\n' "${SPANK_OTEL_VM_CHECKS:-}" >"$d/checks-wanted"
	rm -f "$out/data.ext4"
	mkfs.ext4 -q -F -L spank-otel-data -d "$d" "$out/data.ext4" 64M >&2
	rm -rf "$d"
}

# watch_console: the VM's console, each line stamped with the host's clock
# (the console writes CR LF). A kernel that reports a CPU stuck for
# lockup_limit seconds or more has locked up, whatever the checks would
# do next: the line goes to $out/lockup and qemu (found by its initrd's
# path, this run's alone) is ended at once, not at the timeout. Seen once
# in CI under TCG: both vCPUs stuck in the kernel for the run's 1800 s,
# before Slurm was up.
watch_console() {
	local line
	while IFS= read -r line; do
		line=${line%$'\r'}
		printf '[vm %4ds] %s\n' "$((SECONDS - started))" "$line"
		if [[ $line =~ soft\ lockup\ -\ CPU\#[0-9]+\ stuck\ for\ ([0-9]+)s ]] &&
			((BASH_REMATCH[1] >= lockup_limit)) && [[ ! -e $out/lockup ]]; then
			printf '%s\n' "$line" >"$out/lockup"
			pkill -TERM -f -- "-initrd $out/initrd.gz" || :
		fi
	done
}

# vm_times BOOT END: the VM's times from the console's host stamps: qemu
# started at BOOT and ended at END (seconds since run.sh started).
vm_times() {
	local boot=$1 end=$2 init up
	init=$(sed -n 's/^\[vm *\([0-9]*\)s\] init \[.*/\1/p' "$out/console.log" | head -n 1)
	up=$(sed -n 's/^\[vm *\([0-9]*\)s\] init .*booted and Slurm is up.*/\1/p' "$out/console.log" | head -n 1)
	log "times: init.sh started $((${init:-end} - boot)) s after qemu, Slurm up after $((${up:-end} - boot)) s," \
		"checks and power-off $((end - ${up:-end})) s, the VM $((end - boot)) s in all"
}

# boot_vm KDIR ROOT runs the VM once, its console in $out/console.log.
boot_vm() {
	local kdir=$1 root=$2 t_boot rc
	t_boot=$SECONDS
	log "booting the VM (TCG, 2 CPUs on one host thread, 2 GiB; at most $timeout s)"
	# -no-reboot: a reboot or a panic (panic=1) ends qemu; init.sh powers
	# off. No network device: slurmctld and slurmd talk over loopback.
	# thread=single: both vCPUs on one host thread, taking turns (about
	# 15 % slower here): the kernel's cross-CPU code patching and IPIs
	# then never race two host threads, the likeliest cause of the
	# lockup watch_console ends.
	# loglevel=5: a stall's report and its backtraces reach the console.
	set +e
	# --foreground: qemu stays in run.sh's process group, so that a kill
	# of the group (a CI's timeout, ^C) ends it too.
	timeout --foreground --kill-after=10 "$timeout" qemu-system-x86_64 \
		-accel tcg,thread=single -m 2048 -smp 2 \
		-nodefaults -no-reboot -display none -serial stdio \
		-kernel "$kdir/vmlinuz" -initrd "$out/initrd.gz" \
		-append "console=ttyS0 panic=1 ${SPANK_OTEL_VM_APPEND-quiet loglevel=5}" \
		-drive "file=$root,if=virtio,format=raw,snapshot=on" \
		-drive "file=$out/data.ext4,if=virtio,format=raw" \
		</dev/null 2>&1 | watch_console | tee "$out/console.log"
	rc=${PIPESTATUS[0]}
	set -e
	log "the VM ran $((SECONDS - t_boot)) s (qemu exit $rc)"
	vm_times "$((t_boot - started))" "$((SECONDS - started))"
	((rc != 124 && rc != 137)) || log "qemu did not end within $timeout s and was killed"
}

main() {
	[[ $(id -u) == 0 ]] || die "run.sh needs root (the root disk keeps the image's owners)"
	ensure_packages qemu-system-x86_64=qemu-system-x86 mkfs.ext4=e2fsprogs debugfs=e2fsprogs cpio
	mkdir -p "$out"
	rm -rf "$out/results" "$out/console.log" "$out/console-lockup.log" "$out/lockup"
	local kdir root status
	kdir=$(kernel_dir)
	log "kernel: ${kdir##*/}"
	initramfs "$kdir"
	root=$(root_disk)
	data_disk "$kdir"
	# A kernel lockup is the emulator's fault, not a check's (watch_console):
	# the VM boots once more, every check again, and a second lockup fails
	# the run.
	boot_vm "$kdir" "$root"
	if [[ -e $out/lockup ]]; then
		log "the VM's kernel locked up ($(cat "$out/lockup")); its console is in $out/console-lockup.log; booting it once more"
		mv "$out/console.log" "$out/console-lockup.log"
		rm -f "$out/lockup"
		data_disk "$kdir"
		boot_vm "$kdir" "$root"
		if [[ -e $out/lockup ]]; then
			log "FAILED: the VM's kernel locked up again ($(cat "$out/lockup"))"
			exit 1
		fi
	fi
	mkdir -p "$out/results"
	debugfs -R "rdump /out $out/results" "$out/data.ext4" >/dev/null 2>&1 || :
	status=$(cat "$out/results/out/status" 2>/dev/null || echo none)
	log "results in $out/results/out (console: $out/console.log)"
	grep -aE '\] vm-check: (PASS|FAIL|SKIP)' "$out/console.log" | sed 's/^\[vm *[0-9]*s\] //' >&2 || :
	if [[ $status != 0 ]]; then
		log "FAILED: the checks' status is '$status' after $((SECONDS - started)) s"
		exit 1
	fi
	log "every check passed in $((SECONDS - started)) s"
}

# Sourced, it only defines the functions.
if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
	main "$@"
fi
