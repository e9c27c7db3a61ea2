// The dispatcher's statements (src/webhooks/dispatcher.ts, docs/WEBHOOKS.md).
//
// drainEvents: the outbox into deliveries, in one transaction — the events it takes (SKIP LOCKED:
// two instances never take the same one) are deleted from webhook_events and become one delivery
// per matching endpoint, with the JSON body every attempt will send. A crash before the commit
// leaves the events where they were; (endpoint_id, event_id) is unique, so nothing is doubled.
//
// leaseDue: deliveries due now, each leased (lease_until) so that no other instance sends it at the
// same moment; an attempt cut off by a crash is due again when its lease ends. An endpoint has at
// most its cap of live leases across every instance: leasers take turns (an advisory lock), so the
// count of leases in flight each one reads is exact. An allocation's deliveries to one endpoint go
// in the order of their events: one waits while an earlier one is still PENDING.
//
// A revoked partner (revokeApiKey; rotateApiKey restores it) gets nothing: drainEvents routes no
// event to its endpoints, and leaseDue says so of a delivery queued before the revocation, which the
// dispatcher then fails unsent. Both read partners.revoked_at itself, not the
// key cache: a revocation holds from the next drain and the next lease on every instance.
//
// Where the dialect's outbox is 'per-campaign' (Citus: webhook_events distributed by campaign,
// webhook_deliveries a reference table) two statements take another shape: the drain
// takes each campaign's events with a statement naming that campaign (a DELETE … FOR UPDATE over
// every shard is refused), all in the one transaction; the lease picks its deliveries with a SELECT,
// then leases them by id (Citus refuses clock_timestamp() in an UPDATE of a reference table, and
// fails to run the picking CTEs inside one). Plain PostgreSQL keeps its one statement each.
import type { Dialect } from './dialect';
import { isTestCampaignId } from '../testMode';
import { types, type CustomTypesConfig, type Pool, type PoolClient } from 'pg';
import { inStatement, type Span } from '../tracing';

/** The allocation's status each allocation event reports. */
const STATUS_OF: Record<string, string> = {
  ALLOCATION_CREATED: 'ACTIVE',
  HOLD_CREATED: 'HELD',
  HOLD_CONFIRMED: 'ACTIVE',
  ALLOCATION_RELEASED: 'RELEASED',
  HOLD_EXPIRED: 'EXPIRED',
};

interface EventRow {
  id: string;
  type: string;
  campaign_id: string;
  partner_id: string | null;
  allocation_id: string | null;
  expires_at: Date | null;
  data: unknown;
  created_at: Date;
  /** created_at to the microsecond (a Date keeps milliseconds): it orders an allocation's deliveries. */
  created_at_exact: string;
}

interface AllocationFacts {
  id: string;
  campaign_id: string;
  partner_id: string;
  holder: string;
  sequence: string;
  code: string;
}

interface EndpointRow {
  id: string;
  partner_id: string | null;
  events: string[];
  /** The campaigns a scoped partner key is limited to (scopePartnerKey); null = every campaign. */
  scope: string[] | null;
  /** A test endpoint: test campaigns' events only (a live one: live campaigns' only). */
  test: boolean;
}

/**
 * The events taken, at most $1 (SKIP LOCKED), in one statement; on Citus $2 names the campaign (see
 * drainEvents). created_at comes back as PostgreSQL prints it (RAW_TIMESTAMPTZ): Citus refuses
 * created_at::text in the RETURNING of a distributed table.
 */
const drainSql = (oneCampaign: boolean) => {
  const campaign = oneCampaign ? 'campaign_id = $2 AND ' : '';
  const only = oneCampaign ? 'WHERE campaign_id = $2 ' : '';
  return `
DELETE FROM webhook_events
 WHERE ${campaign}ctid = ANY (ARRAY(SELECT ctid FROM webhook_events ${only}LIMIT $1 FOR UPDATE SKIP LOCKED))
RETURNING id, type, campaign_id, partner_id, allocation_id, expires_at, data, created_at`;
};
const DRAIN_SQL = drainSql(false);
const DRAIN_CAMPAIGN_SQL = drainSql(true);

const TIMESTAMPTZ = 1184;
const parseTimestamptz = types.getTypeParser(TIMESTAMPTZ);
/** Every timestamptz as its text: the drain parses created_at and expires_at itself (toEvent). */
const RAW_TIMESTAMPTZ: CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === TIMESTAMPTZ ? (value: string) => value : types.getTypeParser(oid, format as 'text')) as CustomTypesConfig['getTypeParser'],
};

type RawEventRow = Omit<EventRow, 'created_at' | 'created_at_exact' | 'expires_at'> & { created_at: string; expires_at: string | null };

