#!/bin/sh
# Runs in a container of spank-otel-slurm:<version>-base-containers (with the
# network, for apt) to make the testsuite layer of a supported release
# (testsuite.sh): what SchedMD's regression suite needs on a node (its
# README and lib/atf.py): python3 with pytest, pexpect and the modules atf
# imports, expect, rsync, sudo, a C compiler and Slurm's headers (test_7_11
# builds a SPANK plugin), and the runner user `atf`, with passwordless sudo as
# atf requires. Usage: setup-testsuite.sh with slurm-include.tar (the
# release's include/slurm) next to this script; it is removed when it ends.
set -eu
src=$(dirname "$0")
trap 'rm -rf "$src"' EXIT

apt-get update -q
DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
	python3 python3-pytest python3-pexpect python3-requests python3-yaml \
	python3-jsondiff python3-jsonpatch expect rsync sudo gcc libc6-dev
apt-get clean
rm -rf /var/lib/apt/lists/*

# The headers of the Slurm this image runs, where SlurmInstallDir=/usr
# puts them.
tar -C /usr/include --no-same-owner -xf "$src/slurm-include.tar"
test -f /usr/include/slurm/spank.h

useradd --create-home --uid 1100 --shell /bin/bash atf
# The expect tests run as SlurmUser, and some submit jobs with
# --export=VAR=value, for which slurmd loads that user's login environment
# (su - slurm): with Debian's nologin shell that fails and the job is held
# (test_17_14, "user_env_retrieval_failed_requeued_held").
usermod --shell /bin/bash slurm
echo 'atf ALL=(ALL) NOPASSWD: ALL' >/etc/sudoers.d/atf
chmod 0440 /etc/sudoers.d/atf
python3 -c 'import pytest, pexpect; print("pytest", pytest.__version__, "pexpect", pexpect.__version__)'
