// Time in the tests: wait for a state, never for a guess at time.
//
// - `until` polls for a state and fails with a clear message when it does not come.
// - `expireHolds` / `setHoldExpiry` move a hold's lease in the database instead of waiting it out.
// - TestServer's `sweep()` (testServer.ts) runs the hold sweeper once, now, instead of waiting for
//   its interval; a server started with `holdSweepIntervalMs: 0` sweeps only then.
// - `untilWebhooksSettled` (receiver.ts) waits for every event to be delivered or given up on: what a
//   receiver holds then is all it gets.
// - `sleep` is for the few places where real time is the point: a fault that lasts a while, a
//   client's back-off, the pace of a background reader, a race spread over an instant.
//
// Free of Jest: bench/ and test/chaos/ use it too.
import { setTimeout as delay } from 'node:timers/promises';
import { Client, type Pool } from 'pg';

/** Real time passing, on purpose (see above); never to wait for something to have happened. */
export function sleep(ms: number): Promise<void> {
  return delay(ms);
}

export interface UntilOptions {
  /** What is awaited, for the failure: "the sweeper to expire the hold". */
  message: string;
  /** Give up after this long (default 10 s). */
  timeoutMs?: number;
  /** Pause between two looks (default 50 ms). */
  intervalMs?: number;
}

/**
 * Calls `predicate` until it returns a truthy value, and returns that value. Fails after
 * `timeoutMs` with `message` (and the last value seen). An exception from `predicate` is not
 * retried: it fails the wait at once.
 */
export async function until<T>(predicate: () => T | Promise<T>, options: UntilOptions): Promise<NonNullable<T>> {
  const { message, timeoutMs = 10_000, intervalMs = 50 } = options;
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const value = await predicate();
    if (value) return value as NonNullable<T>;
    if (performance.now() >= deadline) {
      throw new Error(`Timed out after ${timeoutMs} ms waiting for ${message} (last value: ${show(value)})`);
    }
    await delay(intervalMs);
  }
}

