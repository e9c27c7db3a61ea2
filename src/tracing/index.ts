// Tracing: what the rest of Tessera calls to make spans (docs/OBSERVABILITY.md has the tree of a
// claim). Off — the default — every helper here is one comparison and a direct call: no span, no
// context, no allocation of its own (`npm run bench` measures it). On, start.ts has installed the
// OpenTelemetry SDK and `tracer` is its tracer.
//
// Attributes never carry a secret, a key, a holder or metadata — ids, names, counts and codes only
// (test/tracing.test.ts searches every exported span for them).
import {
  context,
  createContextKey,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Link,
  type Span,
  type SpanContext,
  type Tracer,
} from '@opentelemetry/api';
import { pgErrorInfo } from '../db/pgErrors';

export { SpanKind, SpanStatusCode, type Span };

/** The SDK's tracer while tracing is on (start.ts sets it); null when off. */
let tracer: Tracer | null = null;

export const tracingOn = (): boolean => tracer !== null;

/** start.ts hands over the tracer (null again at shutdown). */
export function useTracer(next: Tracer | null): void {
  tracer = next;
}

/** The operation's own span (the transport's SERVER span), whatever span is active below it. */
const OPERATION = createContextKey('tessera.operation');
/** The name from src/db/ of the statement about to be sent (sql.ts names its span with it). */
const STATEMENT = createContextKey('tessera.statement');

/** Attribute names Tessera adds beside the semantic conventions' own. */
export const ATTR = {
  requestId: 'tessera.request_id',
  clientRequestId: 'tessera.client_request_id',
  transport: 'tessera.transport',
  outcome: 'tessera.outcome',
  cost: 'tessera.cost',
  viewer: 'tessera.viewer.kind',
  partnerId: 'tessera.partner.id',
  operatorId: 'tessera.operator.id',
  testKey: 'tessera.test_key',
  campaignId: 'tessera.campaign.id',
  claimOperation: 'tessera.claim.operation',
  allocationId: 'tessera.allocation.id',
  queuedMs: 'tessera.claim_group.queued_ms',
  groupId: 'tessera.claim_group.id',
  groupSize: 'tessera.claim_group.size',
  waits: 'tessera.second_look.waits',
  attempt: 'tessera.retry.attempt',
  retryReason: 'tessera.retry.reason',
  statement: 'tessera.db.statement',
} as const;

/**
 * Runs `fn` inside a span named `name` (a child of the active one), ended when `fn` settles: an
 * error thrown sets the span's status (and the SQLSTATE of a database error). Off: `fn(undefined)`.
 */
export function inSpan<T>(
  name: string,
  attributes: Attributes | undefined,
  fn: (span: Span | undefined) => Promise<T>,
  options?: { links?: Link[]; kind?: SpanKind; newTrace?: boolean },
): Promise<T> {
  if (tracer === null) return fn(undefined);
  const parent = options?.newTrace ? ROOT_CONTEXT : context.active();
  return tracer.startActiveSpan(name, { kind: options?.kind ?? SpanKind.INTERNAL, attributes, links: options?.links }, parent, (span) =>
    fn(span).then(
      (value) => {
        span.end();
        return value;
      },
      (error: unknown) => {
        failed(span, error);
        span.end();
        throw error;
      },
    ),
  );
}

/** Marks `span` as failed by `error`: status ERROR, its type, and the SQLSTATE of a database error. */
export function failed(span: Span, error: unknown): void {
  const code = pgErrorInfo(error).code;
  const extensionsCode = (error as { extensions?: { code?: unknown } } | null)?.extensions?.code;
  span.setStatus({ code: SpanStatusCode.ERROR, message: code ? `SQLSTATE ${code}` : typeof extensionsCode === 'string' ? extensionsCode : (error as Error)?.name });
  span.setAttribute('error.type', code ?? (typeof extensionsCode === 'string' ? extensionsCode : ((error as Error)?.name ?? 'Error')));
  if (code) span.setAttribute('db.response.status_code', code);
}

/** A span not made active (the batcher keeps one per waiting claim); undefined when off. */
export function startSpan(name: string, attributes?: Attributes, links?: Link[], parent?: Context): Span | undefined {
  if (tracer === null) return undefined;
  return tracer.startSpan(name, { kind: SpanKind.INTERNAL, attributes, links }, parent ?? context.active());
}

/** Runs `fn` with `span` active (its children under it); `fn()` as it is when there is no span. */
export function withSpan<T>(span: Span | undefined, fn: () => T): T {
  if (span === undefined) return fn();
  return context.with(trace.setSpan(context.active(), span), fn);
}

/**
 * An operation's SERVER span, continuing the caller's trace when `carrier` holds a W3C traceparent
 * (and tracestate), else beginning a new one; `fn` runs with it active and as the operation's span.
 * The caller ends the span. Off: `fn(undefined)`.
 */
