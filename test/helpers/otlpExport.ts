// Run by test/otlpProtobuf.test.ts in a process of its own (the library's HTTP transport loads
// node:http by a dynamic import, which Jest's module system refuses): exports a few spans with
// OtlpProtobufExporter to wherever the OTEL_EXPORTER_OTLP_* variables say, and prints one JSON
// line — the export's result, and the library's own encoding of the same spans to compare with
// what the collector received.
import { SpanKind } from '@opentelemetry/api';
import { ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import { OtlpProtobufExporter } from '../../src/tracing/otlpProtobuf';

const memory = new InMemorySpanExporter();
const provider = new TracerProvider({ resource: resourceFromAttributes({ 'service.name': 'tessera' }), spanProcessors: [new SimpleSpanProcessor({ exporter: memory })] });
const tracer = provider.getTracer('tessera', '1.0.0');
for (let i = 0; i < 5; i += 1) tracer.startSpan(`span ${i}`, { kind: SpanKind.SERVER, attributes: { i, outcome: 'ALLOCATED' } }).end();
const spans = memory.getFinishedSpans();
const exporter = new OtlpProtobufExporter();
exporter.export(spans, (result) => {
  const library = Buffer.from(ProtobufTraceSerializer.serializeRequest(spans)!).toString('base64');
  console.log(JSON.stringify({ code: result.code, error: result.error?.message, library }));
  void exporter.shutdown();
});
