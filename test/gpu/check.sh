#!/usr/bin/env bash
# check.sh: on a machine with NVIDIA GPUs (no Slurm needed), check what
# spank-otel names as a task's GPUs against nvidia-smi, for every
# CUDA_VISIBLE_DEVICES subset of the machine's GPUs.
#
# It writes a gres.conf made from the machine (one Name=gpu File= line per
# GPU, in nvidia-smi's order, which is PCI order) into a temporary
# configuration directory, then for each subset S of the GPUs runs
# `spank-otel task-env` with the variables Slurm would give a step's task
# that was given S:
#   global indices (no ConstrainDevices): CUDA_VISIBLE_DEVICES=S,
#     SLURM_STEP_GPUS=S;
#   local indices (cgroup.conf ConstrainDevices=yes): CUDA_VISIBLE_DEVICES=
#     0..|S|-1, SLURM_STEP_GPUS=S, the device cgroup admitting S
#     (--admitted);
#   a task bound to each GPU i of a step of all of them (--gpus-per-task=1):
#     CUDA_VISIBLE_DEVICES=0, SLURM_STEP_GPUS=0 (Slurm's step's first), the
#     device cgroup admitting i (--admitted);
# each with CUDA_DEVICE_ORDER=PCI_BUS_ID, and without it where the GPUs are
# all one model. Each answer must be exactly nvidia-smi's UUIDs of S, in
# order. Then, on the machine itself (no --root) as root with a cgroup v1
# devices hierarchy, the bound tasks again with the kernel as the
# authority: spank-otel runs in a devices cgroup that admits GPU i alone
# (a cgroup v2 machine needs a BPF program for that; the case says it did
# not run). Exits 1 on any difference, 2 on a usage or setup error.
#
# Usage: test/gpu/check.sh [--root DIR] [--max-gpus N]
#   --root DIR    where /dev/nvidiaN and /proc/driver/nvidia are (default /;
#                 the self-test uses a fake tree)
#   --max-gpus N  check subsets of the first N GPUs only (default 8:
#                 255 subsets, two modes each; spank-otel names up to 16)
# Environment: SPANK_OTEL, the command to run (default: spank-otel on PATH,
# else build/spank-otel of this checkout); NVIDIA_SMI (default nvidia-smi).
set -euo pipefail

root=/ max=8
while (($#)); do
	case $1 in
	--root) root=$2; shift 2 ;;
	--max-gpus) max=$2; shift 2 ;;
	-h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) echo "check.sh: unknown argument $1" >&2; exit 2 ;;
	esac
done
here=$(cd "$(dirname "$0")" && pwd)
spank=${SPANK_OTEL:-}
if [[ -z $spank ]]; then
	spank=$(command -v spank-otel || echo "$here/../../build/spank-otel")
fi
smi=${NVIDIA_SMI:-nvidia-smi}
[[ -x $spank ]] || { echo "check.sh: no spank-otel command ($spank); set SPANK_OTEL" >&2; exit 2; }
command -v "$smi" >/dev/null || { echo "check.sh: no $smi" >&2; exit 2; }