export function inOperation<T>(name: string, carrier: Record<string, unknown> | undefined, attributes: Attributes, fn: (span: Span | undefined) => T): T {
  if (tracer === null) return fn(undefined);
  const parent = carrier ? propagation.extract(ROOT_CONTEXT, carrier, CARRIER) : ROOT_CONTEXT;
  const span = tracer.startSpan(name, { kind: SpanKind.SERVER, attributes }, parent);
  return context.with(trace.setSpan(parent, span).setValue(OPERATION, span), () => fn(span));
}

/** Reads traceparent/tracestate from headers or a plain object, whatever the case of the key. */
const CARRIER = {
  get(carrier: Record<string, unknown>, key: string): string | undefined {
    const value = carrier[key] ?? carrier[key.toLowerCase()];
    return typeof value === 'string' ? value : Array.isArray(value) && typeof value[0] === 'string' ? value[0] : undefined;
  },
  keys: (carrier: Record<string, unknown>) => Object.keys(carrier),
};

/** The active operation's SERVER span (inOperation), when tracing is on and one is active. */
export function operationSpan(): Span | undefined {
  if (tracer === null) return undefined;
  return context.active().getValue(OPERATION) as Span | undefined;
}

/** The active span's trace id, for log lines; undefined when off or outside a span. */
export function activeTraceId(): string | undefined {
  if (tracer === null) return undefined;
  const span = trace.getActiveSpan();
  return span?.isRecording() ? span.spanContext().traceId : undefined;
}

/** Runs `fn` with its statements named `name` (sql.ts): the name of a src/db/ function, never the text. */
export function named<T>(name: string, fn: () => T): T {
  if (tracer === null) return fn();
  return context.with(context.active().setValue(STATEMENT, name), fn);
}

/** The name given by `named` to the statement sent now, if any. */
export function statementName(): string | undefined {
  return context.active().getValue(STATEMENT) as string | undefined;
}

/** The tracer, for sql.ts; null when off. */
export const activeTracer = (): Tracer | null => tracer;

/** A W3C traceparent header for `span` (an outgoing webhook request carries its delivery's). */
export function traceparentOf(span: Span | undefined): Record<string, string> {
  if (span === undefined) return {};
  const headers: Record<string, string> = {};
  propagation.inject(trace.setSpan(ROOT_CONTEXT, span), headers);
  return headers;
}

/** A link to `spanContext`, or none. */
export const linkTo = (spanContext: SpanContext | undefined): Link[] => (spanContext ? [{ context: spanContext }] : []);

/**
 * The span that made each recent allocation, so that its webhook deliveries link to it (the
 * dispatcher runs in the process that claimed, most of the time: a delivery sent by another process,
 * or after a restart, has no link). The oldest are forgotten beyond REMEMBERED_ALLOCATIONS.
 */
const REMEMBERED_ALLOCATIONS = 100_000;
const allocationSpans = new Map<string, SpanContext>();

export function rememberAllocation(allocationId: string, span: Span | undefined): void {
  if (span === undefined) return;
  if (allocationSpans.size >= REMEMBERED_ALLOCATIONS) allocationSpans.delete(allocationSpans.keys().next().value!);
  allocationSpans.set(allocationId, span.spanContext());
}

export const allocationSpan = (allocationId: string): SpanContext | undefined => allocationSpans.get(allocationId);

/** The active span when tracing is on (a service adds its figures to it). */
export const activeSpan = (): Span | undefined => (tracer === null ? undefined : trace.getActiveSpan());

/** The operation's span named as the conventions have it (`mutation ClaimTicket`), with its type and name. */
export function describeOperation(span: Span, type: string, name: string | undefined): void {
  span.updateName(name ? `${type} ${name}` : type);
  span.setAttribute('graphql.operation.type', type);
  if (name) span.setAttribute('graphql.operation.name', name);
}

/**
 * An operation's outcome code: its first error's code, else the first typed error of a mutation's
 * payload (a claim's SOLD_OUT: `{ claimTicket: { error: { code } } }`), else OK.
 */
export function operationOutcome(errors: readonly { extensions?: Record<string, unknown> }[] | undefined, data: Record<string, unknown> | null | undefined): string {
  if (errors && errors.length > 0) return String(errors[0]!.extensions?.code ?? 'UNKNOWN');
  if (data) {
    for (const key in data) {
      const code = ((data[key] as { error?: { code?: unknown } | null } | null)?.error ?? undefined)?.code;
      if (typeof code === 'string') return code;
    }
  }
  return 'OK';
}

/** Makes `emitter`'s listeners run in the active context (a request's body events come from its connection's). */
export function bindToActive<E extends NodeJS.EventEmitter>(emitter: E): E {
  return tracer === null ? emitter : context.bind(context.active(), emitter);
}