function show(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

/**
 * Moves the leases of holds, in the database, instead of waiting for them: each of
 * `allocationIds` (HELD allocations) expires `msFromNow` ms from the database's clock — negative
 * or 0 for "already expired"; one number for all, or one per hold. Holds given the same time
 * expire in the order listed, one microsecond apart (the last one exactly at now + msFromNow):
 * the claim's takeover and the sweeper end the oldest expiry first, so list the holds in the
 * order they should lapse.
 *
 * What stays true, as for a hold that ran out by itself:
 * - the database's clock decides, as every read and write does (`clock_timestamp()`), not Node's;
 * - only `expires_at` changes: status, ticket, `allocated_at` (whose order agrees with
 *   `sequence`) and `confirmed_at` stay as they were, and a lease never ends before it began
 *   (`expires_at` > `allocated_at`, else this throws);
 * - the allocations' statement-level counting triggers fire as for any update; with the status
 *   and the timeline bucket unchanged their deltas cancel, so the counters stay exact (the
 *   per-row live-count trigger fires on status changes only);
 * - `allocations_held_expires` (a HELD row has an expiry) holds: the expiry is moved, never cleared.
 *
 * All of them or none: if one is not HELD (confirmed, released, already taken over or swept) or
 * would end before it began, nothing is changed and this throws.
 */
export async function setHoldExpiry(sql: Pool, allocationIds: readonly string[], msFromNow: number | readonly number[]): Promise<Map<string, Date>> {
  if (allocationIds.length === 0) throw new Error('setHoldExpiry: no allocation ids');
  if (new Set(allocationIds).size !== allocationIds.length) throw new Error(`setHoldExpiry: an id is listed twice: ${allocationIds.join(', ')}`);
  const offsets = typeof msFromNow === 'number' ? allocationIds.map(() => msFromNow) : [...msFromNow];
  if (offsets.length !== allocationIds.length || !offsets.every(Number.isFinite)) {
    throw new Error(`setHoldExpiry: msFromNow must be one number of milliseconds or one per hold, not ${JSON.stringify(msFromNow)}`);
  }
  const client = await sql.connect();
  try {
    await client.query('BEGIN');
    const { rows } = await client.query<{ id: string; expires_at: Date }>(
      `WITH clock AS MATERIALIZED (SELECT clock_timestamp() AS t),
       wanted AS (
         SELECT w.id, c.t + w.ms * interval '1 millisecond' - (count(*) OVER () - w.ord)::float8 * interval '1 microsecond' AS expires_at
           FROM unnest($1::uuid[], $2::float8[]) WITH ORDINALITY AS w(id, ms, ord), clock c
       )
       UPDATE allocations a SET expires_at = w.expires_at
         FROM wanted w
        WHERE a.id = w.id AND a.status = 'HELD' AND w.expires_at > a.allocated_at
       RETURNING a.id, a.expires_at`,
      [allocationIds, offsets],
    );
    if (rows.length !== allocationIds.length) {
      const moved = new Set(rows.map((r) => r.id));
      const { rows: found } = await client.query<{ id: string; status: string; allocated_at: Date; expires_at: Date | null }>(
        'SELECT id, status::text, allocated_at, expires_at FROM allocations WHERE id = ANY($1::uuid[])',
        [allocationIds.filter((id) => !moved.has(id))],
      );
      const why = allocationIds
        .filter((id) => !moved.has(id))
        .map((id) => {
          const row = found.find((r) => r.id === id);
          if (!row) return `${id}: no such allocation`;
          if (row.status !== 'HELD') return `${id}: ${row.status}, not HELD`;
          return `${id}: would expire before it was allocated (${row.allocated_at.toISOString()})`;
        });
      throw new Error(`setHoldExpiry moved no hold: ${why.join('; ')}`);
    }
    await client.query('COMMIT');
    return new Map(rows.map((r) => [r.id, r.expires_at]));
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}

/**
 * The holds have expired, now, by the database's clock — as if their TTL had run out this instant,
 * in the order given (see setHoldExpiry). Nothing else happens by itself: the sweeper ends them on
 * its next round, a claim may take them over before that, and reads show them EXPIRED at once.
 */
export function expireHolds(sql: Pool, allocationIds: readonly string[]): Promise<Map<string, Date>> {
  return setHoldExpiry(sql, allocationIds, 0);
}

/**
 * Waits until at least `n` of the Tessera server's sessions on this database wait for a lock
 * (sessions of the test's own pool, which sets no application_name, are not counted). On Citus
 * (TESSERA_TEST_CITUS_NODES, test/helpers/citus.ts) a claim runs on the node holding its campaign,
 * so its wait is there: the sessions waiting for a lock in this database on each worker count too
 * (the coordinator's connections to a worker carry Citus's name, not Tessera's).
 */
export async function untilSessionsWaitForLock(sql: Pool, n: number, options: Partial<UntilOptions> = {}): Promise<void> {
  const workers = (JSON.parse(process.env.TESSERA_TEST_CITUS_NODES ?? '[]') as string[]).slice(1);
  const database = workers.length > 0 ? ((await sql.query('SELECT current_database() AS d')).rows[0].d as string) : '';
  await until(
    async () => {
      const { rows } = await sql.query(
        `SELECT count(*)::int AS n FROM pg_stat_activity
          WHERE datname = current_database() AND application_name = 'tessera' AND wait_event_type = 'Lock'`,
      );
      let waiting: number = rows[0].n;
      for (const worker of workers) {
        const url = new URL(worker);
        url.pathname = `/${database}`;
        const client = new Client({ connectionString: url.toString() });
        client.on('error', () => undefined);
        await client.connect();
        try {
          const r = await client.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`);
          waiting += r.rows[0].n as number;
        } finally {
          await client.end().catch(() => undefined);
        }
      }
      return waiting >= n;
    },
    { timeoutMs: 5_000, intervalMs: 20, ...options, message: options.message ?? `${n} server session(s) waiting for a lock` },
  );
}

/**
 * Jest's timeout for a test whose work is fixed in size — a storm of so many requests, a chaos
 * scenario, a process started and stopped: it ends when its work is done, however slow the machine
 * (a CI check on a machine running two suites at once took six times as long as an idle one), and
 * what it checks are invariants and the product's own bounds, never how long the work took. Jest's
 * timeout is then only the backstop against a hang.
 */
export const FIXED_WORK_TIMEOUT_MS = 10 * 60_000;
