// Installs the OpenTelemetry SDK for this process when tracing is on (config.ts: the OTEL_*
// variables): the W3C trace context propagator (traceparent, tracestate), the sampler and the tail
// rule (sampling.ts), ids from a pool (ids.ts), and the export — the SDK's BatchSpanProcessor
// (OTEL_BSP_*: its queue bounds the spans waiting, and a full queue drops new ones with a warning
// in the log) in front of one exporter: the OpenTelemetry library's OTLP/HTTP exporter, protobuf
// (@opentelemetry/exporter-trace-otlp-proto) or JSON (-otlp-http), each reading its own
// OTEL_EXPORTER_OTLP_* variables (endpoint, headers, timeout, compression, certificates), or the
// console: one JSON line a span in the log (logExporter.ts). Tests pass an exporter of their own
// (the SDK's in-memory one) and get each span as it ends.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { diag, DiagLogLevel, propagation } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter as OTLPJsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as OTLPProtobufExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, SimpleSpanProcessor, TracerProvider, type SpanExporter } from '@opentelemetry/sdk-trace';
import { createLogger, type Logger } from '../logger';
import type { TracingConfig } from './config';
import { PooledIdGenerator } from './ids';
import { LogSpanExporter } from './logExporter';
import { useTracer } from './index';
import { headSampler, KeepFailures } from './sampling';

/** The SDK's warning for an operation on a span that has ended (Span.ts, _isSpanEnded). */
const ENDED_SPAN = /^Cannot execute the operation on ended Span/;

/** How long a stop waits for the last spans to be exported. */
const STOP_EXPORT_MS = 2_000;

export interface Tracing {
  /** Exports what has ended (a test reads its exporter after this). */
  flush(): Promise<void>;
  /** Exports what is left, then turns tracing off. */
  stop(): Promise<void>;
}

const VERSION = (JSON.parse(readFileSync(path.resolve(__dirname, '../../package.json'), 'utf8')) as { version: string }).version;

/**
 * The exporter the configuration names; the OTLP ones read their OTEL_EXPORTER_OTLP_* variables when
 * made. A flush (a stop's) sends every batch of the queue at once, and the OTLP exporter fails the
 * requests beyond its concurrency limit (30 unless told): the limit is a full queue's batches.
 */
function exporterOf(config: TracingConfig, logger: Logger | undefined): SpanExporter {
  if (config.exporter.kind === 'console') return new LogSpanExporter(logger ?? createLogger({ env: 'production' }));
  const options = { concurrencyLimit: Math.ceil(config.batch.maxQueueSize / config.batch.maxExportBatchSize) + 1 };
  return config.exporter.protocol === 'http/protobuf' ? new OTLPProtobufExporter(options) : new OTLPJsonExporter(options);
}

export function startTracing(config: TracingConfig, options: { logger?: Logger; exporter?: SpanExporter } = {}): Tracing {
  const { logger } = options;
  if (logger) {
    // The SDK's own complaints (an export that failed: the collector is down) go to the log — but
    // for a span changed after it ended: a client that leaves mid-operation ends the operation's
    // span (the response's 'close') while the claim goes on and sets its attributes, and one warning
    // per late attribute would multiply the log by the clients that time out in a storm.
    diag.setLogger(
      {
        error: (message, ...args) => logger.warn({ args: args.map(String) }, `tracing: ${message}`),
        warn: (message, ...args) => {
          if (!ENDED_SPAN.test(message)) logger.warn({ args: args.map(String) }, `tracing: ${message}`);
        },
        info: () => undefined,
        debug: () => undefined,
        verbose: () => undefined,
      },
      DiagLogLevel.WARN,
    );
  }
  // No context manager: spans are handed down explicitly (index.ts says why).
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  const processor = options.exporter
    ? new SimpleSpanProcessor({ exporter: options.exporter })
    : new BatchSpanProcessor({ exporter: exporterOf(config, logger), ...config.batch });
  const provider = new TracerProvider({
    sampler: headSampler(config.ratio, config.parentBased),
    idGenerator: new PooledIdGenerator(),
    resource: detectResources({ detectors: [envDetector] }).merge(resourceFromAttributes({ 'service.name': config.serviceName, 'service.version': VERSION })),
    spanProcessors: [new KeepFailures(processor)],
  });
  useTracer(provider.getTracer('tessera', VERSION));
  return {
    flush: () => provider.forceFlush(),
    async stop() {
      useTracer(null);
      // The last spans get STOP_EXPORT_MS to leave: a collector that is down must not hold up a shutdown.
      let timer: NodeJS.Timeout | undefined;
      const gaveUp = new Promise<void>((resolve) => (timer = setTimeout(() => resolve(logger?.warn('tracing: the last spans were not all exported in time')), STOP_EXPORT_MS)));
      await Promise.race([provider.shutdown().catch((error: unknown) => logger?.warn({ error: (error as Error).message }, 'tracing: the last spans could not be exported')), gaveUp]);
      clearTimeout(timer);
      propagation.disable();
      diag.disable();
    },
  };
}
