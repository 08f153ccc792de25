#!/bin/sh
# Runs in a container of spank-otel-slurm:<version>-base-nodejs (with the
# network, for apt) to make the containers layer the node image is built on
# (containers.sh): NVIDIA's enroot and pyxis, their configuration and the
# Debian packages enroot needs. Usage: setup-containers.sh with enroot.tar,
# pyxis.tar, enroot.conf and enroot-slurm.fstab next to this script; they are removed when it
# ends. pyxis is installed, not enabled: the entrypoint enables it on the
# site profile (plugstack.conf.d/pyxis.conf).
set -eu
src=$(dirname "$0")
trap 'rm -rf "$src"' EXIT

# What enroot calls when pyxis creates, starts, lists and removes a
# container from a squashfs file: unsquashfs (squashfs-tools) and column
# (bsdextrautils, for `enroot list -f`); the rest (bash, awk, flock,
# mountpoint, lsns, ps, getent, pwck) is in the base image already. enroot's
# docker:// import (curl, jq, parallel, zstd) is left out: the cluster has
# no registry.
apt-get update -q
DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends squashfs-tools bsdextrautils
apt-get clean
rm -rf /var/lib/apt/lists/*

tar -C / --no-overwrite-dir --no-same-owner -xf "$src/enroot.tar"
tar -C / --no-overwrite-dir --no-same-owner -xf "$src/pyxis.tar"
install -m 0644 "$src/enroot.conf" /etc/enroot/enroot.conf
install -m 0644 "$src/enroot-slurm.fstab" /etc/enroot/mounts.d/30-slurm.fstab
# The parents of the per-user paths of enroot.conf: any user creates their
# own directory inside (enroot does so with umask 077).
install -d -m 1777 /run/enroot /tmp/enroot-cache /tmp/enroot-data

enroot version
echo "pyxis: $(cat /usr/local/share/pyxis/pyxis.conf)"
