// Run by test/otlpProtobuf.test.ts in a process of its own (the library's HTTP transport loads
// node:http by a dynamic import, which Jest's module system refuses): sends a few spans through
// OtlpBatchProcessor to wherever the OTEL_EXPORTER_OTLP_* variables say, and prints one JSON line —
// the export's result (failed when the processor logged an error), and the library's own encoding
// of the same spans to compare with what the collector received.
import { diag, DiagLogLevel, SpanKind } from '@opentelemetry/api';
import { ExportResultCode } from '@opentelemetry/core';
import { ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import { OtlpBatchProcessor } from '../../src/tracing/otlpBatches';

const errors: string[] = [];
diag.setLogger({ error: (message) => errors.push(message), warn: () => undefined, info: () => undefined, debug: () => undefined, verbose: () => undefined }, DiagLogLevel.WARN);
const memory = new InMemorySpanExporter();
const processor = new OtlpBatchProcessor({ scheduledDelayMillis: 5000, exportTimeoutMillis: 10_000, maxQueueSize: 2048, maxExportBatchSize: 512 });
const provider = new TracerProvider({ resource: resourceFromAttributes({ 'service.name': 'tessera' }), spanProcessors: [new SimpleSpanProcessor({ exporter: memory }), processor] });
const tracer = provider.getTracer('tessera', '1.0.0');
for (let i = 0; i < 5; i += 1) tracer.startSpan(`span ${i}`, { kind: SpanKind.SERVER, attributes: { i, outcome: 'ALLOCATED' } }).end();
void processor.forceFlush().then(async () => {
  const library = Buffer.from(ProtobufTraceSerializer.serializeRequest(memory.getFinishedSpans())!).toString('base64');
  console.log(JSON.stringify({ code: errors.length === 0 ? ExportResultCode.SUCCESS : ExportResultCode.FAILED, error: errors[0], library }));
  await processor.shutdown();
});