const toEvent = (r: RawEventRow): EventRow => ({
  ...r,
  expires_at: r.expires_at === null ? null : (parseTimestamptz(r.expires_at) as Date),
  created_at: parseTimestamptz(r.created_at) as Date,
  created_at_exact: r.created_at,
});

/**
 * Whether `endpoint` receives `event`: its type is asked for, the event's campaign is of the
 * endpoint's mode (test or live), it is the operator's, the partner's own, or campaign-wide, and
 * its campaign is within the partner's scope. (A revoked partner's
 * endpoints are not among the endpoints at all: insertDeliveries.)
 */
const routes = (endpoint: EndpointRow, event: EventRow) =>
  endpoint.events.includes(event.type) &&
  endpoint.test === isTestCampaignId(event.campaign_id) &&
  (endpoint.partner_id === null || event.partner_id === null || endpoint.partner_id === event.partner_id) &&
  (endpoint.scope === null || endpoint.scope.includes(event.campaign_id));

/**
 * The body of an event, as the contract gives it: {id, type, createdAt, data}, and `livemode`: false
 * for a test campaign's event (a test endpoint receives nothing else). A campaign event
 * brought its data from its transaction (tessera_campaign_event_data); an allocation event's is
 * made here from the allocation's columns that never change and the status its type implies.
 */
function bodyOf(event: EventRow, allocation: AllocationFacts | undefined): string {
  let data: unknown = event.data;
  if (event.allocation_id !== null) {
    data = {
      allocation: {
        id: event.allocation_id,
        campaignId: event.campaign_id,
        partnerId: event.partner_id,
        holder: allocation?.holder ?? null,
        sequence: allocation ? Number(allocation.sequence) : null,
        status: STATUS_OF[event.type] ?? null,
        expiresAt: event.expires_at ? event.expires_at.toISOString() : null,
        ticket: { code: allocation?.code ?? null },
      },
    };
  }
  return JSON.stringify({ id: event.id, type: event.type, createdAt: event.created_at.toISOString(), livemode: !isTestCampaignId(event.campaign_id), data });
}

/** Drains up to `limit` events into deliveries, as the dialect's `outbox` says; returns how many events it took. */
export async function drainEvents(pool: Pool, limit: number, outbox: Dialect['outbox'] = 'one-statement'): Promise<number> {
  const citus = outbox === 'per-campaign';
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    // Per campaign (Citus): the campaigns with events (one read of every shard, unlocked), then each
    // campaign's events by a statement routed to its shard. An event appended meanwhile waits for the next drain.
    const campaigns = citus ? (await client.query<{ campaign_id: string }>('SELECT DISTINCT campaign_id FROM webhook_events')).rows : [];
    if (citus && campaigns.length === 0) return 0;
    await client.query('BEGIN');
    const events: EventRow[] = [];
    if (!citus) {
      events.push(...(await client.query<RawEventRow>({ text: DRAIN_SQL, values: [limit], types: RAW_TIMESTAMPTZ })).rows.map(toEvent));
    }
    for (const { campaign_id } of campaigns) {
      if (events.length >= limit) break;
      const { rows } = await client.query<RawEventRow>({ text: DRAIN_CAMPAIGN_SQL, values: [limit - events.length, campaign_id], types: RAW_TIMESTAMPTZ });
      events.push(...rows.map(toEvent));
    }
    if (events.length > 0) await insertDeliveries(client, events);
    await client.query('COMMIT');
    return events.length;
  } catch (error) {
    await client.query('ROLLBACK').catch((rollback: Error) => (broken = rollback));
    throw error;
  } finally {
    client.release(broken); // a connection that could not roll back is closed, not pooled
  }
}