# The configuration directory, below the root spank-otel reads (it reads
# every file there, SLURM_CONF's directory included).
root=${root%/}
tmp=$(mktemp -d "${root:-/tmp}/.spank-otel-check.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
conf=$tmp/etc/slurm
mkdir -p "$conf"
[[ -n $root ]] || root=/

# nvidia-smi's GPUs: index, UUID, PCI bus id ("00000000:3B:00.0"), model.
mapfile -t rows < <("$smi" --query-gpu=index,uuid,pci.bus_id,name --format=csv,noheader)
((${#rows[@]})) || { echo "check.sh: $smi lists no GPU" >&2; exit 2; }
uuids=() models=() minors=()
for row in "${rows[@]}"; do
	IFS=, read -r index uuid bus name <<<"$row"
	index=${index// /} uuid=${uuid// /} bus=${bus// /}
	[[ $index == "${#uuids[@]}" ]] || { echo "check.sh: $smi index $index out of order" >&2; exit 2; }
	# The driver's directory: a 4-digit domain, lower case.
	bus=${bus,,}
	dir=$root/proc/driver/nvidia/gpus/${bus: -12}
	minor=$(sed -n 's/^Device Minor:[[:space:]]*//p' "$dir/information" 2>/dev/null || :)
	[[ $minor =~ ^[0-9]+$ ]] || { echo "check.sh: no Device Minor in $dir/information" >&2; exit 2; }
	echo "Name=gpu File=/dev/nvidia$minor" >>"$conf/gres.conf"
	uuids+=("$uuid") models+=("${name# }") minors+=("$minor")
done
n=${#uuids[@]}
((n <= max)) || n=$max
same_model=1
for m in "${models[@]}"; do [[ $m == "${models[0]}" ]] || same_model=0; done
echo "check.sh: $n of ${#uuids[@]} GPUs (one model: $same_model); gres.conf:"
sed 's/^/  /' "$conf/gres.conf"

checks=0 diffs=0
# answer VARS...: the UUIDs spank-otel writes for a step's task with VARS
# (nv.gpu.<i>.uuid), comma-separated in CUDA's order i; a first VARS of
# --admitted=MINORS is spank-otel's flag. The command in the array wrap,
# if any, runs it (in a cgroup).
wrap=()
answer() {
	local flags=()
	[[ $1 != --admitted=* ]] || { flags=(--admitted "${1#*=}"); shift; }
	env -i PATH="$PATH" SLURM_JOB_ID=1 SLURM_STEP_ID=0 SLURM_CLUSTER_NAME=check \
		SLURM_CONF="${conf#"${root%/}"}/slurm.conf" "$@" "${wrap[@]}" "$spank" task-env --step-id 0 --root "$root" "${flags[@]}" 2>/dev/null |
		tr ',' '\n' | sed -n 's/^nv\.gpu\.\([0-9]*\)\.uuid=/\1 /p' | sort -n | cut -d' ' -f2 | paste -sd, -
}
compare() { # want, then the variables
	local want=$1 got
	shift
	got=$(answer "$@")
	checks=$((checks + 1))
	if [[ $got != "$want" ]]; then
		diffs=$((diffs + 1))
		echo "DIFFERENT: $* -> spank-otel ${got:-(nothing)}, nvidia-smi $want"
	fi
}
for mode in global local; do
	rm -f "$conf/cgroup.conf"
	[[ $mode == global ]] || echo ConstrainDevices=yes >"$conf/cgroup.conf"
	for ((set = 1; set < (1 << n); set++)); do
		step='' cuda='' want='' k=0 subset_model=1 first=''
		for ((i = 0; i < n; i++)); do
			((set & (1 << i))) || continue
			step+=${step:+,}$i want+=${want:+,}${uuids[i]}
			[[ -z $first || ${models[i]} == "$first" ]] || subset_model=0
			first=${models[i]}
			if [[ $mode == global ]]; then cuda+=${cuda:+,}$i; else cuda+=${cuda:+,}$k; fi
			k=$((k + 1))
		done
		vars=(CUDA_VISIBLE_DEVICES="$cuda" SLURM_STEP_GPUS="$step" SLURM_GPUS_ON_NODE="$k")
		if [[ $mode == local ]]; then
			admitted=''
			for i in ${step//,/ }; do admitted+=${admitted:+,}${minors[i]}; done
			vars=(--admitted="$admitted" "${vars[@]}")
		fi
		compare "$want" "${vars[@]}" CUDA_DEVICE_ORDER=PCI_BUS_ID
		# CUDA's default order (FASTEST_FIRST): PCI order on GPUs of one
		# model (the task's own under ConstrainDevices, the node's
		# without); else spank-otel must write nothing.
		if { [[ $mode == local ]] && ((subset_model)); } || { [[ $mode == global ]] && ((same_model)); }; then
			compare "$want" "${vars[@]}"
		else
			compare "" "${vars[@]}"
		fi
	done
done

# bound: a task bound to GPU i of a step of all n; Slurm names the step's
# first in SLURM_STEP_GPUS, the device cgroup tells.
echo ConstrainDevices=yes >"$conf/cgroup.conf"
for ((i = 0; i < n; i++)); do
	compare "${uuids[i]}" --admitted="${minors[i]}" CUDA_VISIBLE_DEVICES=0 SLURM_STEP_GPUS=0 SLURM_GPUS_ON_NODE="$n"
done
devices=/sys/fs/cgroup/devices
if [[ $root != / ]]; then
	echo "check.sh: the kernel's device cgroup: not asked for a copy under --root"
elif ((EUID != 0)) || [[ ! -w $devices ]]; then
	echo "check.sh: the kernel's device cgroup: NOT CHECKED (needs root and cgroup v1's $devices; cgroup v2 needs a BPF program)"
else
	for ((i = 0; i < n; i++)); do
		cg=$devices/spank-otel-check-$$-$i
		mkdir "$cg"
		# Nothing but the usual character devices and GPU i.
		echo a >"$cg/devices.deny"
		for rule in "c 1:* rwm" "c 5:* rwm" "c 136:* rwm" "c 195:${minors[i]} rwm"; do
			echo "$rule" >"$cg/devices.allow"
		done
		# shellcheck disable=SC2016 # expanded by the inner sh
		wrap=(sh -c 'echo $$ >"$1" && shift && exec "$@"' sh "$cg/cgroup.procs")
		compare "${uuids[i]}" CUDA_VISIBLE_DEVICES=0 SLURM_STEP_GPUS=0 SLURM_GPUS_ON_NODE="$n"
		wrap=()
		rmdir "$cg"
	done
	echo "check.sh: the kernel's device cgroup: asked for $n bound tasks"
fi
echo "check.sh: $checks checks, $diffs different"
((diffs == 0))
