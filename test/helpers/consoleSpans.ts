// Run by test/consoleSpans.test.ts in a process of its own, so that what it checks is the process's
// real stdout: starts the log (createLogger, at LOG_LEVEL warn) and tracing as the server does, with
// the configuration the OTEL_* variables give (OTEL_TRACES_EXPORTER=console), and makes a small
// trace — an operation, a statement under it that fails, a delivery linked to the operation — with
// log lines of its own between them. Stops tracing, which writes what waits, and exits.
import { createLogger } from '../../src/logger';
import { childSpan, failed, inStatement, linkTo, operationSpan, rootSpan, SpanKind } from '../../src/tracing';
import { tracingConfigFrom } from '../../src/tracing/config';
import { startTracing } from '../../src/tracing/start';

async function main(): Promise<void> {
  const config = tracingConfigFrom(process.env);
  if (config === null) throw new Error('tracing is off: set OTEL_TRACES_EXPORTER=console');
  const logger = createLogger({ env: 'production', level: 'warn' });
  const tracing = startTracing(config, { logger });
  logger.warn({ step: 1 }, 'before the spans');
  const operation = operationSpan('POST /graphql', undefined, { 'http.request.method': 'POST' })!;
  operation.updateName('mutation Claim');
  const admission = childSpan(operation, 'admission', { 'tessera.cost': 1 })!;
  admission.addEvent('admitted');
  admission.end();
  await inStatement(operation, 'claimOne', () => Promise.reject(new RangeError('refused'))).catch(() => undefined);
  operation.end();
  const delivery = rootSpan('webhook delivery', { 'tessera.retry.attempt': 1 }, { kind: SpanKind.PRODUCER, links: linkTo(operation.spanContext()) })!;
  failed(delivery, new Error('refused'));
  delivery.end();
  logger.warn({ step: 2 }, 'after the spans');
  await tracing.stop();
  logger.warn({ step: 3 }, 'tracing stopped');
}

main().catch((error: unknown) => {
  process.stderr.write(`${(error as Error).stack}\n`);
  process.exitCode = 1;
});
