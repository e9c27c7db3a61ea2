// Run by test/otlpProtobuf.test.ts in a process of its own (see otlpExport.ts for why): starts
// tracing as the server does — startTracing with the configuration the OTEL_* variables give —
// makes an operation span continuing the traceparent in TRACEPARENT, ends it, stops tracing (which
// sends what waits) and prints the span's trace and span ids as one JSON line.
import { operationSpan } from '../../src/tracing';
import { tracingConfigFrom } from '../../src/tracing/config';
import { startTracing } from '../../src/tracing/start';

const config = tracingConfigFrom(process.env);
if (config === null) throw new Error('tracing is off: set OTEL_EXPORTER_OTLP_ENDPOINT');
const tracing = startTracing(config);
const span = operationSpan('POST /graphql', { traceparent: process.env.TRACEPARENT }, { 'http.request.method': 'POST' })!;
span.updateName('mutation ClaimTicket');
span.end();
void tracing.stop().then(() => console.log(JSON.stringify(span.spanContext())));
