// Which traces leave the process. Head sampling first, as the specification has it: a caller's
// sampled flag is followed (parent-based), and a new trace is kept with the configured ratio
// (OTEL_TRACES_SAMPLER, OTEL_TRACES_SAMPLER_ARG). Then a tail rule, in the process: a trace the
// head decision dropped is still recorded, held here until its local root (the operation's span, or
// a webhook delivery's) ends, and exported after all when something in it failed or the operation
// was refused (its `tessera.outcome` is not a success) — so refusals and errors are always kept.
//
// What this cannot do (docs/OBSERVABILITY.md): spans a dropped trace sent elsewhere before the
// failure (the caller's own) are not recalled, and a failure's spans carry the sampled flag only
// in what Tessera exports — its outgoing traceparent had said "not sampled". A dropped trace costs
// the process as much as a kept one up to the export (it is recorded); the ratio saves the export
// and the collector's work, not Tessera's CPU.
import { isSpanContextValid, SpanStatusCode, trace, TraceFlags, type Context } from '@opentelemetry/api';
import { SamplingDecision, TraceIdRatioBasedSampler, type ReadableSpan, type Sampler, type SamplingResult, type Span, type SpanProcessor } from '@opentelemetry/sdk-trace';
import { ATTR } from './index';

/** Outcomes of an operation that are not refusals (the rest are kept whatever the ratio). */
const SUCCESSES = new Set(['OK', 'ALLOCATED', 'REPLAYED']);
/** Traces held at once waiting for their root, and spans per trace: beyond them, the oldest are let go. */
const MAX_HELD_TRACES = 4096;
const MAX_SPANS_PER_TRACE = 256;
/** A held trace whose root has not ended after this long is let go. */
const HELD_MS = 60_000;

/** The two answers the head sampler gives, made once (the SDK's samplers make one per span). */
const SAMPLED: SamplingResult = Object.freeze({ decision: SamplingDecision.RECORD_AND_SAMPLED });
const RECORDED: SamplingResult = Object.freeze({ decision: SamplingDecision.RECORD });

/**
 * The head sampler of the configuration, recording (never dropping) what it does not sample: the
 * SDK's parent-based rule — a parent's sampled flag is followed, a trace of Tessera's own is kept
 * with the ratio (the SDK's TraceIdRatioBasedSampler, the same trace id giving the same answer in
 * every service) — answered with the two results above. A parent of Tessera's own is valid by
 * construction; a caller's is checked as the SDK checks it.
 */
export function headSampler(ratio: number, parentBased: boolean): Sampler {
  const root = ratio >= 1 ? null : new TraceIdRatioBasedSampler(ratio);
  return {
    shouldSample(context: Context, traceId: string): SamplingResult {
      if (parentBased) {
        const parent = trace.getSpanContext(context);
        if (parent !== undefined && (parent.isRemote !== true || isSpanContextValid(parent))) return (parent.traceFlags & TraceFlags.SAMPLED) !== 0 ? SAMPLED : RECORDED;
      }
      if (root === null) return SAMPLED;
      return root.shouldSample(context, traceId).decision === SamplingDecision.RECORD_AND_SAMPLED ? SAMPLED : RECORDED;
    },
    toString: () => `KeepFailures{${parentBased ? 'ParentBased{root=' : ''}${root === null ? 'AlwaysOnSampler' : root.toString()}${parentBased ? '}' : ''}}`,
  };
}

/** A span the head sampler dropped, exported after all: the same span, flagged sampled. */
function asSampled(span: ReadableSpan): ReadableSpan {
  const spanContext = span.spanContext();
  const sampled = { ...spanContext, traceFlags: spanContext.traceFlags | TraceFlags.SAMPLED };
  return Object.create(span, { spanContext: { value: () => sampled } }) as ReadableSpan;
}

const failedOrRefused = (span: ReadableSpan): boolean => {
  if (span.status.code === SpanStatusCode.ERROR) return true;
  const outcome = span.attributes[ATTR.outcome];
  return typeof outcome === 'string' && !SUCCESSES.has(outcome);
};

/** Passes sampled spans on to `next`; holds the others per trace and passes a trace on when it failed. */
export class KeepFailures implements SpanProcessor {
  private readonly held = new Map<string, { spans: ReadableSpan[]; since: number; keep: boolean }>();

  constructor(private readonly next: SpanProcessor) {}

  onStart(span: Span, parentContext: Context): void {
    this.next.onStart(span, parentContext);
  }

  onEnd(span: ReadableSpan): void {
    const spanContext = span.spanContext();
    if ((spanContext.traceFlags & TraceFlags.SAMPLED) !== 0) {
      this.next.onEnd(span);
      return;
    }
    let trace = this.held.get(spanContext.traceId);
    if (trace === undefined) {
      this.letGoOfOld();
      this.held.set(spanContext.traceId, (trace = { spans: [], since: Date.now(), keep: false }));
    }
    if (trace.spans.length < MAX_SPANS_PER_TRACE) trace.spans.push(span);
    if (failedOrRefused(span)) trace.keep = true;
    const localRoot = span.parentSpanContext === undefined || span.parentSpanContext.isRemote === true;
    if (!localRoot) return;
    this.held.delete(spanContext.traceId);
    if (trace.keep) for (const held of trace.spans) this.next.onEnd(asSampled(held));
  }

  private letGoOfOld(): void {
    const now = Date.now();
    for (const [traceId, trace] of this.held) {
      if (this.held.size < MAX_HELD_TRACES && now - trace.since < HELD_MS) return;
      this.held.delete(traceId);
    }
  }

  forceFlush(): Promise<void> {
    return this.next.forceFlush();
  }

  shutdown(): Promise<void> {
    this.held.clear();
    return this.next.shutdown();
  }
}
