// Tessera's own OTLP protobuf encoding (src/tracing/otlpProtobuf.ts) against the OpenTelemetry
// library's serializer: the same spans must give the same bytes, whatever they carry — every
// attribute type, strings past one length byte, events, links, trace state, remote parents, errors,
// each of several scopes and resources. And the batch processor built on it (otlpBatches.ts) sends them
// the library's way: the OTEL_EXPORTER_OTLP_* endpoint and headers, and a refused batch reported.
import { execFile } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import { context, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, TraceFlags, type Tracer } from '@opentelemetry/api';
import { ExportResultCode, TraceState } from '@opentelemetry/core';
import { ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider, type ReadableSpan } from '@opentelemetry/sdk-trace';
import { EncodedSpans } from '../src/tracing/otlpProtobuf';

const run = promisify(execFile);

/** A provider whose ended spans land in `exporter`, with a resource of its own. */
function provider(service: string): { tracer: (name: string, version?: string) => Tracer; spans: () => ReadableSpan[] } {
  const exporter = new InMemorySpanExporter();
  const p = new TracerProvider({
    resource: resourceFromAttributes({ 'service.name': service, 'service.version': '1.2.3', 'deployment.environment.name': 'tëst' }),
    spanProcessors: [new SimpleSpanProcessor({ exporter })],
  });
  return { tracer: (name, version) => p.getTracer(name, version), spans: () => exporter.getFinishedSpans() };
}

const library = (spans: ReadableSpan[]): Buffer => Buffer.from(ProtobufTraceSerializer.serializeRequest(spans)!);
/** Spans of one resource and one scope encoded as Tessera's batch processor does: one by one, then the request. */
function ours(spans: ReadableSpan[]): Buffer {
  const batch = new EncodedSpans(spans[0]!.resource, spans[0]!.instrumentationScope, spans.length);
  for (const span of spans) {
    if (span.resource !== batch.resource || span.instrumentationScope !== batch.scope) throw new Error('spans of one resource and one scope only');
    batch.add(span);
  }
  return Buffer.from(batch.request());
}

const remoteParent = trace.setSpanContext(ROOT_CONTEXT, {
  traceId: '0af7651916cd43dd8448eb211c80319c',
  spanId: 'b7ad6b7169203331',
  traceFlags: TraceFlags.SAMPLED,
  isRemote: true,
  traceState: new TraceState('vendor=opaque,other=1'),
});

