#!/bin/sh
# A TaskProlog piece (/etc/slurm/task-prolog.d): where the jobs' OpenTelemetry
# SDKs send their telemetry, as a site sets it for every job: the cluster's
# Jaeger. A job that chose an endpoint of its own keeps it.
[ -n "${OTEL_EXPORTER_OTLP_ENDPOINT:-}" ] || echo "export OTEL_EXPORTER_OTLP_ENDPOINT=http://jaeger:4318"
