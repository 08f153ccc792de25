#!/bin/sh
# Container entrypoint of the spank-otel test cluster.
#   entrypoint slurmctld   start munged, then slurmctld in the foreground
#   entrypoint slurmd      start munged, then slurmd in the foreground
#   entrypoint slurmd-configless
#                          the same with no configuration of its own: slurmd
#                          fetches it from slurmctld
#   entrypoint CMD...      run CMD (for debugging an image)
# No systemd: docker's init (tini) is PID 1 and reaps the slurmstepds.
# SPANK_OTEL_PROFILE (basic or site) chooses the configuration.
set -eu

confdir=/etc/slurm/spank-otel
profile=${SPANK_OTEL_PROFILE:-basic}

# slurm.conf and cgroup.conf of the profile; every node assembles the same.
configure() {
	version=$(cat "$confdir/version")
	[ -f "$confdir/profile-$profile.conf" ] || {
		echo "entrypoint: unknown profile '$profile'" >&2
		exit 1
	}
	cpus=$(nproc)
	{
		cat "$confdir/slurm.conf"
		for f in "profile-$profile.conf" "slurm-$version.conf" "slurm-$profile-$version.conf"; do
			[ ! -f "$confdir/$f" ] || { echo; cat "$confdir/$f"; }
		done
	} | sed -e "s/@CPUS@/$cpus/g" -e "s/@GRES@/$(gpu_gres 4)/g" -e "s/@GRES8@/$(gpu_gres 8)/g" >/etc/slurm/slurm.conf
	site_plugins
	rm -f /etc/slurm/cgroup.conf /etc/slurm/gres.conf
	for f in "cgroup-$profile-$version.conf" "cgroup-$profile.conf"; do
		if [ -f "$confdir/$f" ]; then
			cp "$confdir/$f" /etc/slurm/cgroup.conf
			break
		fi
	done
	if has_gpus; then
		cp "$confdir/gres-$profile.conf" /etc/slurm/gres.conf
		# Each task may open only the GPUs it was given.
		echo ConstrainDevices=yes >>/etc/slurm/cgroup.conf
	fi
}

# has_gpus: whether the nodes of this profile and release have fake GPUs:
# slurm-<profile>-<version>.conf sets GresTypes=gpu.
has_gpus() {
	version=$(cat "$confdir/version")
	grep -qs '^GresTypes=gpu$' "$confdir/slurm-$profile-$version.conf"
}

# gpu_gres N: a node's Gres= of N GPUs in slurm.conf, with a trailing
# space, or "".
gpu_gres() {
	! has_gpus || printf 'Gres=gpu:%d ' "$1"
}

# gpu_count: the fake GPUs of this node: eight on c3 (a DGX/HGX node's,
# whose UUIDs no longer fit one value), four on the others.
gpu_count() {
	case $(hostname) in
	c3) echo 8 ;;
	*) echo 4 ;;
	esac
}

# fake_gpus: fake NVIDIA GPUs on a compute node (gpu_count), as the driver
# shows them, for the cluster tests of issues 34 and 44 (../shared/notes/
# fake-gpu-driver-tree.md): device nodes /dev/nvidia0-N (major 195, no
# driver behind them), and a driver tree /proc/driver/nvidia/gpus/<pci>/
# information whose UUIDs are unique per node. runc refuses a volume under
# /proc; a bind mount made in the container works (CAP_SYS_ADMIN), as the
# NVIDIA container toolkit's hook does it.
fake_gpus() {
	has_gpus || return 0
	tree=/run/spank-otel-fake-driver
	sys=/run/spank-otel-fake-pci-drivers
	rm -rf "$tree" "$sys"
	for i in $(seq 0 $(($(gpu_count) - 1))); do
		[ -c "/dev/nvidia$i" ] || mknod -m 0666 "/dev/nvidia$i" c 195 "$i"
		pci=$(printf '0000:%02x:00.0' $((0x1b + i * 16)))
		sum=$(printf '%s' "$(hostname)/$i" | md5sum)
		uuid=$(printf '%s' "$sum" | sed -E 's/^(.{8})(.{4})(.{4})(.{4})(.{12}).*/\1-\2-\3-\4-\5/')
		mkdir -p "$tree/nvidia/gpus/$pci"
		# The real file's shape: tabs and spaces after each name.
		printf 'Model: \t\t NVIDIA Fake GPU\nIRQ:   \t\t 0\nGPU UUID: \t GPU-%s\nBus Location: \t %s\nDevice Minor: \t %d\nGPU Excluded:\t No\n' \
			"$uuid" "$pci" "$i" >"$tree/nvidia/gpus/$pci/information"
		# The driver's sysfs directory, where gres.conf AutoDetect=nvidia
		# reads each GPU's CPUs (Slurm's gpu_nvidia.c; without it slurmd
		# gives the GPUs no cores). sysfs cannot grow a directory: a tree
		# of its own goes over the drivers' one.
		mkdir -p "$sys/nvidia/$pci"
		cat /sys/devices/system/cpu/online >"$sys/nvidia/$pci/local_cpulist"
	done
	chmod -R a+rX "$tree" "$sys"
	mountpoint -q /proc/driver && umount /proc/driver
	mount --bind "$tree" /proc/driver
	mountpoint -q /sys/bus/pci/drivers && umount /sys/bus/pci/drivers
	mount --bind "$sys" /sys/bus/pci/drivers
}

