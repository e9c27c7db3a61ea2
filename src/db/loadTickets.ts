// Loading tickets: loadTickets (codes the operator gives) and generateTickets (codes made here).
// Each call is one transaction on one of the pool's connections (the pool Prisma's adapter uses):
// first the sold-out check (loading more tickets ends a sell-out, so its time is recorded first:
// tessera_record_sold_out), then the rows, streamed through COPY; after its commit, the statistics
// the load made stale (analyzeIfStale).
//
// Why COPY, and codes made here: PostgreSQL parses COPY's rows without evaluating a statement per
// row, and the rows come sorted and deduplicated, so the server spends its time on the rows
// themselves. Measured here: 1,000,000 generated tickets in 3.8-4.6 s; the INSERT … SELECT that made
// and sorted the codes in SQL took 15.4 s, 3.2 s of it making and sorting the codes and 4.4 s
// per-row foreign key checks (a load's tickets are checked once per campaign instead:
// tessera_lock_ticket_campaigns; docs/BENCHMARKS.md, "Loads at COPY speed"). COPY has no ON
// CONFLICT: what each load does when a code is already in the campaign is said at the load.
import { randomFillSync } from 'node:crypto';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Pool, PoolClient } from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import type { Db } from './client';
import { PG, pgErrorInfo } from './pgErrors';
import { inPoolTransaction } from './poolTransaction';

const COPY_TICKETS = 'COPY tickets (campaign_id, code, pick_order) FROM STDIN';
/** The longest a generateTickets transaction may run (a million rows take seconds; this bounds a stuck one). */
export const GENERATE_TIMEOUT_MS = 10 * 60_000;
/** Fills the array with random values (crypto.randomFillSync; a test passes its own). */
export type RandomFill = (values: BigUint64Array) => unknown;
/** Rows per chunk written to COPY. */
const COPY_CHUNK_ROWS = 8_192;

/**
 * loadTickets' way when a code of the call is already in the campaign: ON CONFLICT DO NOTHING skips
 * it. Returns how many were new (one row, `loaded`). Counted from RETURNING, not the command tag:
 * Citus's tag counts the rows it sent, skipped ones included. pick_order is the column's default.
 */
const INSERT_SKIPPING_TAKEN = `
  WITH inserted AS (
    INSERT INTO tickets (campaign_id, code)
    SELECT $1::uuid, code FROM unnest($2::text[]) AS code
    ON CONFLICT (campaign_id, code) DO NOTHING
    RETURNING 1
  )
  SELECT count(*)::int AS loaded FROM inserted`;

/**
 * A unique violation on the code index: a code already in the campaign. On Citus the index is a
 * shard's (its name suffixed with the shard id), and a COPY's error reaches the coordinator's client
 * as XX000 with the worker's message only — so the message is read too.
 */
function codeTaken(error: unknown): boolean {
  const { code, constraint } = pgErrorInfo(error);
  if (code === PG.UNIQUE_VIOLATION) return constraint !== undefined && CODE_INDEX.test(constraint);
  const message = (error as { message?: unknown } | null)?.message;
  return code === PG.INTERNAL_ERROR && typeof message === 'string' && CITUS_COPY_CODE_TAKEN.test(message);
}
const CODE_INDEX = /^tickets_campaign_id_code_key(_\d+)?$/;
const CITUS_COPY_CODE_TAKEN = /^duplicate key value violates unique constraint "tickets_campaign_id_code_key_\d+"$/;

/** A text field of COPY's text format: backslash escaped (validation has already refused control characters). */
function copyText(value: string): string {
  return value.replace(/\\/g, '\\\\');
}

/**
 * Makes this connection hand its statistics to the server before its COMMIT answers (PostgreSQL 15+:
 * pg_stat_force_next_flush), so that analyzeIfStale, run right after on any connection, counts this
 * load in n_mod_since_analyze — once. Without it a backend keeps its counts for up to 10 s after a
 * commit (it flushes at most once a second), and they may land before or after the ANALYZE they
 * caused: the load counted twice, or again after the ANALYZE that counted it. PostgreSQL 13 and 14
 * have no such call (their statistics collector is told at commit and counts a little later).
 */
const FLUSH_STATISTICS_AT_COMMIT = `
  DO $$ BEGIN
    IF current_setting('server_version_num')::int >= 150000 THEN PERFORM pg_stat_force_next_flush(); END IF;
  END $$`;

/** Runs `load` in one transaction with the sold-out check first; returns what `load` returns. */
function inLoadTransaction(pool: Pool, campaignId: string, timeoutMs: number | null, load: (client: PoolClient) => Promise<number>): Promise<number> {
  return inPoolTransaction(pool, async (client) => {
    if (timeoutMs) await client.query(`SELECT set_config('statement_timeout', $1, true)`, [String(timeoutMs)]);
    await client.query('SELECT tessera_record_sold_out($1::uuid)', [campaignId]);
    const loaded = await load(client);
    await client.query(FLUSH_STATISTICS_AT_COMMIT);
    return loaded;
  });
}

/** Streams rows (COPY's text format, whole lines) into tickets; returns how many it wrote. */
async function copyTickets(client: PoolClient, rows: Iterable<string>): Promise<number> {
  const copy = client.query(copyFrom(COPY_TICKETS));
  await pipeline(Readable.from(rows), copy);
  return copy.rowCount ?? 0;
}

/**
 * loadTickets: the call's codes, each once, sorted (rows that arrive in the code index's order land
 * on pages next to each other) with a random pick_order each (31 random bits, as
 * tessera_random_pick_order() makes them), through COPY. Returns how many were new; the caller
 * counts the rest of the call as duplicates — repeats within the call, and codes already in the
 * campaign. The latter fail the COPY on the code index (at the first such code); the load then
 * goes back to a savepoint taken before it and inserts the codes with INSERT_SKIPPING_TAKEN, as it
 * always did — slower, but only a load that repeats codes pays for it (loading a file again after
 * a failure, say).
 */
