// Tracing: what the rest of Tessera calls to make spans (docs/OBSERVABILITY.md has the tree of a
// claim). Spans are handed down explicitly — the operation's span in its context (OperationContext's
// `trace`), each span to the calls under it — never through an async context: on Node 20 an
// AsyncLocalStorage context manager costs every promise of the process a hook, 12% of hot claims
// measured here with nothing else of tracing (bench/tracingAb.ts). Off — the default — `tracer` is
// null, no span is ever made, and every helper here is one comparison and a direct call.
//
// Attributes never carry a secret, a key, a holder or metadata — ids, names, counts and codes only
// (test/tracing.test.ts searches every exported span for them).
import { propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Attributes, type Link, type Span, type SpanContext, type Tracer } from '@opentelemetry/api';
import { pgErrorInfo } from '../db/pgErrors';
import { writeIdBytes } from './ids';

export { SpanKind, SpanStatusCode, type Link, type Span };

/** The SDK's tracer while tracing is on (start.ts sets it); null when off. */
let tracer: Tracer | null = null;

export const tracingOn = (): boolean => tracer !== null;

/** start.ts hands over the tracer (null again at shutdown). */
export function useTracer(next: Tracer | null): void {
  tracer = next;
}

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
  campaignId: 'tessera.campaign.id',
  allocationId: 'tessera.allocation.id',
  queuedMs: 'tessera.claim_group.queued_ms',
  firstLook: 'tessera.claim.first_look',
  groupId: 'tessera.claim_group.id',
  groupSize: 'tessera.claim_group.size',
  waits: 'tessera.second_look.waits',
  attempt: 'tessera.retry.attempt',
  retryReason: 'tessera.retry.reason',
  statement: 'tessera.db.statement',
  clientGone: 'tessera.client.gone',
} as const;

/** The outcome of an HTTP operation whose client left before its answer was written (and before anything decided one). */
export const CLIENT_GONE = 'CLIENT_GONE';

/** Reads traceparent/tracestate from headers or a plain object, whatever the case of the key. */
const CARRIER = {
  get(carrier: Record<string, unknown>, key: string): string | undefined {
    const value = carrier[key] ?? carrier[key.toLowerCase()];
    return typeof value === 'string' ? value : Array.isArray(value) && typeof value[0] === 'string' ? value[0] : undefined;
  },
  keys: (carrier: Record<string, unknown>) => Object.keys(carrier),
};

/**
 * An operation's SERVER span, continuing the caller's trace when `carrier` holds a W3C traceparent
 * (and tracestate), else beginning one; the caller ends it. Undefined when tracing is off.
 */
export function operationSpan(name: string, carrier: Record<string, unknown> | undefined, attributes: Attributes): Span | undefined {
  if (tracer === null) return undefined;
  // Most requests carry no traceparent: the propagator is asked only when one is there.
  const parent = carrier && CARRIER.get(carrier, 'traceparent') !== undefined ? propagation.extract(ROOT_CONTEXT, carrier, CARRIER) : ROOT_CONTEXT;
  return tracer.startSpan(name, { kind: SpanKind.SERVER, attributes }, parent);
}

/** A span of a trace of its own (a webhook delivery's), when tracing is on. */
export function rootSpan(name: string, attributes: Attributes, options: { kind?: SpanKind; links?: Link[] } = {}): Span | undefined {
  if (tracer === null) return undefined;
  return tracer.startSpan(name, { kind: options.kind ?? SpanKind.INTERNAL, attributes, links: options.links }, ROOT_CONTEXT);
}

/** A child of `parent`, not yet ended; undefined when there is no parent (tracing off). */
export function childSpan(
  parent: Span | undefined,
  name: string,
  attributes?: Attributes,
  options: { kind?: SpanKind; links?: Link[]; /** performance.now() when it began, if before now. */ startTime?: number } = {},
): Span | undefined {
  if (parent === undefined || tracer === null) return undefined;
  return tracer.startSpan(name, { kind: options.kind ?? SpanKind.INTERNAL, attributes, links: options.links, startTime: options.startTime }, trace.setSpan(ROOT_CONTEXT, parent));
}

/** Ends `span` when `work` settles, failed (failed()) if it rejects; `work` itself either way. */
export function endedWith<T>(span: Span, work: Promise<T>): Promise<T> {
  return work.then(
    (value) => {
      span.end();
      return value;
    },
    (error: unknown) => {
      failed(span, error);
      span.end();
      throw error;
    },
  );
}

/** Runs `fn` inside a child of `parent` named `name`, ended when it settles. No parent: `fn(undefined)`. */
export function inChild<T>(parent: Span | undefined, name: string, attributes: Attributes | undefined, fn: (span: Span | undefined) => Promise<T>): Promise<T> {
  if (parent === undefined || tracer === null) return fn(undefined);
  const span = childSpan(parent, name, attributes)!;
  return endedWith(span, fn(span));
}

/**
 * One SQL statement (or the one transaction a src/db/ function runs) as a CLIENT span under
 * `parent`, named by the function — never its text or values: the rows it returned, and the
 * SQLSTATE when it failed. No parent: `run()` alone.
 */
