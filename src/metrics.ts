// Prometheus metrics (prom-client), served at GET /metrics. One registry per server instance, so
// several servers in one process (the tests) do not collide.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Pool } from 'pg';
import { queueState } from './db/webhookDeliveries';
import { droppedLogLines } from './logger';

export interface Metrics {
  readonly registry: Registry;
  /** Claims (claimTicket, holdTicket, claimTickets) by outcome: ALLOCATED, REPLAYED, a ClaimErrorCode, UNAVAILABLE or ERROR. */
  readonly claims: Counter<'operation' | 'outcome'>;
  readonly claimSeconds: Histogram<'operation' | 'outcome'>;
  /** Claims in test campaigns, kept out of the two above. */
  readonly testClaims: Counter<'operation' | 'outcome'>;
  /** Expired holds returned to the pool by the sweeper. */
  readonly holdsExpired: Counter;
  /** Claims per group statement (batches of two or more). */
  readonly batchSize: Histogram;
  /** GraphQL errors returned to clients, by extensions.code. */
  readonly graphqlErrors: Counter<'code'>;
  /** Requests refused before reaching the database because too many were already waiting. */
  readonly shed: Counter;
  /** Webhook attempts by outcome: delivered, retry (failed, tried again later), failed (for good). */
  readonly webhookDeliveries: Counter<'outcome'>;
  /** The same for test endpoints, never counted in webhookDeliveries. */
  readonly testWebhookDeliveries: Counter<'outcome'>;
}

export function createMetrics(pool: Pool): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'tessera_' });
  new Gauge({
    name: 'tessera_db_pool_connections',
    help: 'Database pool connections by state',
    labelNames: ['state'] as const,
    registers: [registry],
    collect() {
      this.set({ state: 'total' }, pool.totalCount);
      this.set({ state: 'idle' }, pool.idleCount);
      this.set({ state: 'in_use' }, pool.totalCount - pool.idleCount);
    },
  });
  new Gauge({
    name: 'tessera_db_pool_waiting',
    help: 'Requests waiting for a database connection',
    registers: [registry],
    collect() {
      this.set(pool.waitingCount);
    },
  });
  // A counter whose value lives in logger.ts (process-wide, counted before any server exists).
  new Counter({
    name: 'tessera_log_lines_dropped_total',
    help: 'Log lines dropped because stdout was closed or its reader had fallen too far behind',
    labelNames: ['reason'] as const,
    registers: [registry],
    collect() {
      this.reset();
      this.inc({ reason: 'full' }, droppedLogLines.full);
      this.inc({ reason: 'closed' }, droppedLogLines.closed);
    },
  });
  // The webhook queue, read from the database at each scrape; a scrape while the database is down
  // keeps the last values rather than failing.
  new Gauge({
    name: 'tessera_webhook_queue_depth',
    help: 'Live webhook work waiting: live campaigns\' events not yet drained from the outbox (undrained), live endpoints\' deliveries not yet delivered or failed (pending)',
    labelNames: ['stage'] as const,
    registers: [registry],
    async collect() {
      const q = await queueState(pool).catch(() => null);
      if (!q) return;
      this.set({ stage: 'undrained' }, q.undrained);
      this.set({ stage: 'pending' }, q.pending);
    },
  });
  new Gauge({
    name: 'tessera_webhook_oldest_pending_seconds',
    help: 'Age of the oldest pending webhook delivery, counted from its event',
    registers: [registry],
    async collect() {
      const q = await queueState(pool).catch(() => null);
      if (q) this.set(q.oldestSeconds);
    },
  });
  return {
    registry,
    claims: new Counter({
      name: 'tessera_claims_total',
      help: 'Claims by operation and outcome',
      labelNames: ['operation', 'outcome'] as const,
      registers: [registry],
    }),
    testClaims: new Counter({
      name: 'tessera_test_claims_total',
      help: 'Claims in test campaigns, by operation and outcome; never counted in tessera_claims_total or tessera_claim_duration_seconds',
      labelNames: ['operation', 'outcome'] as const,
      registers: [registry],
    }),
    batchSize: new Histogram({
      name: 'tessera_claim_batch_size',
      help: 'Claims served by one group statement',
      buckets: [2, 4, 8, 16, 32, 64, 128],
      registers: [registry],
    }),
    holdsExpired: new Counter({ name: 'tessera_holds_expired_total', help: 'Expired holds the sweeper returned to the pool', registers: [registry] }),
    claimSeconds: new Histogram({
      name: 'tessera_claim_duration_seconds',
      help: 'Claim latency inside the server (validation to answer), by operation and outcome',
      labelNames: ['operation', 'outcome'] as const,
      buckets: [0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    }),
    graphqlErrors: new Counter({
      name: 'tessera_graphql_errors_total',
      help: 'GraphQL errors returned, by code',
      labelNames: ['code'] as const,
      registers: [registry],
    }),
    shed: new Counter({
      name: 'tessera_requests_shed_total',
      help: 'Requests answered 503 at once because the database pool queue was full',
      registers: [registry],
    }),
    webhookDeliveries: new Counter({
      name: 'tessera_webhook_deliveries_total',
      help: 'Webhook attempts by outcome: delivered, retry (tried again later), failed (given up)',
      labelNames: ['outcome'] as const,
      registers: [registry],
    }),
    testWebhookDeliveries: new Counter({
      name: 'tessera_test_webhook_deliveries_total',
      help: 'Webhook attempts to test endpoints by outcome; never counted in tessera_webhook_deliveries_total',
      labelNames: ['outcome'] as const,
      registers: [registry],
    }),
  };
}