export function loadTicketsByCopy(pool: Pool, campaignId: string, codes: readonly string[]): Promise<number> {
  const unique = [...new Set(codes)].sort();
  return inLoadTransaction(pool, campaignId, null, async (client) => {
    await client.query('SAVEPOINT copy');
    try {
      return await copyTickets(client, codeRows(campaignId, unique));
    } catch (error) {
      if (!codeTaken(error)) throw error;
      await client.query('ROLLBACK TO SAVEPOINT copy');
      const { rows } = await client.query<{ loaded: number }>(INSERT_SKIPPING_TAKEN, [campaignId, unique]);
      return rows[0]!.loaded;
    }
  });
}

/** COPY rows of loadTickets' codes, a chunk at a time: campaign, code, a random pick_order. */
function* codeRows(campaignId: string, codes: readonly string[]): Generator<string> {
  const picks = new Uint32Array(codes.length);
  randomFillSync(picks);
  for (let start = 0; start < codes.length; start += COPY_CHUNK_ROWS) {
    let chunk = '';
    for (let i = start; i < Math.min(codes.length, start + COPY_CHUNK_ROWS); i += 1) {
      chunk += `${campaignId}\t${copyText(codes[i]!)}\t${picks[i]! >>> 1}\n`;
    }
    yield chunk;
  }
}

/**
 * `count` random codes, made here rather than in SQL, so that PostgreSQL spends its time on the rows
 * only: prefix + 16 hex digits (64 random bits: a collision among a million codes has odds of about
 * 3 in 100 million), sorted, each with pick_order = its top 31 bits. Sorted and with pick_order from
 * the code, the rows arrive in the order of all three indexes a ticket enters (primary key, code,
 * the claim's partial index): appends to the right-hand pages instead of visits all over them. The
 * codes are random, so a pick_order taken from them is as random as tessera_random_pick_order().
 * The rare repeat within the call is skipped (and counted a duplicate).
 */
export function* generatedRows(campaignId: string, count: number, prefix: string, random: RandomFill = randomFillSync): Generator<string> {
  const values = new BigUint64Array(count);
  random(values);
  values.sort();
  const head = `${campaignId}\t${copyText(prefix)}`;
  let rows: string[] = [];
  for (let i = 0; i < count; i += 1) {
    const value = values[i];
    if (i > 0 && value === values[i - 1]) continue;
    rows.push(`${head}${value.toString(16).toUpperCase().padStart(16, '0')}\t${value >> 33n}\n`);
    if (rows.length === COPY_CHUNK_ROWS) {
      yield rows.join('');
      rows = [];
    }
  }
  if (rows.length > 0) yield rows.join('');
}

/**
 * generateTickets: the codes of generatedRows through COPY. Returns how many tickets it loaded.
 * A code that collides with one already in the campaign (odds above) fails the whole COPY on the code
 * index, and the load runs again with fresh codes — at most three times, then the error is the
 * caller's. So a generateTickets loads exactly `count` tickets, less the repeats within the call.
 */
export async function generateTicketsByCopy(
  pool: Pool,
  campaignId: string,
  count: number,
  prefix: string,
  random: RandomFill = randomFillSync,
): Promise<number> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await inLoadTransaction(pool, campaignId, GENERATE_TIMEOUT_MS, (client) => copyTickets(client, generatedRows(campaignId, count, prefix, random)));
    } catch (error) {
      if (!codeTaken(error) || attempt >= 3) throw error;
    }
  }
}

/**
 * The statistics a load creates, made at the load: ANALYZE tickets when the rows changed since its
 * last ANALYZE — what the server counts (n_mod_since_analyze, this load included: its transaction
 * flushed its counts, FLUSH_STATISTICS_AT_COMMIT), and at least the load's own `loaded` — pass
 * autovacuum's own threshold (autovacuum_analyze_threshold +
 * autovacuum_analyze_scale_factor × the rows last counted; 50 + 10% by default). That is the ANALYZE
 * autovacuum would run a minute or more later, or never where it is off, run now, while the
 * campaign is still being set up, not during its first claims: the claim statements' plans do not
 * need statistics (test/plan.test.ts) but every other read of tickets does, and the plans cached on
 * each connection are made again once they change. Cheap next to the load (ANALYZE reads a sample
 * of 300 × default_statistics_target rows whatever the table's size: docs/BENCHMARKS.md). Where
 * the rows counted are not the table's own — on Citus the coordinator's table is empty, its shards
 * hold the rows — every load past the threshold analyzes (Citus propagates ANALYZE to the shards).
 * On PostgreSQL 13 and 14 the load's counts may not be there yet: it counts at least itself, and
 * the next load's check finds them. Returns whether it analyzed.
 */
export async function analyzeIfStale(db: Db, loaded: number): Promise<boolean> {
  if (loaded <= 0) return false;
  const [{ stale }] = await db.$queryRaw<Array<{ stale: boolean }>>`
    SELECT greatest(COALESCE(s.n_mod_since_analyze, 0), ${loaded}::bigint)
             > current_setting('autovacuum_analyze_threshold')::float8
               + current_setting('autovacuum_analyze_scale_factor')::float8 * greatest(c.reltuples, 0) AS stale
      FROM pg_class c LEFT JOIN pg_stat_user_tables s ON s.relid = c.oid
     WHERE c.oid = 'tickets'::regclass`;
  if (stale) await db.$executeRaw`ANALYZE tickets`;
  return stale;
}
