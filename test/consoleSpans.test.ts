// OTEL_TRACES_EXPORTER=console (docs/OBSERVABILITY.md): every span is one JSON line of the log on
// stdout, among the log's own lines, so every line of stdout is one JSON object — read from a
// process of its own (test/helpers/consoleSpans.ts) writing to its real stdout.
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

let lines: string[];
let spans: Record<string, any>[];

beforeAll(async () => {
  const env: NodeJS.ProcessEnv = { ...process.env, OTEL_TRACES_EXPORTER: 'console', OTEL_BSP_SCHEDULE_DELAY: '60000' };
  delete env.OTEL_EXPORTER_OTLP_ENDPOINT;
  delete env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
  delete env.OTEL_SDK_DISABLED;
  const { stdout } = await run(process.execPath, ['--import', 'tsx', path.join(__dirname, 'helpers/consoleSpans.ts')], { env, timeout: 30_000 });
  lines = stdout.split('\n');
  expect(lines.pop()).toBe('');
  spans = lines.map((line) => JSON.parse(line) as Record<string, any>).filter((line) => line.msg === 'span');
});

test('every line of stdout is one JSON object: the log’s lines and one line per span', () => {
  for (const line of lines) expect(() => JSON.parse(line) as unknown).not.toThrow();
  expect(lines.map((line) => (JSON.parse(line) as { msg: string }).msg)).toEqual(['before the spans', 'after the spans', 'span', 'span', 'span', 'span', 'tracing stopped']);
});

test('a span’s line has its ids, parent, name, kind, times, attributes and status, at level info whatever LOG_LEVEL says', () => {
  const operation = spans.find((s) => s.name === 'mutation Claim')!;
  expect(operation).toMatchObject({ level: 30, service: 'tessera', kind: 'SERVER', attributes: { 'http.request.method': 'POST' }, status: { code: 'UNSET' } });
  expect(operation.traceId).toMatch(/^[0-9a-f]{32}$/);
  expect(operation.spanId).toMatch(/^[0-9a-f]{16}$/);
  expect(operation.parentSpanId).toBeUndefined();
  expect(Number.isNaN(Date.parse(operation.startTime))).toBe(false);
  expect(typeof operation.durationMs).toBe('number');

  const admission = spans.find((s) => s.name === 'admission')!;
  expect(admission).toMatchObject({ traceId: operation.traceId, parentSpanId: operation.spanId, kind: 'INTERNAL', attributes: { 'tessera.cost': 1 }, events: [{ name: 'admitted' }] });

  const statement = spans.find((s) => s.name === 'claimOne')!;
  expect(statement).toMatchObject({ traceId: operation.traceId, parentSpanId: operation.spanId, kind: 'CLIENT', status: { code: 'ERROR', message: 'RangeError' } });
  expect(statement.attributes).toMatchObject({ 'db.system.name': 'postgresql', 'error.type': 'RangeError' });

  const delivery = spans.find((s) => s.name === 'webhook delivery')!;
  expect(delivery.traceId).not.toBe(operation.traceId);
  expect(delivery).toMatchObject({ kind: 'PRODUCER', links: [{ traceId: operation.traceId, spanId: operation.spanId }], status: { code: 'ERROR' } });
});
