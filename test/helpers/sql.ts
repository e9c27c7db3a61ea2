// The verdicts read straight from the database: each query once, for every test, test/chaos/ and
// bench/ (free of Jest; the assertions stay with the caller).
import type { Pool } from 'pg';
import type { TestServer } from './testServer';
import { until } from './time';

/** Anything that runs a query: a pool, a client, a pooled client. */
export type Queryable = Pick<Pool, 'query'>;

export interface TicketCounts {
  total: number;
  allocated: number;
  held: number;
  available: number;
  /** Retired by the VOID release policy. */
  void: number;
  /** Set aside by allotments (ALLOTTED), lapsed or not. */
  allotted: number;
  /**
   * On their way to a WAITLIST_FIRST campaign's waitlist (RETURNED): between the statement that
   * returned them and the offer, the next statement or the next sweep. The stats count them as held.
   */
  returned: number;
}

/** A campaign's ($1) tickets by status, counted in the tickets themselves. */
export const TICKET_COUNTS_SQL = `SELECT count(*)::int AS total,
            count(*) FILTER (WHERE status = 'ALLOCATED')::int AS allocated,
            count(*) FILTER (WHERE status = 'HELD')::int AS held,
            count(*) FILTER (WHERE status = 'AVAILABLE')::int AS available,
            count(*) FILTER (WHERE status = 'VOID')::int AS void,
            count(*) FILTER (WHERE status = 'ALLOTTED')::int AS allotted,
            count(*) FILTER (WHERE status = 'RETURNED')::int AS returned
       FROM tickets WHERE campaign_id = $1`;

/** What the stats read: a campaign's ($1) counters (kept by triggers), summed over their slots. */
export const COUNTER_TOTALS_SQL = `SELECT sum(total)::int AS total, sum(allocated)::int AS allocated, sum(held)::int AS held,
            sum(void)::int AS void
       FROM campaign_counters WHERE campaign_id = $1`;

/** A campaign's tickets by status, counted in the tickets themselves. */
export async function ticketCounts(sql: Queryable, campaignId: string): Promise<TicketCounts> {
  return (await sql.query<TicketCounts>(TICKET_COUNTS_SQL, [campaignId])).rows[0]!;
}

/** What the stats read: the campaign's counters (kept by triggers), summed over their slots. */
export async function counterTotals(sql: Queryable, campaignId: string): Promise<Omit<TicketCounts, 'available' | 'allotted' | 'returned'>> {
  return (await sql.query<Omit<TicketCounts, 'available' | 'allotted' | 'returned'>>(COUNTER_TOTALS_SQL, [campaignId])).rows[0]!;
}

/** Tickets with more than one live (HELD or ACTIVE) allocation, in one campaign or (null) in all: must be none. */
export async function ticketsLiveTwice(sql: Queryable, campaignId: string | null): Promise<{ campaign_id: string; ticket_id: string }[]> {
  const { rows } = await sql.query<{ campaign_id: string; ticket_id: string }>(
    `SELECT campaign_id, ticket_id FROM allocations
      WHERE ($1::uuid IS NULL OR campaign_id = $1) AND status IN ('HELD', 'ACTIVE')
      GROUP BY campaign_id, ticket_id HAVING count(*) > 1`,
    [campaignId],
  );
  return rows;
}

/**
 * Every quota row of a campaign: `live` is partner_quotas.live net of the credits not yet folded in,
 * `real` the partner's HELD/ACTIVE allocations there. The two must be equal.
 */
export async function quotaCounters(sql: Queryable, campaignId: string): Promise<{ partner_id: string; quota: number; live: number; real: number }[]> {
  const { rows } = await sql.query<{ partner_id: string; quota: number; live: number; real: number }>(
    `SELECT q.partner_id, q.quota,
            q.live - (SELECT count(*) FROM partner_quota_credits k WHERE k.campaign_id = q.campaign_id AND k.partner_id = q.partner_id)::int AS live,
            (SELECT count(*) FROM allocations a
              WHERE a.campaign_id = q.campaign_id AND a.partner_id = q.partner_id AND a.status IN ('HELD', 'ACTIVE'))::int AS real
       FROM partner_quotas q WHERE q.campaign_id = $1`,
    [campaignId],
  );
  return rows;
}

/** An allocation's status and its ticket's, as stored. */
export async function allocationWithTicket(sql: Queryable, allocationId: string): Promise<{ status: string; ticket_status: string }> {
  const { rows } = await sql.query<{ status: string; ticket_status: string }>(
    `SELECT a.status::text, t.status::text AS ticket_status
       FROM allocations a JOIN tickets t ON t.campaign_id = a.campaign_id AND t.id = a.ticket_id
      WHERE a.id = $1`,
    [allocationId],
  );
  return rows[0]!;
}

/**
 * Deadlocks PostgreSQL has detected in the server's database. Each server backend keeps its counts
 * until it flushes them (at most once a second when idle): ask every idle one to flush — a backend
 * flushes forced statistics when it goes idle, before it answers, so they are in once the query has
 * returned. A backend the pool has let go flushes as it exits, before it leaves pg_stat_activity:
 * wait until those are gone.
 */
export async function deadlocks(s: Pick<TestServer, 'db' | 'sql'>): Promise<number> {
  const clients = await Promise.all(Array.from({ length: s.db.pool.idleCount }, () => s.db.pool.connect()));
  try {
    await Promise.all(clients.map((c) => c.query('SELECT pg_stat_force_next_flush()')));
  } finally {
    clients.forEach((c) => c.release());
  }
  await until(
    async () => {
      const { rows } = await s.sql.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'tessera'`);
      return rows[0].n <= s.db.pool.totalCount;
    },
    { message: "the server's closed connections to leave pg_stat_activity", timeoutMs: 5_000, intervalMs: 20 },
  );
  const client = await s.sql.connect();
  try {
    await client.query('SELECT pg_stat_clear_snapshot()');
    const { rows } = await client.query('SELECT deadlocks::int AS n FROM pg_stat_database WHERE datname = current_database()');
    return rows[0].n as number;
  } finally {
    client.release();
  }
}
