// Loading tickets. Each call is one transaction: first the sold-out check (loading more tickets
// ends a sell-out, so its time is recorded first: tessera_record_sold_out), then one INSERT; after
// its commit, the statistics the load made stale (analyzeIfStale).
import type { Prisma } from '../generated/prisma/client';
import type { Db } from './client';

export function recordSoldOut(db: Db, campaignId: string): Prisma.PrismaPromise<number> {
  return db.$executeRaw`SELECT tessera_record_sold_out(${campaignId}::uuid)`;
}

/**
 * Inserts the codes; returns how many were new (one row, `loaded`). ON CONFLICT DO NOTHING skips
 * codes already in the campaign and codes repeated within the call (PostgreSQL sees its own inserts
 * within the statement); the caller counts what was skipped as duplicates. Counted from RETURNING,
 * not the command tag: Citus's tag counts the rows it sent, skipped ones included.
 */
export function loadTickets(db: Db, campaignId: string, codes: string[]): Prisma.PrismaPromise<Array<{ loaded: number }>> {
  return db.$queryRaw`
    WITH inserted AS (
      INSERT INTO tickets (campaign_id, code)
      SELECT ${campaignId}::uuid, code FROM unnest(${codes}::text[]) AS code
      ON CONFLICT (campaign_id, code) DO NOTHING
      RETURNING 1
    )
    SELECT count(*)::int AS loaded FROM inserted`;
}

/**
 * Generates `count` random codes server-side: prefix + 16 hex digits (64 random bits: a collision
 * among a million codes has odds of about 3 in 100 million).
 *
 * Why sorted, and why pick_order comes from the code: each of the three indexes a ticket enters
 * (primary key, code, the claim's partial index) costs far less when its keys arrive in order —
 * appends to the right-most leaf instead of random page visits. Measured here with 1,000,000 rows:
 * random pick_order 100k rows/s, in order 176k rows/s. The codes are random, so a pick_order taken
 * from their first 31 bits is as random as tessera_random_pick_order() would make it, and sorting
 * by code sorts all three keys at once.
 *
 * `skipDuplicates` false is the fast path (a plain INSERT); on the one-in-a-hundred-million
 * collision the caller runs it again with ON CONFLICT DO NOTHING.
 */
export function generateTickets(
  db: Db,
  campaignId: string,
  count: number,
  prefix: string,
  options: { skipDuplicates: boolean },
): Prisma.PrismaPromise<number> {
  const insert = db.$executeRaw`
    INSERT INTO tickets (campaign_id, code, pick_order)
    SELECT ${campaignId}::uuid, ${prefix}::text || g.hex, (('x' || substr(g.hex, 1, 8))::bit(32)::integer & 2147483647)
      FROM (SELECT DISTINCT upper(lpad(to_hex((random() * 4294967295)::bigint), 8, '0')
                              || lpad(to_hex((random() * 4294967295)::bigint), 8, '0')) AS hex
              FROM generate_series(1, ${count}::integer)) g
     ORDER BY g.hex`;
  if (!options.skipDuplicates) return insert;
  return db.$executeRaw`
    INSERT INTO tickets (campaign_id, code, pick_order)
    SELECT ${campaignId}::uuid, ${prefix}::text || g.hex, (('x' || substr(g.hex, 1, 8))::bit(32)::integer & 2147483647)
      FROM (SELECT DISTINCT upper(lpad(to_hex((random() * 4294967295)::bigint), 8, '0')
                              || lpad(to_hex((random() * 4294967295)::bigint), 8, '0')) AS hex
              FROM generate_series(1, ${count}::integer)) g
     ORDER BY g.hex
    ON CONFLICT (campaign_id, code) DO NOTHING`;
}

/**
 * The statistics a load creates, made at the load: ANALYZE tickets when the rows changed since its
 * last ANALYZE — the load's own `loaded` (not yet in the server's statistics) plus what they count
 * (n_mod_since_analyze) — pass autovacuum's own threshold (autovacuum_analyze_threshold +
 * autovacuum_analyze_scale_factor × the rows last counted; 50 + 10% by default). That is the ANALYZE
 * autovacuum would run a minute or more later, or never where it is off, run now, while the
 * campaign is still being set up, not during its first claims: the claim statements' plans do not
 * need statistics (test/plan.test.ts) but every other read of tickets does, and the plans cached on
 * each connection are made again once they change. Cheap next to the load (ANALYZE reads a sample
 * of 300 × default_statistics_target rows whatever the table's size: docs/BENCHMARKS.md). Where
 * the rows counted are not the table's own — on Citus the coordinator's table is empty, its shards
 * hold the rows — every load past the threshold analyzes (Citus propagates ANALYZE to the shards).
 * Returns whether it analyzed.
 */
export async function analyzeIfStale(db: Db, loaded: number): Promise<boolean> {
  if (loaded <= 0) return false;
  const [{ stale }] = await db.$queryRaw<Array<{ stale: boolean }>>`
    SELECT COALESCE(s.n_mod_since_analyze, 0) + ${loaded}::bigint
             > current_setting('autovacuum_analyze_threshold')::float8
               + current_setting('autovacuum_analyze_scale_factor')::float8 * greatest(c.reltuples, 0) AS stale
      FROM pg_class c LEFT JOIN pg_stat_user_tables s ON s.relid = c.oid
     WHERE c.oid = 'tickets'::regclass`;
  if (stale) await db.$executeRaw`ANALYZE tickets`;
  return stale;
}
