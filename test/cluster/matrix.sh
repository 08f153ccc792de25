#!/usr/bin/env bash
# matrix.sh FILE...: the fault matrices of several Slurm versions (written by
# TestFaultMatrix to build/fault-matrix-<version>.txt) as one table, case by
# version, followed by each version's full results.
set -euo pipefail
[ $# -gt 0 ] || { echo "matrix.sh: no fault matrix files" >&2; exit 1; }
# Each case line is "  NAME<tab>RESULT"; a name may be longer than its column.
awk -F '\t' '
FNR == 1 { n = split($0, w, " "); v = w[n]; vers[++nv] = v; next }
{
	name = $1; sub(/^ +/, "", name); sub(/ +$/, "", name)
	res = $2; st = (res ~ /^ok/) ? "ok" : (res ~ /^n\/a/) ? "n/a" : "FAIL"
	if (!(name in seen)) { seen[name] = 1; order[++nc] = name; if (length(name) > width) width = length(name) }
	cell[name, v] = st
}
END {
	if (width < 10) width = 10
	printf "%-*s", width, "fault case"; for (i = 1; i <= nv; i++) printf " %7s", vers[i]; printf "\n"
	for (c = 1; c <= nc; c++) {
		printf "%-*s", width, order[c]
		for (i = 1; i <= nv; i++) { s = cell[order[c], vers[i]]; printf " %7s", s == "" ? "-" : s }
		printf "\n"
	}
}' "$@"
echo
cat "$@"