async function insertDeliveries(client: PoolClient, drained: EventRow[]): Promise<void> {
  const { rows: endpoints } = await client.query<EndpointRow>(
    `SELECT e.id, e.partner_id, e.events, e.test, CASE WHEN p.scoped THEN p.campaign_scope::text[] END AS scope
       FROM webhook_endpoints e LEFT JOIN partners p ON p.id = e.partner_id
      WHERE e.enabled AND p.revoked_at IS NULL`,
  );
  // Only the events some endpoint receives need their allocation read.
  const events = drained.filter((e) => endpoints.some((endpoint) => routes(endpoint, e)));
  if (events.length === 0) return;
  const allocationEvents = events.filter((e) => e.allocation_id !== null);
  // By key (= ANY on both columns of the primary key), never a join on unnest(): planned generically
  // (plan_cache_mode) without statistics, that join once became nested loops over whole tables —
  // five seconds for 500 events, then the statement timeout, on every tick (chaos scenario g).
  const { rows: facts } = await client.query<AllocationFacts>(
    `SELECT a.id, a.campaign_id, a.partner_id, a.holder, a.sequence::text AS sequence, t.code
       FROM allocations a
       JOIN tickets t ON t.campaign_id = a.campaign_id AND t.id = a.ticket_id
      WHERE a.campaign_id = ANY($1::uuid[]) AND a.id = ANY($2::uuid[])`,
    [[...new Set(allocationEvents.map((e) => e.campaign_id))], allocationEvents.map((e) => e.allocation_id)],
  );
  const allocations = new Map(facts.map((f) => [f.id, f]));
  const rows: [string, string, string, string | null, string, string][] = [];
  for (const event of events) {
    const body = bodyOf(event, event.allocation_id ? allocations.get(event.allocation_id) : undefined);
    for (const endpoint of endpoints) if (routes(endpoint, event)) rows.push([endpoint.id, event.id, event.type, event.allocation_id, event.created_at_exact, body]);
  }
  if (rows.length === 0) return;
  await client.query(
    `INSERT INTO webhook_deliveries (endpoint_id, event_id, event, allocation_id, event_created_at, body)
     SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::uuid[], $5::timestamptz[], $6::text[])
     ON CONFLICT (endpoint_id, event_id) DO NOTHING`,
    [0, 1, 2, 3, 4, 5].map((i) => rows.map((r) => r[i])),
  );
}

export interface LeasedDelivery {
  id: string;
  endpoint_id: string;
  event_id: string;
  body: string;
  attempts: number;
  url: string;
  secret_sealed: string;
  enabled: boolean;
  /** The endpoint's partner is revoked: the delivery is not to be sent. */
  partner_revoked: boolean;
  /** A test endpoint's: counted apart from the live deliveries. */
  test: boolean;
}

const LEASE_SQL = `
WITH busy AS (
  SELECT endpoint_id, count(*) AS n FROM webhook_deliveries
   WHERE status = 'PENDING' AND lease_until > clock_timestamp()
   GROUP BY endpoint_id
),
candidates AS (
  SELECT d.id, row_number() OVER (PARTITION BY d.endpoint_id ORDER BY d.next_attempt_at, d.id) + COALESCE(b.n, 0) AS rank
    FROM webhook_deliveries d LEFT JOIN busy b ON b.endpoint_id = d.endpoint_id
   WHERE d.status = 'PENDING' AND d.next_attempt_at <= clock_timestamp()
     AND (d.lease_until IS NULL OR d.lease_until <= clock_timestamp())
     AND COALESCE(b.n, 0) < $3
     AND NOT EXISTS (SELECT 1 FROM webhook_deliveries p
                      WHERE p.endpoint_id = d.endpoint_id AND p.allocation_id = d.allocation_id AND p.status = 'PENDING'
                        AND (p.event_created_at, p.id) < (d.event_created_at, d.id))
   ORDER BY d.next_attempt_at
   LIMIT $1 * 4
),
leased AS (
  SELECT d.id FROM webhook_deliveries d JOIN candidates c ON c.id = d.id
   WHERE c.rank <= $3 AND d.status = 'PENDING' AND (d.lease_until IS NULL OR d.lease_until <= clock_timestamp())
   ORDER BY d.next_attempt_at
   LIMIT $1
   FOR UPDATE OF d SKIP LOCKED
)
UPDATE webhook_deliveries d
   SET lease_until = clock_timestamp() + make_interval(secs => $2::double precision / 1000), attempts = d.attempts + 1
  FROM leased l, webhook_endpoints e
 WHERE d.id = l.id AND e.id = d.endpoint_id
RETURNING d.id, d.endpoint_id, d.event_id, d.body, d.attempts, e.url, e.secret_sealed, e.enabled, e.test,
          EXISTS (SELECT 1 FROM partners p WHERE p.id = e.partner_id AND p.revoked_at IS NOT NULL) AS partner_revoked`;

/**
 * Citus: LEASE_SQL's choice as a read (statement_timestamp() for the clock, no row locks: the leasers
 * take turns under the advisory lock, and LEASE_BY_ID checks each row again as it leases it).
 */
const PICK_SQL = `
WITH busy AS (
  SELECT endpoint_id, count(*) AS n FROM webhook_deliveries
   WHERE status = 'PENDING' AND lease_until > statement_timestamp()
   GROUP BY endpoint_id
),
candidates AS (
  SELECT d.id, d.next_attempt_at, row_number() OVER (PARTITION BY d.endpoint_id ORDER BY d.next_attempt_at, d.id) + COALESCE(b.n, 0) AS rank
    FROM webhook_deliveries d LEFT JOIN busy b ON b.endpoint_id = d.endpoint_id
   WHERE d.status = 'PENDING' AND d.next_attempt_at <= statement_timestamp()
     AND (d.lease_until IS NULL OR d.lease_until <= statement_timestamp())
     AND COALESCE(b.n, 0) < $2
     AND NOT EXISTS (SELECT 1 FROM webhook_deliveries p
                      WHERE p.endpoint_id = d.endpoint_id AND p.allocation_id = d.allocation_id AND p.status = 'PENDING'
                        AND (p.event_created_at, p.id) < (d.event_created_at, d.id))
   ORDER BY d.next_attempt_at
   LIMIT $1 * 4
)
SELECT c.id FROM candidates c WHERE c.rank <= $2 ORDER BY c.next_attempt_at LIMIT $1`;