# The container's own part of the host's cgroup v1 hierarchies, writable:
# in a cgroup namespace of its own (so /proc/self/cgroup and the mounts
# agree), each controller is mounted again over Docker's read-only one.
# Needs CAP_SYS_ADMIN.
own_cgroups() {
	for d in /sys/fs/cgroup/*; do
		[ -d "$d" ] || continue
		c=${d##*/}
		case $c in
		systemd) opts=none,name=systemd ;;
		unified) continue ;;
		*) opts=$c ;;
		esac
		umount "$d" && mount -t cgroup -o "$opts" "spank-$c" "$d"
	done
}

# The site profile runs NVIDIA's pyxis, as GPU sites do (containers.sh
# installs it); its plugstack line sorts before spank-otel.conf. A copy,
# not a link: srun inside a container reads the node's /etc/slurm.
site_plugins() {
	pyxis=/usr/local/share/pyxis/pyxis.conf
	rm -f /etc/slurm/plugstack.conf.d/pyxis.conf
	[ "$profile" = site ] && [ -f "$pyxis" ] || return 0
	install -m 0644 "$pyxis" /etc/slurm/plugstack.conf.d/pyxis.conf
}

start_munge() {
	install -d -o munge -g munge -m 0755 /run/munge
	runuser -u munge -- /usr/sbin/munged
	i=0
	until munge -n </dev/null | unmunge >/dev/null 2>&1; do
		i=$((i + 1))
		if [ "$i" -ge 100 ]; then
			echo "entrypoint: munged did not come up" >&2
			cat /var/log/munge/munged.log >&2 || :
			exit 1
		fi
		sleep 0.1
	done
}

# test/vm/init.sh sources this file for its functions (fake_gpus,
# start_munge) and nothing else.
[ "${SPANK_OTEL_ENTRYPOINT_FUNCTIONS:-}" != 1 ] || return 0

case "${1:-}" in
slurmctld)
	configure
	start_munge
	install -d -o slurm -g slurm -m 0755 /var/lib/slurm/slurmctld /var/log/slurm
	# -i: a recreated container starts from an empty state directory.
	exec /usr/sbin/slurmctld -D -i
	;;
slurmd)
	configure
	fake_gpus
	start_munge
	install -d -m 0755 /var/lib/slurm/slurmd /var/log/slurm
	# The site profile's slurmd runs in a cgroup namespace of its own.
	[ "$profile" != site ] || exec unshare --cgroup "$0" slurmd-cgroupns
	exec /usr/sbin/slurmd -D
	;;
slurmd-cgroupns)
	own_cgroups
	exec /usr/sbin/slurmd -D ${SPANK_OTEL_SLURMD_ARGS:-}
	;;
slurmd-configless)
	# What slurmctld sends replaces these; plugstack.conf.d stays, as an
	# admin's files on the node would.
	rm -f /etc/slurm/slurm.conf /etc/slurm/cgroup.conf /etc/slurm/gres.conf /etc/slurm/plugstack.conf
	site_plugins
	fake_gpus
	start_munge
	install -d -m 0755 /var/lib/slurm/slurmd /var/log/slurm
	export SPANK_OTEL_SLURMD_ARGS="--conf-server slurmctld"
	[ "$profile" != site ] || exec unshare --cgroup "$0" slurmd-cgroupns
	exec /usr/sbin/slurmd -D $SPANK_OTEL_SLURMD_ARGS
	;;
*)
	exec "$@"
	;;
esac