export function inStatement<T>(parent: Span | undefined, name: string, run: () => Promise<T>): Promise<T> {
  if (parent === undefined || tracer === null) return run();
  const span = childSpan(parent, name, { 'db.system.name': 'postgresql', [ATTR.statement]: name }, { kind: SpanKind.CLIENT })!;
  return endedWith(
    span,
    run().then((result) => {
      const rows = Array.isArray(result) ? result.length : (result as { rowCount?: number | null } | null)?.rowCount;
      if (typeof rows === 'number') span.setAttribute('db.response.returned_rows', rows);
      return result;
    }),
  );
}

/** Marks `span` as failed by `error`: status ERROR, its type, and the SQLSTATE of a database error. */
export function failed(span: Span, error: unknown): void {
  const code = pgErrorInfo(error).code;
  const extensionsCode = (error as { extensions?: { code?: unknown } } | null)?.extensions?.code;
  const type = code ?? (typeof extensionsCode === 'string' ? extensionsCode : ((error as Error | null)?.name ?? 'Error'));
  span.setStatus({ code: SpanStatusCode.ERROR, message: code ? `SQLSTATE ${code}` : type });
  span.setAttribute('error.type', type);
  if (code) span.setAttribute('db.response.status_code', code);
}

/** Sets the operation's outcome: a claim's (ALLOCATED, SOLD_OUT…), from the service that knows it best. */
export function decideOutcome(span: Span, code: string): void {
  span.setAttribute(ATTR.outcome, code);
}

/** Whether `span` has its outcome already (read from the SDK span's own attributes). */
export const outcomeDecided = (span: Span): boolean => (span as { attributes?: Attributes }).attributes?.[ATTR.outcome] !== undefined;

/**
 * The transport's outcome, once the answer is made: the first error's code, else what a service
 * decided (read back from the span's own attributes: no weak collection per request), else the
 * payload's (operationOutcome).
 */
export function settleOutcome(span: Span, errors: readonly { extensions?: Record<string, unknown> }[] | undefined, data: Record<string, unknown> | null | undefined): void {
  if ((errors && errors.length > 0) || !outcomeDecided(span)) span.setAttribute(ATTR.outcome, operationOutcome(errors, data));
}

/** The trace id of `span`, for a log line. */
export const traceIdOf = (span: Span | undefined): string | undefined => span?.spanContext().traceId;

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
 * or after a restart, has no link). A table of REMEMBERED_SLOTS slots, one per hash of the
 * allocation's id: a claim writes its slot, a delivery reads its own. It forgets: a later allocation
 * whose id lands in the same slot takes it — a delivery 10,000 claims after its claim found its link
 * 96% of the time. Bytes in typed arrays, not objects: a slot holds two hashes of the allocation's
 * id (the second tells a slot's owner from another id of the same slot; two ids alike in 50 bits
 * are one in a quadrillion) and the span's trace id, span id and flags. Objects kept there — the id
 * and the span's context, as the table first held them — outlived the young generation every claim
 * and were the old generation's garbage a table later: collector time on the claim path.
 * The alternatives, measured alike: a Map of the last 100,000 ids, 1.05 µs a claim; a ring searched
 * from the newest back, 0.07 µs a claim but 0.86 ms for a delivery whose allocation was not in it
 * (every delivery of another process's claim).
 */
const REMEMBERED_SLOTS = 1 << 18;
/** Per slot: the two hashes of the allocation id. */
const rememberedHashes = new Int32Array(REMEMBERED_SLOTS * 2);
/** Per slot: 16 bytes of trace id, 8 of span id, the trace flags; flags 0xff: empty. */
const SLOT_BYTES = 25;
const rememberedSpans = new Uint8Array(REMEMBERED_SLOTS * SLOT_BYTES).fill(0xff);

/** Two hashes of an id: of its last 12 characters (an allocation id's random part; its slot), and of all of it. */
function hashesOf(id: string): [number, number] {
  let slot = 0;
  let whole = 0x811c9dc5;
  for (let i = 0; i < id.length; i++) {
    const c = id.charCodeAt(i);
    if (i >= id.length - 12) slot = (Math.imul(slot, 31) + c) | 0;
    whole = Math.imul(whole ^ c, 0x01000193);
  }
  return [slot ^ (slot >>> 15), whole];
}

export function rememberAllocation(allocationId: string, span: Span | undefined): void {
  if (span === undefined) return;
  const [hash, whole] = hashesOf(allocationId);
  const slot = hash & (REMEMBERED_SLOTS - 1);
  const context = span.spanContext();
  rememberedHashes[slot * 2] = hash;
  rememberedHashes[slot * 2 + 1] = whole;
  const at = slot * SLOT_BYTES;
  writeIdBytes(context.traceId, rememberedSpans, at);
  writeIdBytes(context.spanId, rememberedSpans, at + 16);
  rememberedSpans[at + 24] = context.traceFlags & 0x7f;
}

export function allocationSpan(allocationId: string): SpanContext | undefined {
  const [hash, whole] = hashesOf(allocationId);
  const slot = hash & (REMEMBERED_SLOTS - 1);
  const at = slot * SLOT_BYTES;
  if (rememberedSpans[at + 24] === 0xff || rememberedHashes[slot * 2] !== hash || rememberedHashes[slot * 2 + 1] !== whole) return undefined;
  const ids = Buffer.from(rememberedSpans.buffer, at, 24);
  return { traceId: ids.toString('hex', 0, 16), spanId: ids.toString('hex', 16, 24), traceFlags: rememberedSpans[at + 24]!, isRemote: false };
}
