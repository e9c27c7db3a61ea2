// OTEL_TRACES_EXPORTER=console: each span as one JSON line of the log (pino, on stdout), beside the
// operations' lines and in their format, so that one reader — `jq`, a log shipper — takes both. A
// span's line is `"msg":"span"` with its ids, name, kind, start, duration in milliseconds,
// attributes, status, and its links and events when it has any: a look at the traces without a
// collector. The SDK's ConsoleSpanExporter prints each span as a multi-line console.dir of a
// JavaScript object instead (some 25 lines, not JSON), which splits the log into lines no JSON
// reader takes.
//
// The lines are written at level info whatever LOG_LEVEL says: asking for this exporter is asking
// to see the spans. They go through the log's own stdout writer, so they are bounded and dropped
// (and counted) like any log line when the reader of stdout falls behind (src/logger.ts).
import { SpanKind, SpanStatusCode, type HrTime } from '@opentelemetry/api';
import { ExportResultCode, hrTimeToMilliseconds, type ExportResult } from '@opentelemetry/core';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace';
import type { Logger } from '../logger';

/** What a span's line holds beside pino's own fields (level, time, pid, hostname, service, msg). */
export interface SpanLine {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: string;
  startTime: string;
  durationMs: number;
  attributes: Record<string, unknown>;
  status: { code: 'UNSET' | 'OK' | 'ERROR'; message?: string };
  links?: { traceId: string; spanId: string }[];
  events?: { name: string; time: string }[];
}

const STATUS = { [SpanStatusCode.UNSET]: 'UNSET', [SpanStatusCode.OK]: 'OK', [SpanStatusCode.ERROR]: 'ERROR' } as const;

const isoTime = (time: HrTime): string => new Date(hrTimeToMilliseconds(time)).toISOString();

/** The fields of `span`'s line. */
export function spanLine(span: ReadableSpan): SpanLine {
  const context = span.spanContext();
  const line: SpanLine = {
    traceId: context.traceId,
    spanId: context.spanId,
    parentSpanId: span.parentSpanContext?.spanId,
    name: span.name,
    kind: SpanKind[span.kind],
    startTime: isoTime(span.startTime),
    durationMs: Math.round(hrTimeToMilliseconds(span.duration) * 1000) / 1000,
    attributes: span.attributes,
    status: span.status.message ? { code: STATUS[span.status.code], message: span.status.message } : { code: STATUS[span.status.code] },
  };
  if (span.links.length > 0) line.links = span.links.map((link) => ({ traceId: link.context.traceId, spanId: link.context.spanId }));
  if (span.events.length > 0) line.events = span.events.map((event) => ({ name: event.name, time: isoTime(event.time) }));
  return line;
}

export class LogSpanExporter implements SpanExporter {
  private readonly logger: Logger;

  constructor(logger: Logger) {
    this.logger = logger.child({}, { level: 'info' });
  }

  export(spans: ReadableSpan[], done: (result: ExportResult) => void): void {
    for (const span of spans) this.logger.info(spanLine(span), 'span');
    done({ code: ExportResultCode.SUCCESS });
  }

  shutdown(): Promise<void> {
    return Promise.resolve();
  }

  forceFlush(): Promise<void> {
    return Promise.resolve();
  }
}
