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
	# What udev or systemd would make: bash's process substitution
	# needs /dev/fd.
	[ -e /dev/fd ] || ln -s /proc/self/fd /dev/fd
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
	# No network device: the node's address is on dummy0 (the initramfs
	# loaded the module), which Slurm needs (run.sh says why).
	echo v1 >/proc/sys/kernel/hostname
	printf '127.0.0.1\tlocalhost\n10.0.2.1\tv1\n' >/etc/hosts
	"$bb" ip link set lo up
	"$bb" ip addr add 10.0.2.1/24 dev dummy0 &&
		"$bb" ip link set dummy0 up || return 1

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
	say "starting slurmctld"
	# In the foreground, in the background of this shell: what they
	# write before their log files are open (a fatal error) is kept, and
	# the end stops them by their PIDs.
	/usr/sbin/slurmctld -D -i >/var/log/slurm/slurmctld.stderr 2>&1 &
	ctld=$!
	say "starting slurmd"
	/usr/sbin/slurmd -D >/var/log/slurm/slurmd.stderr 2>&1 &
	slurmd=$!
	i=0
	deadline=$(($(cut -d. -f1 /proc/uptime) + 120))
	until timeout 20 sinfo -h -N -o '%N %T' 2>/dev/null | grep -qx 'v1 idle'; do
		i=$((i + 1))
		for pid in $ctld $slurmd; do
			kill -0 "$pid" 2>/dev/null && continue
			say "a daemon ended: $(tail -n 5 /var/log/slurm/slurmctld.stderr /var/log/slurm/slurmd.stderr)"
			return 1
		done
		if [ $((i % 20)) = 0 ]; then
			say "waiting: sinfo: $(timeout 5 sinfo -h -N -o '%N %T %E' 2>&1 | head -n 2)"
			say "processes: $(ps -eo pid,stat,wchan:20,args | grep -E 'slurm|munge' | grep -v grep | tr -s ' ' | tr '\n' ';')"
			say "slurmctld: $(tail -n 2 /var/log/slurm/slurmctld.log | tr '\n' ';')"
			say "slurmd: $(tail -n 2 /var/log/slurm/slurmd.log | tr '\n' ';')"
		fi
		if [ "$(cut -d. -f1 /proc/uptime)" -gt "$deadline" ]; then
			say "v1 is not idle after 120 s: $(timeout 20 sinfo -h -N -o '%N %T %E' 2>&1)"
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
# Stopped, so that their logs are complete and nothing holds the data disk.
ctld=${ctld:-} slurmd=${slurmd:-}
kill $slurmd $ctld 2>/dev/null
i=0
while [ "$i" -lt 100 ] && { kill -0 $slurmd || kill -0 $ctld; } 2>/dev/null; do
	i=$((i + 1))
	sleep 0.1
done
cp /var/log/slurm/*.log /var/log/slurm/*.stderr "$out/" 2>/dev/null
cp /etc/slurm/slurm.conf /etc/slurm/cgroup.conf "$out/" 2>/dev/null
"$bb" dmesg >"$out/dmesg.txt" 2>/dev/null
echo "$status" >"$out/status"
sync
umount "$data" 2>/dev/null || mount -o remount,ro "$data"
echo "spank-otel-vm: exit=$status"
echo o >/proc/sysrq-trigger
sleep 10