/** Citus: leases the deliveries PICK_SQL chose ($1) that are still due and unleased. */
const LEASE_BY_ID_SQL = `
UPDATE webhook_deliveries d
   SET lease_until = statement_timestamp() + make_interval(secs => $2::double precision / 1000), attempts = d.attempts + 1
  FROM webhook_endpoints e LEFT JOIN partners p ON p.id = e.partner_id
 WHERE d.id = ANY ($1::uuid[]) AND e.id = d.endpoint_id
   AND d.status = 'PENDING' AND (d.lease_until IS NULL OR d.lease_until <= statement_timestamp())
RETURNING d.id, d.endpoint_id, d.event_id, d.body, d.attempts, e.url, e.secret_sealed, e.enabled, e.test, p.revoked_at IS NOT NULL AS partner_revoked`;

/**
 * Leases up to `limit` due deliveries, none of an endpoint that already has `perEndpoint` live
 * leases (from any instance) beyond that cap.
 */
export async function leaseDue(pool: Pool, o: { limit: number; perEndpoint: number; leaseMs: number; outbox?: Dialect['outbox'] }): Promise<LeasedDelivery[]> {
  const citus = o.outbox === 'per-campaign';
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    await client.query('BEGIN');
    // Taken before the statement, whose snapshot then holds every lease an earlier turn committed.
    await client.query("SELECT tessera_lock('delivery_lease', '')");
    let leased: LeasedDelivery[];
    if (citus) {
      const { rows: picked } = await client.query<{ id: string }>(PICK_SQL, [o.limit, o.perEndpoint]);
      leased = picked.length === 0 ? [] : (await client.query<LeasedDelivery>(LEASE_BY_ID_SQL, [picked.map((r) => r.id), o.leaseMs])).rows;
    } else {
      leased = (await client.query<LeasedDelivery>(LEASE_SQL, [o.limit, o.leaseMs, o.perEndpoint])).rows;
    }
    await client.query('COMMIT');
    return leased;
  } catch (error) {
    await client.query('ROLLBACK').catch((rollback: Error) => (broken = rollback));
    throw error;
  } finally {
    client.release(broken); // a connection that could not roll back is closed, not pooled
  }
}

/**
 * An attempt's outcome: DELIVERED, PENDING again at `nextAttemptAt`, or FAILED for good. delivered_at
 * is the statement's start (statement_timestamp(): Citus refuses clock_timestamp() in an UPDATE of a
 * reference table), set only by a delivery's statement (nor a function inside a CASE).
 */
export async function recordAttempt(
  pool: Pool,
  id: string,
  outcome: { status: 'DELIVERED' | 'PENDING' | 'FAILED'; statusCode: number | null; error: string | null; nextAttemptAt?: Date },
  trace?: Span,
): Promise<void> {
  await inStatement(trace, 'recordAttempt', () => pool.query(
    `UPDATE webhook_deliveries
        SET status = $2::webhook_delivery_status, last_status_code = $3, last_error = $4, lease_until = NULL,
            next_attempt_at = COALESCE($5, next_attempt_at)${outcome.status === 'DELIVERED' ? ', delivered_at = statement_timestamp()' : ''}
      WHERE id = $1 AND status = 'PENDING'`,
    [id, outcome.status, outcome.statusCode, outcome.error, outcome.nextAttemptAt ?? null],
  ));
}

/** What /metrics reports of the queue: deliveries pending, and how long the oldest has waited. */
/** The live webhook queue (test endpoints' deliveries and test campaigns' events are not counted). */
export async function queueState(pool: Pool): Promise<{ pending: number; oldestSeconds: number; undrained: number }> {
  const { rows } = await pool.query<{ pending: number; oldest: number | null; undrained: number }>(
    `SELECT (SELECT count(*)::int FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id WHERE d.status = 'PENDING' AND NOT e.test) AS pending,
            (SELECT extract(epoch FROM clock_timestamp() - min(d.event_created_at))::float8
               FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id WHERE d.status = 'PENDING' AND NOT e.test) AS oldest,
            (SELECT count(*)::int FROM webhook_events WHERE substring(campaign_id::text, 15, 1) <> '8') AS undrained`,
  );
  const r = rows[0]!;
  return { pending: r.pending, oldestSeconds: r.oldest ?? 0, undrained: r.undrained };
}
