#!/usr/bin/env bash
# matrix.sh FILE...: the fault matrices of several Slurm versions (written by
# TestFaultMatrix to build/fault-matrix-<version>.txt) as one table, case by
# version, followed by each version's full results.
set -euo pipefail
[ $# -gt 0 ] || { echo "matrix.sh: no fault matrix files" >&2; exit 1; }
awk '
FNR == 1 { v = $NF; vers[++nv] = v; next }
{
	name = substr($0, 3, 44); sub(/ +$/, "", name)
	res = substr($0, 48); st = (res ~ /^ok/) ? "ok" : (res ~ /^n\/a/) ? "n/a" : "FAIL"
	if (!(name in seen)) { seen[name] = 1; order[++nc] = name }
	cell[name, v] = st
}
END {
	printf "%-44s", "fault case"; for (i = 1; i <= nv; i++) printf " %7s", vers[i]; printf "\n"
	for (c = 1; c <= nc; c++) {
		printf "%-44s", order[c]
		for (i = 1; i <= nv; i++) { s = cell[order[c], vers[i]]; printf " %7s", s == "" ? "-" : s }
		printf "\n"
	}
}' "$@"
echo
cat "$@"
