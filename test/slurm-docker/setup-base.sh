#!/bin/sh
# Runs inside the debootstrapped root (chroot) once, before the tree is
# imported as spank-otel-slurm:<version>-base. It must stay cheap: its
# contents are part of the base image's cache key.
set -eu

# Keep the image small; later dpkg runs must not bring the files back.
cat >/etc/dpkg/dpkg.cfg.d/spank-otel-nodoc <<'CFG'
path-exclude=/usr/share/doc/*
path-exclude=/usr/share/man/*
path-exclude=/usr/share/info/*
path-exclude=/usr/share/locale/*
path-exclude=/usr/share/lintian/*
CFG
rm -rf /usr/share/doc/* /usr/share/man/* /usr/share/info/* /usr/share/locale/* \
	/usr/share/lintian/*
# The containers have no network; apt is only used with local .deb files.
cat >/etc/apt/apt.conf.d/90spank-otel <<'CFG'
APT::Install-Recommends "false";
APT::Install-Suggests "false";
Acquire::Check-Valid-Until "false";
CFG
apt-get clean
rm -rf /var/lib/apt/lists/* /var/cache/debconf/*-old /var/log/*.log /var/log/apt/*

# Daemons must never be started by maintainer scripts inside the image.
printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
chmod 0755 /usr/sbin/policy-rc.d

# The test user: same uid on every node, home on a shared volume.
groupadd --gid 1000 alice
useradd --uid 1000 --gid 1000 --create-home --shell /bin/bash alice
chmod 0755 /home/alice

# Scratch space shared by all nodes; the named volume copies this mode.
mkdir -p /shared
chmod 1777 /shared

# One munge key per image, hence the same on every container of a cluster.
# munge's postinst normally creates it; make sure, and fix the ownership.
if [ ! -s /etc/munge/munge.key ]; then
	dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 2>/dev/null
fi
chown -R munge:munge /etc/munge
chmod 0700 /etc/munge
chmod 0400 /etc/munge/munge.key

mkdir -p /var/log/slurm /var/lib/slurm/slurmctld /var/lib/slurm/slurmd
chown slurm:slurm /var/log/slurm /var/lib/slurm/slurmctld

# Docker provides these per container.
rm -f /etc/hostname /etc/machine-id /var/lib/dbus/machine-id
: >/etc/machine-id
