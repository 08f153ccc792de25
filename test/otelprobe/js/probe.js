// otel-probe-js NAME: sends one span named NAME through the OpenTelemetry JS
// SDK and its OTLP/HTTP exporter, then exits. The exporter reads
// OTEL_EXPORTER_OTLP_ENDPOINT; the Resource is the SDK's default merged
// with its environment detector (OTEL_RESOURCE_ATTRIBUTES,
// OTEL_SERVICE_NAME). The probe sets no attribute of its own.
'use strict';

const { NodeTracerProvider, SimpleSpanProcessor } = require('@opentelemetry/sdk-trace-node');
const { OTLPTraceExporter } = require('@opentelemetry/exporter-trace-otlp-http');
const { defaultResource, detectResources, envDetector } = require('@opentelemetry/resources');

async function main() {
  const name = process.argv[2];
  if (!name) {
    console.error('usage: otel-probe-js SPAN-NAME');
    process.exit(2);
  }
  const resource = defaultResource().merge(detectResources({ detectors: [envDetector] }));
  const exporter = new OTLPTraceExporter();
  const provider = new NodeTracerProvider({ resource, spanProcessors: [new SimpleSpanProcessor(exporter)] });
  let failed = null;
  // SimpleSpanProcessor exports when the span ends; shutdown waits for it.
  // An export error reaches only the global error handler, so wrap the
  // exporter's callback to see it.
  const exportOnce = exporter.export.bind(exporter);
  exporter.export = (spans, done) => exportOnce(spans, (result) => {
    if (result.code !== 0) failed = result.error || new Error('export failed');
    done(result);
  });
  provider.getTracer('otel-probe-js').startSpan(name).end();
  await provider.shutdown();
  if (failed) {
    console.error('otel-probe-js: export failed:', failed.message || failed);
    process.exit(1);
  }
}

main().catch((err) => {
  console.error('otel-probe-js:', err);
  process.exit(1);
});
