// The OTLP protobuf batch processor (src/tracing/otlpBatches.ts), which encodes each span as it
// ends and sends batches by the SDK's BatchSpanProcessor rules: what it sends is the library's
// encoding of the same spans, a batch leaves when full or after the schedule delay, one request at a
// time, spans beyond the queue's size are dropped with a warning, and forceFlush/shutdown wait for
// what was sent. The transport here records what it is given and answers when told (the HTTP
// transport itself: test/otlpProtobuf.test.ts, through a real server).
import { diag, DiagLogLevel, ROOT_CONTEXT, SpanKind, TraceFlags, trace, type Tracer } from '@opentelemetry/api';
import { ExportResultCode, type ExportResult } from '@opentelemetry/core';
import { ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { AlwaysOnSampler, InMemorySpanExporter, SimpleSpanProcessor, TracerProvider, type ReadableSpan } from '@opentelemetry/sdk-trace';
import type { TracingConfig } from '../src/tracing/config';
import { OtlpBatchProcessor } from '../src/tracing/otlpBatches';
import type { OtlpProtobufTransport } from '../src/tracing/otlpProtobuf';

/** A transport that keeps each request and answers it when `answer` is called (or at once, with `auto`). */
class Recorder {
  readonly requests: { bytes: Buffer; spans: number; answer: (result: ExportResult) => void }[] = [];
  auto: ExportResult | null = { code: ExportResultCode.SUCCESS };
  shutDown = false;

  send(bytes: Uint8Array, spans: number, answer: (result: ExportResult) => void): void {
    this.requests.push({ bytes: Buffer.from(bytes), spans, answer });
    if (this.auto) answer(this.auto);
  }

  shutdown(): Promise<void> {
    this.shutDown = true;
    return Promise.resolve();
  }
}

const LIMITS: TracingConfig['batch'] = { scheduledDelayMillis: 60_000, exportTimeoutMillis: 30_000, maxQueueSize: 2048, maxExportBatchSize: 10 };

/** A tracer whose spans go to the processor and, for comparison, to an in-memory exporter. */
function setUp(limits: Partial<TracingConfig['batch']> = {}) {
  const transport = new Recorder();
  const processor = new OtlpBatchProcessor({ ...LIMITS, ...limits }, transport as unknown as OtlpProtobufTransport);
  const memory = new InMemorySpanExporter();
  const provider = new TracerProvider({
    sampler: new AlwaysOnSampler(),
    resource: resourceFromAttributes({ 'service.name': 'tessera' }),
    spanProcessors: [new SimpleSpanProcessor({ exporter: memory }), processor],
  });
  const tracer = provider.getTracer('tessera', '0.1.0');
  const ended = (count: number, t: Tracer = tracer): void => {
    for (let i = 0; i < count; i += 1) t.startSpan(`span ${i}`, { kind: SpanKind.SERVER, attributes: { i, 'tessera.outcome': 'ALLOCATED' } }).end();
  };
  return { transport, processor, memory, provider, tracer, ended };
}

const library = (spans: ReadableSpan[]): Buffer => Buffer.from(ProtobufTraceSerializer.serializeRequest(spans)!);

describe('OtlpBatchProcessor', () => {
  afterEach(() => {
    jest.useRealTimers();
    diag.disable();
  });

  test('sends a batch as soon as it is full, encoded as the library encodes the same spans', async () => {
    const { transport, processor, memory, ended } = setUp();
    ended(9);
    expect(transport.requests).toHaveLength(0);
    ended(1);
    expect(transport.requests.map((r) => r.spans)).toEqual([10]);
    expect(transport.requests[0]!.bytes).toEqual(library(memory.getFinishedSpans()));
    ended(25);
    await new Promise((resolve) => setImmediate(resolve));
    expect(transport.requests.map((r) => r.spans)).toEqual([10, 10, 10]);
    expect(transport.requests[2]!.bytes).toEqual(library(memory.getFinishedSpans().slice(20, 30)));
    await processor.forceFlush();
    expect(transport.requests.map((r) => r.spans)).toEqual([10, 10, 10, 5]);
  });

  test('sends what waits after the schedule delay, and nothing when nothing waits', () => {
    jest.useFakeTimers();
    const { transport, memory, ended } = setUp({ scheduledDelayMillis: 1000 });
    jest.advanceTimersByTime(5000);
    expect(transport.requests).toHaveLength(0);
    ended(3);
    jest.advanceTimersByTime(999);
    expect(transport.requests).toHaveLength(0);
    jest.advanceTimersByTime(1);
    expect(transport.requests.map((r) => r.spans)).toEqual([3]);
    expect(transport.requests[0]!.bytes).toEqual(library(memory.getFinishedSpans()));
  });

  test('sends one request at a time: the next leaves when the last is answered', async () => {
    const { transport, processor, ended } = setUp();
    transport.auto = null;
    ended(30);
    expect(transport.requests.map((r) => r.spans)).toEqual([10]);
    transport.requests[0]!.answer({ code: ExportResultCode.SUCCESS });
    await new Promise((resolve) => setImmediate(resolve));
    expect(transport.requests.map((r) => r.spans)).toEqual([10, 10]);
    const flushed = processor.forceFlush();
    let done = false;
    void flushed.then(() => (done = true));
    transport.requests[1]!.answer({ code: ExportResultCode.SUCCESS });
    await new Promise((resolve) => setImmediate(resolve));
    expect(transport.requests.map((r) => r.spans)).toEqual([10, 10, 10]);
    expect(done).toBe(false);
    transport.requests[2]!.answer({ code: ExportResultCode.SUCCESS });
    await flushed;
  });

  test('drops spans beyond the queue’s size, says how many once there is room again, and sends the rest', async () => {
    const warnings: string[] = [];
    diag.setLogger({ error: () => undefined, warn: (m) => warnings.push(m), info: () => undefined, debug: () => undefined, verbose: () => undefined }, DiagLogLevel.WARN);
    const { transport, processor, memory, ended } = setUp({ maxQueueSize: 20 });
    transport.auto = null;
    ended(25); // two batches of 10 queued (one on its way), 5 dropped
    expect(transport.requests.map((r) => r.spans)).toEqual([10]);
    transport.requests[0]!.answer({ code: ExportResultCode.SUCCESS });
    await new Promise((resolve) => setImmediate(resolve));
    expect(warnings).toEqual([]);
    ended(1);
    expect(warnings).toEqual(['Dropped 5 spans because maxQueueSize reached']);
    transport.auto = { code: ExportResultCode.SUCCESS };
    transport.requests[1]!.answer({ code: ExportResultCode.SUCCESS });
    await processor.forceFlush();
    expect(transport.requests.map((r) => r.spans)).toEqual([10, 10, 1]);
    const all = memory.getFinishedSpans();
    expect(transport.requests[2]!.bytes).toEqual(library([all[25]!]));
  });

  test('a failed or unanswered request is logged and the next batch still leaves', async () => {
    jest.useFakeTimers();
    const errors: string[] = [];
    diag.setLogger({ error: (m) => errors.push(m), warn: () => undefined, info: () => undefined, debug: () => undefined, verbose: () => undefined }, DiagLogLevel.WARN);
    const { transport, ended } = setUp({ exportTimeoutMillis: 500 });
    transport.auto = { code: ExportResultCode.FAILED, error: new Error('collector said 503') };
    ended(10);
    await jest.advanceTimersByTimeAsync(0);
    expect(errors).toEqual(['span export failed: collector said 503']);
    transport.auto = null;
    ended(10);
    await jest.advanceTimersByTimeAsync(500);
    expect(errors[1]).toBe('span export failed: Timeout');
    ended(10);
    expect(transport.requests.map((r) => r.spans)).toEqual([10, 10, 10]);
  });

  test('spans of another resource go in a request of their own; spans not sampled are not sent', async () => {
    const { transport, processor, memory, ended } = setUp();
    const shared = new TracerProvider({ resource: resourceFromAttributes({ 'service.name': 'elsewhere' }), spanProcessors: [processor] });
    ended(2);
    ended(3, shared.getTracer('tessera', '0.1.0'));
    ended(1);
    await new Promise((resolve) => setImmediate(resolve));
    expect(transport.requests.map((r) => r.spans)).toEqual([2, 3]); // each left when the next resource's span came
    const unsampled = trace.setSpanContext(ROOT_CONTEXT, { traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331', traceFlags: TraceFlags.NONE, isRemote: true });
    memory.reset();
    shared.getTracer('tessera').startSpan('dropped by the parent-based sampler', {}, unsampled).end();
    await processor.forceFlush();
    expect(transport.requests.map((r) => r.spans)).toEqual([2, 3, 1]);
    expect(transport.requests[1]!.bytes.includes('elsewhere')).toBe(true);
    expect(transport.requests[2]!.bytes.includes('elsewhere')).toBe(false);
  });

  test('shutdown sends what waits, then shuts the transport down and takes no more spans', async () => {
    const { transport, processor, ended } = setUp();
    ended(4);
    await processor.shutdown();
    expect(transport.requests.map((r) => r.spans)).toEqual([4]);
    expect(transport.shutDown).toBe(true);
    ended(20);
    expect(transport.requests).toHaveLength(1);
  });
});
