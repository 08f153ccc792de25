#!/usr/bin/env bash
# selftest.sh: check.sh against a fake machine, no GPU needed (as root: it
# makes device nodes, major 195, in a temporary directory, which nothing
# opens). The fake has four GPUs whose device minors run against PCI order
# and a fake nvidia-smi; check.sh must pass, and fail when nvidia-smi
# disagrees with the driver's tree. Mixed models: the cases CUDA's default
# order cannot tell must give nothing.
# Usage: test/gpu/selftest.sh   (SPANK_OTEL as for check.sh)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
((EUID == 0)) || { echo "selftest.sh: needs root (mknod)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# fake ROOT MODEL...: a machine of one GPU per MODEL at ROOT, and its
# nvidia-smi in ROOT/bin. PCI order 1b, 2b, ...; minors 3, 2, 1, 0.
fake() {
	local r=$1 i=0 n minor bus uuid
	shift
	n=$#
	mkdir -p "$r/dev" "$r/bin"
	: >"$r/smi.csv"
	for model in "$@"; do
		minor=$((n - 1 - i))
		bus=$(printf '0000:%02x:00.0' $((0x1b + 16 * i)))
		uuid=$(printf 'GPU-%08x-0000-4000-8000-%012d' "$i" "$minor")
		mknod "$r/dev/nvidia$minor" c 195 "$minor"
		mkdir -p "$r/proc/driver/nvidia/gpus/$bus"
		printf 'Model: \t\t %s\nGPU UUID: \t %s\nBus Location: \t %s\nDevice Minor: \t %d\n' \
			"$model" "$uuid" "$bus" "$minor" >"$r/proc/driver/nvidia/gpus/$bus/information"
		printf '%d, %s, 0000%s, %s\n' "$i" "$uuid" "${bus^^}" "$model" >>"$r/smi.csv"
		i=$((i + 1))
	done
	printf '#!/bin/sh\ncat %q\n' "$r/smi.csv" >"$r/bin/nvidia-smi"
	chmod +x "$r/bin/nvidia-smi"
}

fail=0
fake "$tmp/same" H100 H100 H100 H100
NVIDIA_SMI=$tmp/same/bin/nvidia-smi "$here/check.sh" --root "$tmp/same" | tail -n 1 || { echo "selftest: check.sh failed on a consistent machine"; fail=1; }

fake "$tmp/mixed" H100 A100 H100 A100
NVIDIA_SMI=$tmp/mixed/bin/nvidia-smi "$here/check.sh" --root "$tmp/mixed" | grep -E "^DIFF|checks" || { echo "selftest: check.sh failed on a consistent machine of mixed models"; fail=1; }

# nvidia-smi disagrees: GPUs 1 and 2 swapped.
fake "$tmp/liar" H100 H100 H100 H100
awk -F', ' 'NR == 2 {a = $2} NR == 3 {b = $2} {rows[NR] = $0} END {
	for (i = 1; i <= NR; i++) { r = rows[i]; if (i == 2) sub(a, b, r); else if (i == 3) sub(b, a, r); print r } }' \
	"$tmp/liar/smi.csv" >"$tmp/liar/smi.new" && mv "$tmp/liar/smi.new" "$tmp/liar/smi.csv"
if out=$(NVIDIA_SMI=$tmp/liar/bin/nvidia-smi "$here/check.sh" --root "$tmp/liar" 2>&1); then
	echo "selftest: check.sh passed although nvidia-smi disagrees"
	fail=1
elif ! grep -q '^DIFFERENT' <<<"$out"; then
	echo "selftest: check.sh failed without naming a difference: $out"
	fail=1
else
	echo "$out" | tail -n 1
fi
((fail == 0)) && echo "selftest: ok"
exit "$fail"
