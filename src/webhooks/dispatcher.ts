// The webhook dispatcher, one per instance. Every tick it drains the outbox into
// deliveries and starts the attempts that are due, without waiting for the ones in flight:
//   - any instance delivers; a lease in PostgreSQL (db/webhookDeliveries.ts) keeps two from sending
//     one delivery at the same moment, and an attempt cut off by a crash is due again when its lease
//     ends (LEASE_MS, then the next tick);
//   - at most PER_ENDPOINT attempts in flight per endpoint across every instance, and MAX_IN_FLIGHT
//     in all from this process: a slow or dead endpoint holds its own few slots (each attempt ends
//     within the 10 s deadline), never the others';
//   - a failed attempt is retried on the schedule of backoff.ts, then FAILED;
//   - a delivery to a deleted endpoint, or to a revoked partner's, is FAILED unsent (the reason in
//     its last_error): nothing leaves for a partner whose key was revoked, even what was queued.
import type { Database } from '../db/client';
import { drainEvents, leaseDue, recordAttempt, type LeasedDelivery } from '../db/webhookDeliveries';
import type { Logger } from '../logger';
import type { Reachability } from '../reachability';
import type { Metrics } from '../metrics';
import { LEASE_MS, nextAttemptDelayMs } from './backoff';
import { deliverOnce, type AttemptResult } from './deliver';
import { allocationSpan, ATTR, failed, linkTo, rootSpan, SpanKind, SpanStatusCode, traceparentOf, tracingOn, type Span } from '../tracing';
import { openSecret } from './secrets';

/** How often the outbox and the due deliveries are looked at. */
export const POLL_MS = 250;
/** Events drained into deliveries per statement. */
const DRAIN_BATCH = 500;
/**
 * Attempts in flight from this process: sockets waiting on receivers, cheap to hold. Sixteen dead
 * endpoints together would fill it; each of them alone holds only its PER_ENDPOINT.
 */
const MAX_IN_FLIGHT = 256;
/**
 * Attempts in flight to one endpoint, from every instance together. Enough for a busy partner (16
 * at 50 ms a round trip is 320 events a second), few enough that a dead endpoint — each attempt
 * held for the 10 s deadline, or for the 20 s lease of an instance that was killed — ties up little.
 */
export const PER_ENDPOINT = 16;
/** How long a stop waits for attempts in flight; the rest are handed on by their leases. */
const STOP_WAIT_MS = 2_000;

/** A delivery's span attributes: ids, the event's type and the attempt (leasing counted it) — not the URL (it may carry a token), nor the body. */
function deliveryAttributes(d: LeasedDelivery): Record<string, string | number> {
  let type = 'unknown';
  try {
    type = String((JSON.parse(d.body) as { type?: unknown }).type ?? 'unknown');
  } catch {
    // a body is always JSON; a span is no place to fail
  }
  return { 'tessera.webhook.endpoint.id': d.endpoint_id, 'tessera.webhook.event.id': d.event_id, 'tessera.webhook.event.type': type, [ATTR.attempt]: d.attempts };
}

/** The span that made the delivery's allocation (tracing/index.ts remembers recent ones), if any. */
function allocationOf(d: LeasedDelivery) {
  try {
    const id = (JSON.parse(d.body) as { data?: { allocation?: { id?: unknown } } }).data?.allocation?.id;
    return typeof id === 'string' ? allocationSpan(id) : undefined;
  } catch {
    return undefined;
  }
}

function attempted(span: Span, result: AttemptResult): void {
  if (result.status !== null) span.setAttribute('http.response.status_code', result.status);
  span.setAttribute(ATTR.outcome, result.ok ? 'DELIVERED' : 'NOT_DELIVERED');
  if (!result.ok) span.setStatus({ code: SpanStatusCode.ERROR, message: result.error ?? 'not delivered' });
}

export interface DispatcherOptions {
  secretKey: Buffer | undefined;
  production: boolean;
  allowPrivateNetworks: boolean;
  pollMs?: number;
  /** Where an unreachable database is reported once (src/reachability.ts) instead of a warning per tick. */
  reachability?: Reachability;
}

