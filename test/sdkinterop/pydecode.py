"""Decodes carriers with the OpenTelemetry Python SDK's OTELResourceDetector.

Reads JSON lines {"id": N, "carrier": HEX} on stdin, the carrier's bytes in
hex; for each sets OTEL_RESOURCE_ATTRIBUTES to them, runs the detector and
prints {"id": N, "attrs": [[KEY_HEX, VALUE_HEX], ...]}: the keys and values
as UTF-8 bytes (surrogateescape keeps bytes that are not UTF-8), so the Go
side compares bytes, not a JSON encoder's idea of them. The first line out
names the SDK and the Python it ran on.
"""
import json
import os
import sys

from opentelemetry.sdk.resources import OTELResourceDetector
from opentelemetry.sdk.version import __version__


def utf8(s):
    return s.encode("utf-8", "surrogateescape").hex()


def main():
    os.environ.pop("OTEL_SERVICE_NAME", None)
    print(json.dumps({"sdk": __version__, "python": sys.version.split()[0],
                      "detector": sys.modules[OTELResourceDetector.__module__].__file__}))
    for line in sys.stdin:
        req = json.loads(line)
        os.environb[b"OTEL_RESOURCE_ATTRIBUTES"] = bytes.fromhex(req["carrier"])
        attrs = OTELResourceDetector().detect().attributes
        for k, v in attrs.items():
            if not isinstance(v, str):
                sys.exit("carrier %d: attribute %r is %s, not a string" % (req["id"], k, type(v).__name__))
        print(json.dumps({"id": req["id"], "attrs": [[utf8(k), utf8(v)] for k, v in attrs.items()]}))


if __name__ == "__main__":
    main()
