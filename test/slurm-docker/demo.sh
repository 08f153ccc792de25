#!/usr/bin/env bash
# make demo: a two-node job on the running cluster whose tasks print their
# decoded OTEL_RESOURCE_ATTRIBUTES, shown as one table (attribute × task);
# then the spans its tasks sent to the cluster's Jaeger (demo-jaeger.sh).
set -euo pipefail

slurm=${1:-26.05}
here=$(cd "$(dirname "$0")" && pwd)
cluster() { "$here/cluster" "$@"; }

echo "Submitting as alice on Slurm $slurm, with a user attribute of her own:"
echo "  OTEL_RESOURCE_ATTRIBUTES='team=ml%2Cinfra' OTEL_SERVICE_NAME=demo sbatch -N2 -n4 --wait:"
echo "    srun spank-otel decode; srun otel-probe-go otel-probe-go; srun otel-probe-js otel-probe-js"
echo

# Each task prints "<step>.<rank> <JSON object of its attributes>"; the
# batch script itself is task "batch".
out=$(cluster exec --slurm "$slurm" -- bash -c '
export OTEL_RESOURCE_ATTRIBUTES="team=ml%2Cinfra" OTEL_SERVICE_NAME=demo
cd /shared && sbatch --wait --quiet -N2 -n4 -J demo -o /shared/demo-%j.out <<"EOF" >/dev/null
#!/bin/bash
echo "batch@$SLURMD_NODENAME $(spank-otel decode)"
srun -N2 -n4 bash -c '"'"'echo "step$SLURM_STEP_ID.$SLURM_PROCID@$SLURMD_NODENAME $(spank-otel decode)"'"'"'
srun -N2 -n4 otel-probe-go otel-probe-go
srun -N2 -n4 otel-probe-js otel-probe-js
echo "job $SLURM_JOB_ID"
EOF
cat "$(ls -t /shared/demo-*.out | head -n1)"')

python3 - "$out" <<'EOF'
import json, sys
rows = [line.split(" ", 1) for line in sys.argv[1].splitlines() if " {" in line]
rows.sort(key=lambda r: (not r[0].startswith("batch"), r[0]))  # batch script first, then ranks
tasks = [name for name, _ in rows]
attrs = {name: json.loads(obj) for name, obj in rows}
keys = sorted({k for a in attrs.values() for k in a})
width = max(len(k) for k in keys)
cols = [max(len(t), max(len(attrs[t].get(k, "-")) for k in keys)) for t in tasks]
cols = [min(c, 38) for c in cols]
cell = lambda s, w: (s if len(s) <= w else s[: w - 1] + "…").ljust(w)
print(cell("attribute", width), " ".join(cell(t, w) for t, w in zip(tasks, cols)))
print("-" * width, " ".join("-" * w for w in cols))
for k in keys:
    print(cell(k, width), " ".join(cell(attrs[t].get(k, "-"), w) for t, w in zip(tasks, cols)))
print()
print("Each task says which step, rank and node it is:")
for t in tasks:
    a = attrs[t]
    if "slurm.task.id" in a:
        print(f"  {t:16} step {a['slurm.step.id']}, task {a['slurm.task.id']} of {a['slurm.step.ntasks']}"
              f" ({a['slurm.task.local_id']} on its node), node {a['slurm.node.name']}")
    else:
        print(f"  {t:16} the batch script: a job context, no task keys")
EOF
echo
echo "The batch step carries the head node; each step's tasks carry their own step, rank, node"
echo "and topology; nv.dl.job.uuid is the same everywhere, and the user's team=ml,infra survives."

job=$(sed -n 's/^job \([0-9]*\)$/\1/p' <<<"$out")
[[ -n $job ]] || { echo "demo: the job printed no id" >&2; exit 1; }
echo
"$here/demo-jaeger.sh" "$slurm" "$job"
echo
"$here/demo-python.sh" "$slurm"
