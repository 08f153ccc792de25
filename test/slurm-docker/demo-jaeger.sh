#!/usr/bin/env bash
# demo-jaeger.sh SLURM-VERSION JOB-ID: the end of `make demo`, in the
# tracing backend. Prints the Jaeger UI address and the API query that list
# the job's spans by slurm.job.id, shows the spans found, and renders the
# UI's search page with Debian's headless Chromium to build/demo/jaeger.png
# (its DOM to build/demo/jaeger.html), failing unless the page lists them.
set -euo pipefail
slurm=$1 job=$2
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
out=$repo/build/demo
service=demo
# One span per task: 4 from otel-probe-go and 4 from otel-probe-js.
want=8

base=$("$here/cluster" jaeger-url --slurm "$slurm")
tags=$(printf '{"slurm.job.id":"%s"}' "$job")
enc=$(python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$tags")
ui="$base/search?service=$service&tags=$enc&lookback=1h&limit=20"
api="$base/api/traces?service=$service&tags=$enc&lookback=1h"

echo "The job's spans are in Jaeger. From this host:"
echo "  UI:  $ui"
echo "       (Search, Service: $service, Tags: slurm.job.id=$job)"
echo "  API: curl -s '$api'"
echo

json='{}'
for ((i = 0; i < 60; i++)); do
	json=$(curl -fsS "$api")
	n=$(python3 -c 'import json, sys; print(sum(len(t["spans"]) for t in json.load(sys.stdin)["data"] or []))' <<<"$json")
	((n >= want)) && break
	sleep 0.5
done
python3 - "$json" "$want" <<'PY'
import json, sys
data = json.loads(sys.argv[1])["data"] or []
rows = []
for t in data:
    for s in t["spans"]:
        tags = {x["key"]: str(x["value"]) for x in t["processes"][s["processID"]]["tags"]}
        rows.append((s["operationName"], tags.get("slurm.step.id", "-"), tags.get("slurm.task.id", "-"),
                     tags.get("slurm.node.name", "-"), tags.get("slurm.job.id", "-"),
                     tags.get("slurm.head_node.name", "-"), tags.get("nv.dl.job.uuid", "-"),
                     tags.get("team", "-"), tags.get("telemetry.sdk.language", "-")))
rows.sort()
head = ("span", "slurm.step.id", "slurm.task.id", "slurm.node.name", "slurm.job.id", "slurm.head_node.name",
        "nv.dl.job.uuid", "team", "sdk")
width = [max(len(r[i]) for r in rows + [head]) for i in range(len(head))]
for r in [head, tuple("-" * w for w in width)] + rows:
    print(" ".join(c.ljust(w) for c, w in zip(r, width)).rstrip())
print()
if len(rows) != int(sys.argv[2]):
    sys.exit(f"demo: Jaeger has {len(rows)} spans of the job, want {sys.argv[2]}")
PY

# Filtered by rank and by node, as a user narrows a job down: rank 0 of
# each probe's step, and the tasks on c1 (two per step of -N2 -n4).
filtered() {
	local tags=$1 enc n
	enc=$(python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$tags")
	n=$(curl -fsS "$base/api/traces?service=$service&tags=$enc&lookback=1h" |
		python3 -c 'import json, sys; print(sum(len(t["spans"]) for t in json.load(sys.stdin)["data"] or []))')
	echo "  Tags: $tags -> $n spans (want $2)"
	[ "$n" -eq "$2" ] || { echo "demo: Jaeger finds $n spans for $tags, want $2" >&2; return 1; }
}
echo "Narrowed down by rank and by node:"
filtered "$(printf '{"slurm.job.id":"%s","slurm.task.id":"0"}' "$job")" 2
filtered "$(printf '{"slurm.job.id":"%s","slurm.node.name":"c1"}' "$job")" 4
echo

# The UI's search page, as a browser shows it. Root needs --no-sandbox.
mkdir -p "$out"
chromium_run() {
	timeout 120 chromium --headless --no-sandbox --disable-gpu --disable-dev-shm-usage \
		--hide-scrollbars --window-size=1400,1000 --virtual-time-budget=20000 "$@" 2>/dev/null
}
chromium_run --screenshot="$out/jaeger.png" "$ui" >/dev/null
chromium_run --dump-dom "$ui" >"$out/jaeger.html"
# The page must list every trace the API found for the job, by id, with
# its name ("demo: otel-probe-go"), and nothing else.
python3 - "$json" "$out/jaeger.html" <<'PY'
import json, re, sys
api = {t["traceID"] for t in json.loads(sys.argv[1])["data"] or []}
dom = open(sys.argv[2], encoding="utf-8").read()
page = set(re.findall(r'href="/trace/([0-9a-f]+)"', dom))
text = re.sub(r"<[^>]*>", "", dom)
names = {n: text.count("demo: " + n) for n in ("otel-probe-go", "otel-probe-js")}
if page != api or f"{len(api)} Traces" not in text:
    sys.exit(f"demo: Jaeger's search page lists traces {sorted(page)}, the API {sorted(api)} (see {sys.argv[2]})")
print(f"Jaeger's search page lists the job's {len(api)} traces ({', '.join(f'{v} {k}' for k, v in names.items())}).")
PY
echo "Screenshot: $out/jaeger.png"
