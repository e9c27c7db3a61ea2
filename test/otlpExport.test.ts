// Tracing's export as the server runs it (startTracing with the OTEL_* variables, in a process of its
// own: test/helpers/otlpStart.ts) to a real OTLP/HTTP receiver here that decodes what arrives: the
// spans reach OTEL_EXPORTER_OTLP_ENDPOINT/v1/traces (or the traces endpoint) as protobuf with the
// configured headers, the resource, the caller's trace and the attributes Tessera sets; batches hold
// at most OTEL_BSP_MAX_EXPORT_BATCH_SIZE spans, the queue at most OTEL_BSP_MAX_QUEUE_SIZE (the rest
// dropped, and the log says how many), a stop sends what waits — all of it, however many batches —
// and a collector that refuses or does not answer is logged, not waited for past OTEL_BSP_EXPORT_TIMEOUT.
import { execFile } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

// ExportTraceServiceRequest read from its wire format. The OpenTelemetry library serializes requests
// and reads responses but publishes no request decoder, so the fields the tests look at are read
// here by their numbers in opentelemetry/proto (trace/v1/trace.proto, common/v1/common.proto).

/** A message's fields by number: varints as numbers, everything else as its bytes. */
function fieldsOf(buf: Buffer): Map<number, (number | Buffer)[]> {
  const fields = new Map<number, (number | Buffer)[]>();
  let at = 0;
  const varint = (): number => {
    let value = 0;
    for (let shift = 0; ; shift += 7) {
      const byte = buf[at++]!;
      value += (byte & 0x7f) * 2 ** shift;
      if (byte < 0x80) return value;
    }
  };
  while (at < buf.length) {
    const key = varint();
    const wireType = key & 7;
    const size = wireType === 0 ? -1 : wireType === 1 ? 8 : wireType === 5 ? 4 : wireType === 2 ? varint() : NaN;
    if (Number.isNaN(size)) throw new Error(`wire type ${wireType} at ${at}`);
    const value = size < 0 ? varint() : buf.subarray(at, (at += size));
    const number = Math.floor(key / 8);
    fields.set(number, [...(fields.get(number) ?? []), value]);
  }
  return fields;
}

const bytes = (fields: Map<number, (number | Buffer)[]>, n: number): Buffer[] => (fields.get(n) ?? []) as Buffer[];
const text = (fields: Map<number, (number | Buffer)[]>, n: number): string | undefined => bytes(fields, n)[0]?.toString('utf8');
const hexOf = (fields: Map<number, (number | Buffer)[]>, n: number): string | undefined => bytes(fields, n)[0]?.toString('hex');

/** KeyValue list → object (AnyValue: 1 string, 2 bool, 3 int, 4 double). */
function attributesOf(list: Buffer[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const pair of list) {
    const kv = fieldsOf(pair);
    const value = fieldsOf(bytes(kv, 2)[0] ?? Buffer.alloc(0));
    out[text(kv, 1)!] = value.has(1) ? text(value, 1) : value.has(2) ? value.get(2)![0] === 1 : value.has(3) ? value.get(3)![0] : value.has(4) ? (value.get(4)![0] as Buffer).readDoubleLE() : undefined;
  }
  return out;
}

interface DecodedSpan {
  resource: Record<string, unknown>;
  scope: string | undefined;
  traceId: string;
  spanId: string;
  parentSpanId: string | undefined;
  name: string;
  /** OTLP's SpanKind: 1 internal, 2 server, 3 client. */
  kind: number;
  attributes: Record<string, unknown>;
}

function decodeTraceRequest(body: Buffer): DecodedSpan[] {
  const spans: DecodedSpan[] = [];
  for (const resourceSpans of bytes(fieldsOf(body), 1).map(fieldsOf)) {
    const resource = attributesOf(bytes(fieldsOf(bytes(resourceSpans, 1)[0] ?? Buffer.alloc(0)), 1));
    for (const scopeSpans of bytes(resourceSpans, 2).map(fieldsOf)) {
      const scope = text(fieldsOf(bytes(scopeSpans, 1)[0] ?? Buffer.alloc(0)), 1);
      for (const span of bytes(scopeSpans, 2).map(fieldsOf)) {
        spans.push({
          resource,
          scope,
          traceId: hexOf(span, 1)!,
          spanId: hexOf(span, 2)!,
          parentSpanId: hexOf(span, 4),
          name: text(span, 5)!,
          kind: (span.get(6)?.[0] as number | undefined) ?? 0,
          attributes: attributesOf(bytes(span, 9)),
        });
      }
    }
  }
  return spans;
}

