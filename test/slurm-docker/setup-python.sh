#!/bin/sh
# Runs in a container of spank-otel-slurm:<version>-base-testsuite (with the
# network, for apt) to make the Python layer (python.sh): the OpenTelemetry
# Python SDK from its upstream archive, with its runtime dependencies from
# Debian, as a site without the Python package index installs it. Usage:
# setup-python.sh with opentelemetry-python.tar.gz next to this script; it
# is removed when it ends.
#
# What the SDK's pyproject.toml files require, and Debian's (trixie for
# 25.11, sid for 26.05; docs/testing.md):
#   api, sdk, semantic-conventions: typing-extensions >= 4.5.0 (trixie 4.13,
#     sid 4.16; bookworm's 4.4.0 lacks typing_extensions.deprecated)
#   exporter-otlp-proto-http: requests ~= 2.7, googleapis-common-protos
#     ~= 1.52, and opentelemetry-proto's protobuf >= 5.0, < 8.0. Debian has
#     protobuf 3.21.12 (its Python module says 4.21.12): below the range,
#     yet the generated modules use only the builder API protobuf has had
#     since 3.20 and check no runtime version, so the exporter encodes and
#     sends; the check below and the cluster's Python jobs prove it.
#   exporter-otlp-proto-grpc: grpcio >= 1.63.2 (>= 1.75.1 on Python 3.14);
#     Debian has 1.51.1, and the generated stubs refuse it at import. Not
#     installed.
set -eu
src=$(dirname "$0")
trap 'rm -rf "$src"' EXIT

apt-get update -q
DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
	python3 python3-typing-extensions python3-requests python3-protobuf \
	python3-googleapis-common-protos
apt-get clean
rm -rf /var/lib/apt/lists/*

# The archive's packages, each from its own source folder, as pip's
# editable install would see them; the archive may or may not have one top
# directory (git archive or GitHub's download).
sdk=/usr/lib/spank-otel-test/opentelemetry-python
packages="opentelemetry-api opentelemetry-sdk opentelemetry-semantic-conventions opentelemetry-proto
exporter/opentelemetry-exporter-otlp-proto-common exporter/opentelemetry-exporter-otlp-proto-http"
tmp=$(mktemp -d)
tar -C "$tmp" -xzf "$src/opentelemetry-python.tar.gz"
top=$tmp
[ -d "$top/opentelemetry-sdk" ] || top=$(dirname "$(ls -d "$tmp"/*/opentelemetry-sdk)")
rm -rf "$sdk"
install -d -m 0755 "$sdk"
cp "$top/LICENSE" "$sdk/"
pth=$(python3 -c 'import site; print(site.getsitepackages()[0])')/opentelemetry-from-archive.pth
install -d -m 0755 "$(dirname "$pth")"
: >"$pth"
for p in $packages; do
	mkdir -p "$sdk/$p"
	cp -r "$top/$p/src" "$top/$p/pyproject.toml" "$sdk/$p/"
	echo "$sdk/$p/src" >>"$pth"
done
rm -rf "$tmp"
find "$sdk" -name __pycache__ -prune -exec rm -rf {} +
chmod -R a+rX "$sdk" "$pth"

python3 - <<'PY'
import google.protobuf, requests, sys, typing_extensions
from opentelemetry.sdk.resources import OTELResourceDetector, Resource
from opentelemetry.sdk.version import __version__
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
assert hasattr(typing_extensions, "deprecated")
print("setup-python: OpenTelemetry Python SDK %s on Python %s; Debian's protobuf %s, requests %s"
      % (__version__, sys.version.split()[0], google.protobuf.__version__, requests.__version__))
PY