describe('Tessera’s OTLP protobuf encoding', () => {
  test('gives the library’s bytes for a claim’s spans', () => {
    const { tracer, spans } = provider('tessera');
    const t = tracer('tessera', '0.1.0');
    const operation = t.startSpan('mutation ClaimTicket', { kind: SpanKind.SERVER, attributes: { 'http.request.method': 'POST' } }, remoteParent);
    operation.setAttributes({ 'tessera.request_id': '0f8fad5b-d9cb-469f-a165-70867728950e', 'tessera.cost': 1, 'tessera.claim_group.queued_ms': 1.234, 'tessera.outcome': 'ALLOCATED' });
    const statement = t.startSpan('claimGroup', { kind: SpanKind.CLIENT, links: [{ context: operation.spanContext() }] }, trace.setSpan(context.active(), operation));
    statement.setAttribute('db.response.returned_rows', 32);
    statement.end();
    operation.end();
    expect(ours(spans())).toEqual(library(spans()));
  });

  test('gives the library’s bytes for every attribute type, events, links, errors and long strings', () => {
    const { tracer, spans } = provider('tessera');
    const t = tracer('tessera');
    const long = 'x'.repeat(200);
    const huge = 'ü'.repeat(9000); // 18,000 bytes: a three-byte length
    const span = t.startSpan('everything', {
      kind: SpanKind.INTERNAL,
      attributes: {
        ascii: 'plain',
        unicode: 'Zürich — 東京 🎟',
        empty: '',
        long,
        huge,
        yes: true,
        no: false,
        zero: 0,
        int: 42,
        big: 2 ** 40,
        negative: -7,
        veryNegative: -(2 ** 45),
        double: 3.25,
        negativeDouble: -0.5,
        strings: ['a', 'bé', long],
        numbers: [1, 2.5, -3],
        bools: [true, false],
        none: [],
      },
      links: [
        { context: { traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b7', traceFlags: 1, isRemote: true, traceState: new TraceState('a=b') }, attributes: { why: 'retried', n: 2 } },
        { context: { traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b8', traceFlags: 0 } },
      ],
    });
    span.addEvent('tickets locked by claims in flight: waiting for them', { 'tessera.second_look.waits': 1, note: long });
    span.addEvent('bare');
    span.setStatus({ code: SpanStatusCode.ERROR, message: 'SQLSTATE 40P01 — deadlock détecté' });
    span.end();
    const ok = t.startSpan('ok');
    ok.setStatus({ code: SpanStatusCode.OK });
    ok.end();
    expect(ours(spans())).toEqual(library(spans()));
  });

  test('gives the library’s bytes for thousands of spans of each of two resources and three scopes', () => {
    const a = provider('tessera');
    const b = provider('tessera-eu');
    const tracers = [a.tracer('tessera', '1'), a.tracer('other', '2'), b.tracer('tessera')];
    for (let i = 0; i < 9000; i += 1) {
      const span = tracers[i % 3]!.startSpan(`span ${i}`, { kind: (i % 5) as SpanKind, attributes: { i, id: `id-${i}`, half: i / 2 } }, i % 7 === 0 ? remoteParent : undefined);
      span.end();
    }
    const groups = new Map<string, ReadableSpan[]>();
    for (const span of [...a.spans(), ...b.spans()]) {
      const key = `${String(span.resource.attributes['service.name'])} ${span.instrumentationScope.name} ${span.instrumentationScope.version ?? ''}`;
      groups.set(key, [...(groups.get(key) ?? []), span]);
    }
    expect(groups.size).toBe(3);
    for (const spans of groups.values()) {
      const encoded = ours(spans);
      expect(encoded.length).toBeGreaterThan(100_000);
      expect(encoded).toEqual(library(spans));
    }
  });

  test('spans encoded one by one as they end (EncodedSpans) give the same request', () => {
    const { tracer, spans } = provider('tessera');
    const t = tracer('tessera', '0.1.0');
    for (let i = 0; i < 300; i += 1) {
      const span = t.startSpan(`span ${i}`, { kind: SpanKind.SERVER, attributes: { i, id: `id-${i}`, long: 'ü'.repeat(i * 20) } }, i % 7 === 0 ? remoteParent : undefined);
      if (i % 5 === 0) span.addEvent('waiting', { waits: i });
      if (i % 11 === 0) span.setStatus({ code: SpanStatusCode.ERROR, message: 'SQLSTATE 40P01' });
      span.end();
    }
    const all = spans();
    const batch = new EncodedSpans(all[0]!.resource, all[0]!.instrumentationScope, 10);
    for (const span of all) batch.add(span);
    expect(batch.count).toBe(300);
    const encoded = Buffer.from(batch.request());
    expect(encoded.length).toBeGreaterThan(2 ** 20); // lengths of three bytes, and the writer grown past its first guess
    expect(encoded).toEqual(library(all));
  });
});

describe('OTLP over HTTP (OtlpBatchProcessor and its transport)', () => {
  let server: http.Server;
  let url: string;
  let status = 200;
  const received: { path: string; headers: http.IncomingHttpHeaders; body: Buffer }[] = [];

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        received.push({ path: req.url!, headers: req.headers, body: Buffer.concat(chunks) });
        res.writeHead(status, { 'content-type': 'application/x-protobuf' }).end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  /** test/helpers/otlpExport.ts in a process of its own with `env`: what it printed. */
  async function exportFrom(env: Record<string, string>): Promise<{ code: ExportResultCode; error?: string; library: string }> {
    const { stdout } = await run(process.execPath, ['--import', 'tsx', path.join(__dirname, 'helpers/otlpExport.ts')], { env: { ...process.env, ...env }, timeout: 30_000 });
    return JSON.parse(stdout.trim().split('\n').pop()!);
  }

  test('posts the encoded batch to OTEL_EXPORTER_OTLP_ENDPOINT/v1/traces with OTEL_EXPORTER_OTLP_HEADERS', async () => {
    received.length = 0;
    status = 200;
    const result = await exportFrom({ OTEL_EXPORTER_OTLP_ENDPOINT: url, OTEL_EXPORTER_OTLP_HEADERS: 'x-collector-key=abc123' });
    expect(result).toMatchObject({ code: ExportResultCode.SUCCESS });
    expect(received).toHaveLength(1);
    expect(received[0]).toMatchObject({ path: '/v1/traces', headers: { 'content-type': 'application/x-protobuf', 'x-collector-key': 'abc123' } });
    expect(received[0]!.body.toString('base64')).toBe(result.library);
  });

  test('the server’s tracing (startTracing with the OTEL_* variables) sends its spans there as OTLP protobuf', async () => {
    received.length = 0;
    status = 200;
    const callerTrace = '0af7651916cd43dd8448eb211c80319c';
    const { stdout } = await run(process.execPath, ['--import', 'tsx', path.join(__dirname, 'helpers/otlpStart.ts')], {
      env: { ...process.env, OTEL_EXPORTER_OTLP_ENDPOINT: url, TRACEPARENT: `00-${callerTrace}-b7ad6b7169203331-01` },
      timeout: 30_000,
    });
    const span = JSON.parse(stdout.trim().split('\n').pop()!) as { traceId: string; spanId: string };
    expect(span.traceId).toBe(callerTrace);
    expect(received).toHaveLength(1);
    expect(received[0]).toMatchObject({ path: '/v1/traces', headers: { 'content-type': 'application/x-protobuf' } });
    const body = received[0]!.body;
    expect(body.includes(Buffer.from(callerTrace, 'hex'))).toBe(true);
    expect(body.includes(Buffer.from(span.spanId, 'hex'))).toBe(true);
    expect(body.includes('mutation ClaimTicket')).toBe(true);
    expect(body.includes('service.name')).toBe(true);
  });

  test('reports a batch the collector refuses as failed', async () => {
    received.length = 0;
    status = 400;
    const result = await exportFrom({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${url}/custom/traces` });
    expect(result.code).toBe(ExportResultCode.FAILED);
    expect(received.map((r) => r.path)).toEqual(['/custom/traces']);
  });
});