export function startWebhookDispatcher(db: Database, logger: Logger, metrics: Metrics, options: DispatcherOptions): { stop(): Promise<void> } {
  const { secretKey } = options;
  // Without a key no endpoint can have been made here, and no secret could be opened.
  if (!secretKey) return { stop: async () => undefined };
  const attempts = new Set<Promise<void>>();
  const secrets = new Map<string, string>();
  let ticking: Promise<void> | null = null;
  let stopped = false;

  const count = () => attempts.size;
  // A test endpoint's attempts are counted apart from the live ones.
  const counter = (d: LeasedDelivery) => (d.test ? metrics.testWebhookDeliveries : metrics.webhookDeliveries);
  // Tracing on: each attempt is a span of its own trace, linked to the span that made its allocation.
  const attempt = (d: LeasedDelivery) => {
    if (!tracingOn()) return attemptIn(d, undefined);
    const span = rootSpan('tessera.webhook.delivery', deliveryAttributes(d), { kind: SpanKind.CLIENT, links: linkTo(allocationOf(d)) })!;
    return attemptIn(d, span).then(
      () => span.end(),
      (error: unknown) => {
        failed(span, error);
        span.end();
        throw error;
      },
    );
  };
  const attemptIn = async (d: LeasedDelivery, span: Span | undefined) => {
    if (!d.enabled || d.partner_revoked) {
      span?.setAttribute(ATTR.outcome, 'FAILED');
      await recordAttempt(db.pool, d.id, { status: 'FAILED', statusCode: null, error: d.enabled ? 'partner revoked' : 'endpoint deleted' }, span);
      counter(d).inc({ outcome: 'failed' });
      return;
    }
    let secret = secrets.get(d.endpoint_id);
    if (secret === undefined) secrets.set(d.endpoint_id, (secret = openSecret(d.secret_sealed, secretKey)));
    const result = await deliverOnce({
      url: d.url,
      body: d.body,
      eventId: d.event_id,
      secret,
      production: options.production,
      allowPrivate: options.allowPrivateNetworks,
      headers: traceparentOf(span),
    });
    if (span) attempted(span, result);
    // The partner reads only ADDRESS_NOT_ALLOWED (deliver.ts); which name and address, operators read here.
    if (result.detail !== undefined) logger.warn({ delivery: d.id, endpoint: d.endpoint_id, detail: result.detail }, `webhook attempt refused: ${result.error}`);
    if (result.ok) {
      await recordAttempt(db.pool, d.id, { status: 'DELIVERED', statusCode: result.status, error: null }, span);
      counter(d).inc({ outcome: 'delivered' });
      return;
    }
    const delay = nextAttemptDelayMs(d.attempts);
    if (delay === null) {
      await recordAttempt(db.pool, d.id, { status: 'FAILED', statusCode: result.status, error: result.error }, span);
      counter(d).inc({ outcome: 'failed' });
    } else {
      await recordAttempt(db.pool, d.id, { status: 'PENDING', statusCode: result.status, error: result.error, nextAttemptAt: new Date(Date.now() + delay) }, span);
      counter(d).inc({ outcome: 'retry' });
    }
  };
  const start = (d: LeasedDelivery) => {
    const running: Promise<void> = attempt(d)
      .catch((error: unknown) => logger.warn({ error: (error as Error).message, delivery: d.id }, 'webhook attempt could not be recorded; its lease will end and it is tried again'))
      .finally(() => attempts.delete(running));
    attempts.add(running);
  };

  const tick = async () => {
    try {
      while ((await drainEvents(db.pool, DRAIN_BATCH, db.dialect.outbox)) >= DRAIN_BATCH && !stopped);
      const room = MAX_IN_FLIGHT - count();
      if (room <= 0 || stopped) return;
      for (const d of await leaseDue(db.pool, { limit: room, perEndpoint: PER_ENDPOINT, leaseMs: LEASE_MS, outbox: db.dialect.outbox })) start(d);
      options.reachability?.answered();
    } catch (error) {
      if (!options.reachability?.failed(error, 'webhook dispatcher')) logger.warn({ error: (error as Error).message }, 'webhook dispatcher: tick failed; the next one retries');
    }
  };
  const timer = setInterval(() => {
    if (!ticking) ticking = tick().finally(() => (ticking = null));
  }, options.pollMs ?? POLL_MS);
  timer.unref();

  return {
    /** Stops leasing; attempts in flight end within their deadline (or their leases hand them to another instance). */
    async stop() {
      stopped = true;
      clearInterval(timer);
      await ticking;
      let wait: NodeJS.Timeout | undefined;
      await Promise.race([Promise.allSettled([...attempts]), new Promise((resolve) => (wait = setTimeout(resolve, STOP_WAIT_MS)))]);
      clearTimeout(wait);
    },
  };
}
