// Run by test/otlpExport.test.ts in a process of its own (the OTLP exporters' HTTP transport loads
// node:http by a dynamic import, which Jest's module system refuses): starts the log (JSON lines on
// stdout, level warn) and tracing as the server does — startTracing with the configuration the
// OTEL_* variables give — and makes CLAIMS claims' spans (1 unless set): each an operation span,
// the first continuing the traceparent in TRACEPARENT, with a claimOne statement span under it.
// With AFTER_MS it waits that long and makes one claim more. Then it stops tracing (which sends
// what waits) and prints one JSON line: the first operation span's ids and how long the stop took.
import { createLogger } from '../../src/logger';
import { ATTR, decideOutcome, describeOperation, inStatement, operationSpan } from '../../src/tracing';
import { tracingConfigFrom } from '../../src/tracing/config';
import { startTracing } from '../../src/tracing/start';

/** One claim's spans: the operation and its statement, ended in the order the server ends them. */
async function claim(traceparent: string | undefined, n: number) {
  const span = operationSpan('POST /graphql', traceparent ? { traceparent } : undefined, { 'http.request.method': 'POST', [ATTR.requestId]: `request-${n}` })!;
  describeOperation(span, 'mutation', 'ClaimTicket');
  await inStatement(span, 'claimOne', () => Promise.resolve([{ id: n }]));
  decideOutcome(span, 'ALLOCATED');
  span.end();
  return span.spanContext();
}

async function main(): Promise<void> {
  const config = tracingConfigFrom(process.env);
  if (config === null) throw new Error('tracing is off: set OTEL_EXPORTER_OTLP_ENDPOINT');
  const logger = createLogger({ env: 'production', level: 'warn' });
  const tracing = startTracing(config, { logger });
  const claims = Number(process.env.CLAIMS ?? 1);
  const first = await claim(process.env.TRACEPARENT, 0);
  for (let n = 1; n < claims; n += 1) await claim(undefined, n);
  if (process.env.AFTER_MS) {
    await new Promise((resolve) => setTimeout(resolve, Number(process.env.AFTER_MS)));
    await claim(undefined, claims);
  }
  const started = performance.now();
  await tracing.stop();
  console.log(JSON.stringify({ done: true, traceId: first.traceId, spanId: first.spanId, stopMs: Math.round(performance.now() - started) }));
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
