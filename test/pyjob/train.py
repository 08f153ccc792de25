"""A training job shaped as ML engineers write one, traced with OpenTelemetry.

Set up the ordinary way: Resource.create() reads OTEL_RESOURCE_ATTRIBUTES
and OTEL_SERVICE_NAME, the OTLP/HTTP exporter OTEL_EXPORTER_OTLP_ENDPOINT.
Nothing here knows spank-otel. One span for the run, one per step.

    srun python3 train.py [STEPS]      one worker per Slurm task; the rank
                                       comes from the environment the
                                       launcher (here srun) gives
"""
import os
import random
import sys
import time

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor


def train(rank, world_size, steps, attributes=None):
    provider = TracerProvider(resource=Resource.create(attributes))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    tracer = provider.get_tracer("train")
    loss = 10.0
    with tracer.start_as_current_span("train") as run:
        run.set_attribute("train.rank", rank)
        run.set_attribute("train.world_size", world_size)
        for step in range(steps):
            with tracer.start_as_current_span("step") as span:
                time.sleep(0.01)  # forward, backward, all-reduce
                loss *= 0.9 + 0.05 * random.random()
                span.set_attribute("train.step", step)
                span.set_attribute("train.loss", loss)
    provider.shutdown()  # flushes the spans; False when the export failed
    print("rank %d of %d: %d steps, loss %.3f" % (rank, world_size, steps, loss))


def env_int(*names, default=0):
    for name in names:
        if os.environ.get(name):
            return int(os.environ[name])
    return default


if __name__ == "__main__":
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    train(env_int("RANK", "SLURM_PROCID"), env_int("WORLD_SIZE", "SLURM_NTASKS", default=1), steps)
