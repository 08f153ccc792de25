#!/bin/sh
# PID 1 of the cgroup v2 VM (test/vm/run.sh), on the data disk at /mnt: no
# systemd. Mounts the kernel file systems and the unified cgroup hierarchy
# alone, makes the node v1 with four fake GPUs, starts munged, slurmctld
# and slurmd (CgroupPlugin=cgroup/v2, IgnoreSystemd=yes), runs checks.sh
# and powers off. Its last console line is "spank-otel-vm: exit=N", and
# /mnt/out/status holds N, with the logs beside it.
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export PATH LANG=C.UTF-8
data=/mnt
out=$data/out
bb=$data/busybox

say() { echo "init [$(cut -d' ' -f1 /proc/uptime) s]: $*"; }

setup() {
	mount -t proc proc /proc
	mount -t sysfs sysfs /sys
	mkdir -p /dev/pts /dev/shm
	mount -t devpts devpts /dev/pts
	mount -t tmpfs -o mode=1777 tmpfs /dev/shm
	mount -t tmpfs -o mode=0755 tmpfs /run
	mount -t tmpfs -o mode=1777 tmpfs /tmp
	# The unified hierarchy only, with the controllers slurmd enables
	# below it (cgroup/v2 checks cgroup.subtree_control of its parents).
	mount -t cgroup2 -o nsdelegate cgroup2 /sys/fs/cgroup || return 1
	for c in cpuset cpu io memory pids; do
		echo "+$c" >/sys/fs/cgroup/cgroup.subtree_control ||
			say "cannot enable the $c controller"
	done
	say "kernel $(uname -r), cgroup2 controllers: $(cat /sys/fs/cgroup/cgroup.controllers)," \
		"enabled: $(cat /sys/fs/cgroup/cgroup.subtree_control)"
	echo v1 >/proc/sys/kernel/hostname
	printf '127.0.0.1\tlocalhost v1\n' >/etc/hosts
	"$bb" ip link set lo up

	# The docker cluster's functions: fake_gpus (the device nodes and the
	# driver tree bound over /proc/driver) and start_munge.
	(
		SPANK_OTEL_ENTRYPOINT_FUNCTIONS=1 SPANK_OTEL_PROFILE=site
		. "$data/entrypoint.sh"
		set +e
		fake_gpus && start_munge
	) || return 1
	say "fake GPUs: $(ls /dev/nvidia* | tr '\n' ' ')"

	# The cluster's common slurm.conf with this node as the controller,
	# then the VM's node and plugins.
	sed 's/^SlurmctldHost=.*/SlurmctldHost=v1/' "$data/slurm-common.conf" >/etc/slurm/slurm.conf
	cat "$data/slurm-vm.conf" >>/etc/slurm/slurm.conf
	cp "$data/cgroup.conf" "$data/gres.conf" /etc/slurm/
	install -d -o slurm -g slurm -m 0755 /var/lib/slurm/slurmctld /var/log/slurm
	install -d -m 0755 /var/lib/slurm/slurmd
	/usr/sbin/slurmctld -i || return 1
	/usr/sbin/slurmd || return 1
	i=0
	until sinfo -h -N -o '%N %T' 2>/dev/null | grep -qx 'v1 idle'; do
		i=$((i + 1))
		if [ "$i" -gt 240 ]; then
			say "v1 is not idle after 120 s: $(sinfo -h -N -o '%N %T %E' 2>&1)"
			return 1
		fi
		sleep 0.5
	done
	say "slurmd $(slurmd -V | cut -d' ' -f2-) is up: v1 idle"
}

status=1
if setup; then
	say "booted and Slurm is up"
	bash "$data/checks.sh"
	status=$?
else
	say "setup failed"
fi
cp /var/log/slurm/*.log "$out/" 2>/dev/null
cp /etc/slurm/slurm.conf /etc/slurm/cgroup.conf "$out/" 2>/dev/null
"$bb" dmesg >"$out/dmesg.txt" 2>/dev/null
echo "$status" >"$out/status"
sync
umount "$data" 2>/dev/null || mount -o remount,ro "$data"
echo "spank-otel-vm: exit=$status"
echo o >/proc/sysrq-trigger
sleep 10
