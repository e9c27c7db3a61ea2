// The batch span processor of OTLP/HTTP protobuf export: the SDK's BatchSpanProcessor's rules
// (OTEL_BSP_*: a queue of at most maxQueueSize spans, newer ones dropped when it is full; a
// request as soon as maxExportBatchSize spans wait, or scheduledDelayMillis after the first; one
// request at a time, given up after exportTimeoutMillis) with one difference: a span is encoded
// (otlpProtobuf.ts) when it ends, and the queue holds bytes. The SDK's processor holds the span
// objects themselves until their batch leaves — at 2,000 claims a second a batch of 512 waits a
// quarter of a second, long enough for its spans to outlive the young generation, and when the
// collector stops answering the queue advised for a storm (65,536 spans) held 196 MB of heap. Here
// a span dies young with its claim, and what waits is bytes off the heap: 46 MB for the same queue
// (docs/BENCHMARKS.md, "Tracing").
import { diag, TraceFlags, type Context } from '@opentelemetry/api';
import { ExportResultCode } from '@opentelemetry/core';
import type { Resource } from '@opentelemetry/resources';
import type { ReadableSpan, Span, SpanProcessor } from '@opentelemetry/sdk-trace';
import type { TracingConfig } from './config';
import { EncodedSpans, OtlpProtobufTransport } from './otlpProtobuf';

export class OtlpBatchProcessor implements SpanProcessor {
  /** The batch spans are encoded into now; full ones wait in `ready`. */
  private open: EncodedSpans | null = null;
  private readonly ready: EncodedSpans[] = [];
  /** Spans encoded and not yet sent (or given up on): what maxQueueSize limits. */
  private queued = 0;
  private dropped = 0;
  private sending = false;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  /** Called when nothing is left to send (forceFlush waits on them). */
  private readonly idle: (() => void)[] = [];

  constructor(
    private readonly limits: TracingConfig['batch'],
    private readonly transport = new OtlpProtobufTransport(),
  ) {}

  onStart(_span: Span, _parentContext: Context): void {}

  onEnd(span: ReadableSpan): void {
    if (this.stopped || (span.spanContext().traceFlags & TraceFlags.SAMPLED) === 0) return;
    if (this.queued >= this.limits.maxQueueSize) {
      this.dropped += 1;
      return;
    }
    if (this.dropped > 0) {
      diag.warn(`Dropped ${this.dropped} spans because maxQueueSize reached`);
      this.dropped = 0;
    }
    let batch = this.open;
    if (batch !== null && (batch.resource !== span.resource || batch.scope !== span.instrumentationScope)) {
      // Another resource or scope: the batch so far leaves now rather than wait for a timer.
      this.seal();
      this.sendNext();
      batch = null;
    }
    batch ??= this.open = new EncodedSpans(span.resource, span.instrumentationScope, this.limits.maxExportBatchSize);
    batch.add(span);
    this.queued += 1;
    if (batch.count >= this.limits.maxExportBatchSize) {
      this.seal();
      this.sendNext();
    } else if (this.timer === undefined) {
      this.timer = setTimeout(() => {
        this.timer = undefined;
        this.seal();
        this.sendNext();
      }, this.limits.scheduledDelayMillis).unref();
    }
  }

  /** Moves the open batch to the ones ready to leave. */
  private seal(): void {
    if (this.timer !== undefined) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    if (this.open === null) return;
    this.open.seal();
    this.ready.push(this.open);
    this.open = null;
  }

  /** Sends the oldest ready batch, unless one is on its way; the next when it is answered. */
  private sendNext(): void {
    if (this.sending) return;
    const batch = this.ready.shift();
    if (batch === undefined) {
      for (const resolve of this.idle.splice(0)) resolve();
      return;
    }
    this.sending = true;
    void this.send(batch).finally(() => {
      this.sending = false;
      this.queued -= batch.count;
      this.sendNext();
    });
  }

  private async send(batch: EncodedSpans): Promise<void> {
    const resource = batch.resource as Resource & { asyncAttributesPending?: boolean; waitForAsyncAttributes?: () => Promise<void> };
    let timer: NodeJS.Timeout | undefined;
    try {
      if (resource.asyncAttributesPending) await resource.waitForAsyncAttributes?.();
      const bytes = batch.request();
      await new Promise<void>((resolve, reject) => {
        timer = setTimeout(() => reject(new Error('Timeout')), this.limits.exportTimeoutMillis);
        this.transport.send(bytes, batch.count, (result) => (result.code === ExportResultCode.SUCCESS ? resolve() : reject(result.error ?? new Error('span export failed'))));
      });
    } catch (error) {
      // What the SDK's processor does with a failed export: the global error handler logs it.
      diag.error(`span export failed: ${(error as Error).message}`);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Sends every span ended so far; resolves when they have all been answered. */
  forceFlush(): Promise<void> {
    this.seal();
    if (!this.sending && this.ready.length === 0) return Promise.resolve();
    const done = new Promise<void>((resolve) => this.idle.push(resolve));
    this.sendNext();
    return done;
  }

  async shutdown(): Promise<void> {
    if (this.stopped) return;
    await this.forceFlush();
    this.stopped = true;
    await this.transport.shutdown();
  }
}
