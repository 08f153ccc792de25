#!/usr/bin/env bash
# demo-python.sh SLURM-VERSION: the Python part of `make demo`. A training-
# shaped Python job (test/pyjob/train.py: the OpenTelemetry Python SDK set
# up the ordinary way, nothing for spank-otel) runs as 4 tasks on 2 nodes
# with --otel-rank and a fake GPU each; its spans are then found in Jaeger
# by slurm.job.id, nv.dl.rank, slurm.node.name and a GPU's UUID, and the
# UI's search by that UUID is rendered to build/demo/jaeger-python.png.
# Skipped, saying why, where the nodes have no Python SDK or no GPUs (the
# releases before 25.11, the basic profile).
set -euo pipefail
slurm=$1
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
out=$repo/build/demo
service=train steps=3
cluster() { "$here/cluster" "$@"; }

if ! cluster exec --slurm "$slurm" -- test -f /usr/lib/spank-otel-test/pyjob/train.py; then
	echo "(No Python job: the nodes of Slurm $slurm have no OpenTelemetry Python SDK.)"
	exit 0
fi
if ! cluster exec --slurm "$slurm" -- scontrol show node c1 | grep -q 'Gres=gpu'; then
	echo "(No Python job: the nodes of this cluster have no GPUs; the site profile gives them fake ones.)"
	exit 0
fi

echo "A Python job as ML engineers write one (test/pyjob/train.py: Resource.create(), the OTLP"
echo "exporter to OTEL_EXPORTER_OTLP_ENDPOINT, one span per training step, nothing for spank-otel):"
echo "  OTEL_SERVICE_NAME=$service sbatch -N2 -n4 --gpus-per-task=1 --otel-rank --wait:"
echo "    srun python3 train.py $steps"
job=$(cluster exec --slurm "$slurm" -- bash -c "
export OTEL_SERVICE_NAME=$service
cd /shared && sbatch --wait --parsable -N2 -n4 --gpus-per-task=1 --otel-rank -J train -o /shared/train-%j.out <<'EOF'
#!/bin/bash
srun python3 /usr/lib/spank-otel-test/pyjob/train.py $steps
EOF")
cluster exec --slurm "$slurm" -- cat "/shared/train-$job.out" | sort | sed 's/^/  /'
echo

base=$(cluster jaeger-url --slurm "$slurm")
urlq() { python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$1"; }
# traces TAGS prints the API's answer for the service's spans with TAGS.
traces() { curl -fsS "$base/api/traces?service=$service&tags=$(urlq "$1")&lookback=1h&limit=100"; }
count() { python3 -c 'import json, sys; print(sum(len(t["spans"]) for t in json.load(sys.stdin)["data"] or []))'; }

per_task=$((steps + 1)) json='{}'
for ((i = 0; i < 60; i++)); do
	json=$(traces "{\"slurm.job.id\":\"$job\"}")
	(($(count <<<"$json") >= 4 * per_task)) && break
	sleep 0.5
done
# The tasks, as Jaeger has them: rank, node, GPU.
python3 - "$json" "$((4 * per_task))" <<'PY'
import json, sys
data = json.loads(sys.argv[1])["data"] or []
tasks, n = {}, 0
for t in data:
    for s in t["spans"]:
        n += 1
        tags = {x["key"]: str(x["value"]) for x in t["processes"][s["processID"]]["tags"]}
        tasks.setdefault(tags.get("nv.dl.rank", "-"), [tags, 0])[1] += 1
print(f"Jaeger holds {n} spans of the job ({len(tasks)} tasks):")
head = ("nv.dl.rank", "slurm.node.name", "nv.gpu.uuid", "slurm.job.id", "sdk", "spans")
rows = [(r, t.get("slurm.node.name", "-"), t.get("nv.gpu.uuid", "-"), t.get("slurm.job.id", "-"),
         t.get("telemetry.sdk.language", "-"), str(c)) for r, (t, c) in sorted(tasks.items())]
width = [max(len(r[i]) for r in rows + [head]) for i in range(len(head))]
for r in [head, tuple("-" * w for w in width)] + rows:
    print("  " + " ".join(c.ljust(w) for c, w in zip(r, width)).rstrip())
if n != int(sys.argv[2]):
    sys.exit(f"demo: Jaeger has {n} spans of the Python job, want {sys.argv[2]}")
PY
# rank2_tag KEY: the value of KEY in the resource of rank 2's spans.
rank2_tag() {
	python3 -c '
import json, sys
for t in json.load(sys.stdin)["data"]:
    for p in t["processes"].values():
        tags = {x["key"]: str(x["value"]) for x in p["tags"]}
        if tags.get("nv.dl.rank") == "2":
            print(tags[sys.argv[1]]); sys.exit()' "$1" <<<"$json"
}
gpu=$(rank2_tag nv.gpu.uuid)
node=$(rank2_tag slurm.node.name)
echo
echo "Found in Jaeger (service $service) by the job, by rank, by node and by the GPU rank 2 used:"
found() {
	local n
	n=$(traces "$1" | count)
	echo "  Tags: $1 -> $n spans (want $2)"
	[ "$n" -eq "$2" ] || { echo "demo: Jaeger finds $n spans for $1, want $2" >&2; return 1; }
}
found "{\"slurm.job.id\":\"$job\"}" $((4 * per_task))
found "{\"slurm.job.id\":\"$job\",\"nv.dl.rank\":\"2\"}" "$per_task"
found "{\"slurm.job.id\":\"$job\",\"slurm.node.name\":\"$node\"}" $((2 * per_task))
# A GPU alone names its job: the spans of the tasks that used it, in any job.
n=$(traces "{\"nv.gpu.uuid\":\"$gpu\"}" | count)
echo "  Tags: {\"nv.gpu.uuid\":\"$gpu\"} -> $n spans (this job's rank 2: $per_task; earlier jobs on that GPU too)"
((n >= per_task)) || { echo "demo: Jaeger finds $n spans for GPU $gpu" >&2; exit 1; }
echo

ui="$base/search?service=$service&tags=$(urlq "{\"nv.gpu.uuid\":\"$gpu\",\"slurm.job.id\":\"$job\"}")&lookback=1h&limit=20"
echo "  UI: $ui"
mkdir -p "$out"
timeout 120 chromium --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --hide-scrollbars \
	--window-size=1400,1000 --virtual-time-budget=20000 --screenshot="$out/jaeger-python.png" "$ui" \
	>/dev/null 2>&1
echo "Screenshot (Jaeger's search by the GPU's UUID): $out/jaeger-python.png"