interface Received {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

describe('OTLP export (the SDK’s batch processor and the library’s OTLP/HTTP exporter)', () => {
  let server: http.Server;
  let url: string;
  /** How the receiver answers: a status, after `delayMs` (never, when null). */
  let answer: { status: number; delayMs: number } | null = { status: 200, delayMs: 0 };
  const received: Received[] = [];

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        received.push({ path: req.url!, headers: req.headers, body: Buffer.concat(chunks) });
        const now = answer;
        if (now !== null) setTimeout(() => res.writeHead(now.status, { 'content-type': 'application/x-protobuf' }).end(), now.delayMs);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  beforeEach(() => {
    received.length = 0;
    answer = { status: 200, delayMs: 0 };
  });

  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  /** test/helpers/otlpStart.ts with `env`: its log lines and its own (the first claim's ids, the stop's time). */
  async function trace(env: Record<string, string>): Promise<{ logs: { msg: string; error?: string }[]; traceId: string; spanId: string; stopMs: number }> {
    const { stdout } = await run(process.execPath, ['--import', 'tsx', path.join(__dirname, 'helpers/otlpStart.ts')], { env: { ...process.env, ...env }, timeout: 30_000 });
    // The log's lines may come after the helper's own (pino writes them asynchronously).
    const lines = stdout.trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
    const last = lines.find((line) => line.done === true) as { traceId: string; spanId: string; stopMs: number };
    return { ...last, logs: lines.filter((line) => line.done !== true) as { msg: string; error?: string }[] };
  }

  const spansIn = (requests: Received[]): DecodedSpan[] => requests.flatMap((r) => decodeTraceRequest(r.body));

  test('spans reach OTEL_EXPORTER_OTLP_ENDPOINT/v1/traces as protobuf, with OTEL_EXPORTER_OTLP_HEADERS, the resource, the caller’s trace and Tessera’s attributes; a stop sends them', async () => {
    const callerTrace = '0af7651916cd43dd8448eb211c80319c';
    const callerSpan = 'b7ad6b7169203331';
    const result = await trace({
      OTEL_EXPORTER_OTLP_ENDPOINT: url,
      OTEL_EXPORTER_OTLP_HEADERS: 'x-collector-key=abc123',
      OTEL_SERVICE_NAME: 'tickets-eu',
      OTEL_BSP_SCHEDULE_DELAY: '60000', // nothing leaves by the timer: what arrives was sent by the stop
      TRACEPARENT: `00-${callerTrace}-${callerSpan}-01`,
    });
    expect(result.traceId).toBe(callerTrace);
    expect(received).toHaveLength(1);
    expect(received[0]).toMatchObject({ path: '/v1/traces', headers: { 'content-type': 'application/x-protobuf', 'x-collector-key': 'abc123' } });
    const spans = decodeTraceRequest(received[0]!.body);
    expect(spans.map((s) => s.name).sort()).toEqual(['claimOne', 'mutation ClaimTicket']);
    const operation = spans.find((s) => s.name === 'mutation ClaimTicket')!;
    const statement = spans.find((s) => s.name === 'claimOne')!;
    expect(operation).toMatchObject({ traceId: callerTrace, spanId: result.spanId, parentSpanId: callerSpan, kind: 2, scope: 'tessera' });
    expect(operation.resource).toMatchObject({ 'service.name': 'tickets-eu', 'service.version': expect.any(String) });
    expect(operation.attributes).toMatchObject({
      'http.request.method': 'POST',
      'graphql.operation.type': 'mutation',
      'graphql.operation.name': 'ClaimTicket',
      'tessera.request_id': 'request-0',
      'tessera.outcome': 'ALLOCATED',
    });
    expect(statement).toMatchObject({ traceId: callerTrace, parentSpanId: result.spanId, kind: 3 });
    expect(statement.attributes).toMatchObject({ 'db.system.name': 'postgresql', 'tessera.db.statement': 'claimOne', 'db.response.returned_rows': 1 });
    expect(result.logs).toEqual([]);
  });

  test('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is the whole URL; OTEL_EXPORTER_OTLP_PROTOCOL=http/json sends JSON', async () => {
    await trace({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${url}/custom/traces` });
    expect(received.map((r) => r.path)).toEqual(['/custom/traces']);
    expect(spansIn(received)).toHaveLength(2);
    received.length = 0;
    await trace({ OTEL_EXPORTER_OTLP_ENDPOINT: url, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' });
    expect(received).toHaveLength(1);
    expect(received[0]!.headers['content-type']).toBe('application/json');
    expect(received[0]!.body.toString()).toContain('"name":"mutation ClaimTicket"');
  });

  test('a batch holds at most OTEL_BSP_MAX_EXPORT_BATCH_SIZE spans; every span arrives, the last ones at the stop', async () => {
    await trace({ OTEL_EXPORTER_OTLP_ENDPOINT: url, OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '8', OTEL_BSP_SCHEDULE_DELAY: '60000', CLAIMS: '15' });
    const sizes = received.map((r) => decodeTraceRequest(r.body).length);
    expect(sizes.sort((a, b) => b - a)).toEqual([8, 8, 8, 6]);
    const requestIds = new Set(spansIn(received).map((s) => s.attributes['tessera.request_id']).filter(Boolean));
    expect(requestIds.size).toBe(15);
  });

  test('a stop sends a full queue at once, however many batches it makes (more than the exporter’s default 30 requests at a time)', async () => {
    // The collector answers after 300 ms: while the first batch of 2 waits for it the other 78
    // spans queue, and the stop sends them as 39 requests together.
    answer = { status: 200, delayMs: 300 };
    const result = await trace({ OTEL_EXPORTER_OTLP_ENDPOINT: url, OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '2', OTEL_BSP_SCHEDULE_DELAY: '60000', CLAIMS: '40' });
    expect(result.logs).toEqual([]);
    expect(received).toHaveLength(40);
    expect(spansIn(received)).toHaveLength(80);
  });

  test('beyond OTEL_BSP_MAX_QUEUE_SIZE waiting spans new ones are dropped, and the log says how many', async () => {
    // The collector takes 500 ms over its first answer: 10 spans are on their way, 20 wait, the
    // other 70 of the 50 claims are dropped; a claim after it has answered is queued again.
    answer = { status: 200, delayMs: 500 };
    const result = await trace({ OTEL_EXPORTER_OTLP_ENDPOINT: url, OTEL_BSP_MAX_QUEUE_SIZE: '20', OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '10', CLAIMS: '50', AFTER_MS: '3000' });
    expect(result.logs.map((l) => l.msg)).toEqual(['tracing: Dropped 70 spans because maxQueueSize reached']);
    const spans = spansIn(received);
    expect(spans).toHaveLength(32);
    expect(Math.max(...received.map((r) => decodeTraceRequest(r.body).length))).toBe(10);
    expect(spans.filter((s) => s.attributes['tessera.request_id'] === 'request-50')).toHaveLength(1); // the claim after: its operation span
  });

  test('a collector that refuses the spans is logged', async () => {
    answer = { status: 400, delayMs: 0 };
    const result = await trace({ OTEL_EXPORTER_OTLP_ENDPOINT: url });
    expect(received).toHaveLength(1);
    expect(result.logs.map((l) => l.msg)).toContain('tracing: the last spans could not be exported');
  });

  test('a collector that does not answer is given up on after OTEL_BSP_EXPORT_TIMEOUT, and the stop goes on', async () => {
    answer = null;
    // (The exporter's own request timeout, longer, ends the request and lets the process exit.)
    const result = await trace({ OTEL_EXPORTER_OTLP_ENDPOINT: url, OTEL_BSP_EXPORT_TIMEOUT: '300', OTEL_EXPORTER_OTLP_TIMEOUT: '1000' });
    expect(received).toHaveLength(1);
    expect(result.logs).toContainEqual(expect.objectContaining({ msg: 'tracing: the last spans could not be exported', error: 'Timeout' }));
    expect(result.stopMs).toBeLessThan(1500); // not the stop's own limit of 2 s
    server.closeAllConnections();
  });
});
