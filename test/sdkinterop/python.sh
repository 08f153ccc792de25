#!/usr/bin/env bash
# python.sh VERSION: TestPythonSDKAgrees with the Python of the node image of
# Slurm VERSION's test cluster (test/slurm-docker/cluster build --slurm
# VERSION; SPANK_OTEL_INSTANCE picks the instance's image as cluster does),
# whose Python has the OpenTelemetry Python SDK from its upstream archive
# and Debian's packages (test/slurm-docker/python.sh). No network, no root
# in that container.
set -euo pipefail
ver=${1:?usage: python.sh SLURM-VERSION}
image=spank-otel-slurm:$ver${SPANK_OTEL_INSTANCE:+-$SPANK_OTEL_INSTANCE}
docker image inspect "$image" >/dev/null ||
	{ echo "python.sh: no image $image; build it with test/slurm-docker/cluster build --slurm $ver" >&2; exit 1; }
cd "$(dirname "$0")"
export PATH=/usr/local/go/bin:$PATH
SPANK_OTEL_PYTHON="docker run --rm -i --network none --user 65534:65534 --entrypoint python3 $image" \
	go test -count=1 -run '^TestPythonSDKAgrees$' -v .
