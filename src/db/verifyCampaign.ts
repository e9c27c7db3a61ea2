// Verify and repair: every figure a campaign keeps beside its rows, recomputed from the
// rows themselves, and every drift reported with its size.
//
// The counters (docs/DESIGN.md, Counters) — campaign_counters (total, allocated, held, void),
// partner_counters (active, held), minute_counters (active per minute) and partner_quotas.live (less
// its credits) — are recomputed from tickets and allocations. The live-allocation invariants — a
// ticket ALLOCATED has its one ACTIVE allocation, a ticket HELD its one HELD allocation, no other
// ticket has a live one — and the allotments (no more tickets set aside than the allotment's size)
// are checked too; those are rows, not figures, and repair never touches them.
//
// VERIFY_SQL reads everything in one statement, so in one snapshot: a claim committing meanwhile
// is either in both the rows and the counters or in neither. REPAIR_SQL adds to slot 0 of each
// counter the drift it finds in its own snapshot — a delta, not an overwrite — so a change that
// commits while it runs (its rows and its counter slot together) is neither lost nor counted twice.
// It also runs under the campaign gate, exclusive (campaignGate.ts), in one transaction.
import type { Pool } from 'pg';

export interface Drift {
  /** What was checked: e.g. `counter.allocated`, `partner.active`, `ticket.status`. */
  check: string;
  /** What it is about: a partner id, a minute, a ticket id; null for the campaign. */
  subject: string | null;
  /** From the rows. */
  expected: string;
  /** What the counter (or the row) says. */
  found: string;
  /** |expected − found| for a figure; 1 for a row. */
  size: number;
  /** A counter (repair fixes it); a row (repair never touches it). */
  repairable: boolean;
}

const FIGURES = `
WITH t AS (
  SELECT count(*) AS total, count(*) FILTER (WHERE status = 'VOID') AS void FROM tickets WHERE campaign_id = $1
), a AS (
  SELECT count(*) FILTER (WHERE status = 'ACTIVE') AS active, count(*) FILTER (WHERE status = 'HELD') AS held
    FROM allocations WHERE campaign_id = $1 AND status IN ('ACTIVE', 'HELD')
), c AS (
  SELECT COALESCE(sum(total), 0) AS total, COALESCE(sum(allocated), 0) AS allocated, COALESCE(sum(held), 0) AS held, COALESCE(sum(void), 0) AS void
    FROM campaign_counters WHERE campaign_id = $1
), campaign_figures AS (
  SELECT 'counter.total' AS check_name, t.total AS expected, c.total AS found FROM t, c
  UNION ALL SELECT 'counter.void', t.void, c.void FROM t, c
  UNION ALL SELECT 'counter.allocated', a.active, c.allocated FROM a, c
  UNION ALL SELECT 'counter.held', a.held, c.held FROM a, c
), partner_rows AS (
  SELECT partner_id, count(*) FILTER (WHERE status = 'ACTIVE') AS active, count(*) FILTER (WHERE status = 'HELD') AS held
    FROM allocations WHERE campaign_id = $1 AND status IN ('ACTIVE', 'HELD') GROUP BY partner_id
), partner_slots AS (
  SELECT partner_id, sum(active) AS active, sum(held) AS held FROM partner_counters WHERE campaign_id = $1 GROUP BY partner_id
), partner_figures AS (
  SELECT 'partner.active' AS check_name, COALESCE(r.partner_id, s.partner_id)::text AS subject, COALESCE(r.active, 0) AS expected, COALESCE(s.active, 0) AS found
    FROM partner_rows r FULL JOIN partner_slots s ON s.partner_id = r.partner_id
  UNION ALL
  SELECT 'partner.held', COALESCE(r.partner_id, s.partner_id)::text, COALESCE(r.held, 0), COALESCE(s.held, 0)
    FROM partner_rows r FULL JOIN partner_slots s ON s.partner_id = r.partner_id
), minute_rows AS (
  SELECT date_trunc('minute', COALESCE(confirmed_at, allocated_at), 'UTC') AS minute, count(*) AS active
    FROM allocations WHERE campaign_id = $1 AND status = 'ACTIVE' GROUP BY 1
), minute_slots AS (
  SELECT minute, sum(active) AS active FROM minute_counters WHERE campaign_id = $1 GROUP BY minute
), minute_figures AS (
  SELECT 'timeline.active' AS check_name, to_char(COALESCE(r.minute, s.minute) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI"Z"') AS subject,
         COALESCE(r.active, 0) AS expected, COALESCE(s.active, 0) AS found
    FROM minute_rows r FULL JOIN minute_slots s ON s.minute = r.minute
), quota_figures AS (
  SELECT 'quota.live' AS check_name, q.partner_id::text AS subject,
         (SELECT count(*) FROM allocations x WHERE x.campaign_id = $1 AND x.partner_id = q.partner_id AND x.status IN ('ACTIVE', 'HELD')) AS expected,
         q.live - (SELECT count(*) FROM partner_quota_credits k WHERE k.campaign_id = $1 AND k.partner_id = q.partner_id) AS found
    FROM partner_quotas q WHERE q.campaign_id = $1
)`;

const VERIFY_SQL = `${FIGURES}
SELECT check_name AS "check", NULL::text AS subject, expected::text, found::text, abs(expected - found)::bigint AS size, true AS repairable
  FROM campaign_figures WHERE expected <> found
UNION ALL
SELECT check_name, subject, expected::text, found::text, abs(expected - found)::bigint, true
  FROM (SELECT * FROM partner_figures UNION ALL SELECT * FROM minute_figures UNION ALL SELECT * FROM quota_figures) f
 WHERE expected <> found
UNION ALL
-- Rows: a ticket whose status disagrees with its live allocation (or lack of one).
SELECT 'ticket.status', t.id::text,
       CASE WHEN l.status = 'ACTIVE' THEN 'ALLOCATED' WHEN l.status = 'HELD' THEN 'HELD' ELSE 'no live allocation' END,
       t.status::text, 1, false
  FROM tickets t
  LEFT JOIN allocations l ON l.campaign_id = t.campaign_id AND l.ticket_id = t.id AND l.status IN ('ACTIVE', 'HELD')
 WHERE t.campaign_id = $1
   AND CASE t.status WHEN 'ALLOCATED' THEN l.status IS DISTINCT FROM 'ACTIVE'
                     WHEN 'HELD' THEN l.status IS DISTINCT FROM 'HELD'
                     ELSE l.status IS NOT NULL END
UNION ALL
-- Rows: a ticket retired (VOID) that no allocation ever ended on, or in a campaign whose policy does not retire.
SELECT 'ticket.status', t.id::text, 'AVAILABLE (no allocation of it ended under the VOID policy)', t.status::text, 1, false
  FROM tickets t JOIN campaigns c ON c.id = t.campaign_id
 WHERE t.campaign_id = $1 AND t.status = 'VOID'
   AND (c.release_policy <> 'VOID'
        OR NOT EXISTS (SELECT 1 FROM allocations a WHERE a.campaign_id = t.campaign_id AND a.ticket_id = t.id AND a.status IN ('RELEASED', 'EXPIRED')))
UNION ALL
-- Rows: more tickets set aside for a partner than its allotment's size.
SELECT 'allotment.size', l.partner_id::text, l.size::text, n.allotted::text, (n.allotted - l.size)::bigint, false
  FROM allotments l
  JOIN (SELECT allotted_to, count(*) AS allotted FROM tickets WHERE campaign_id = $1 AND status = 'ALLOTTED' GROUP BY allotted_to) n ON n.allotted_to = l.partner_id
 WHERE l.campaign_id = $1 AND n.allotted > l.size
ORDER BY 1, 2`;

/** Each counter's drift added to its slot 0, from one snapshot (see the file's head). */
const REPAIR_SQL = [
  `${FIGURES}
   INSERT INTO campaign_counters AS k (campaign_id, slot, total, allocated, held, void)
   SELECT $1, 0,
          sum(expected - found) FILTER (WHERE check_name = 'counter.total'),
          sum(expected - found) FILTER (WHERE check_name = 'counter.allocated'),
          sum(expected - found) FILTER (WHERE check_name = 'counter.held'),
          sum(expected - found) FILTER (WHERE check_name = 'counter.void')
     FROM campaign_figures
   ON CONFLICT (campaign_id, slot) DO UPDATE
      SET total = k.total + EXCLUDED.total, allocated = k.allocated + EXCLUDED.allocated, held = k.held + EXCLUDED.held, void = k.void + EXCLUDED.void`,
  `${FIGURES}
   INSERT INTO partner_counters AS k (campaign_id, partner_id, slot, active, held)
   SELECT $1, subject::uuid, 0,
          COALESCE(sum(expected - found) FILTER (WHERE check_name = 'partner.active'), 0),
          COALESCE(sum(expected - found) FILTER (WHERE check_name = 'partner.held'), 0)
     FROM partner_figures WHERE expected <> found GROUP BY subject
   ON CONFLICT (campaign_id, partner_id, slot) DO UPDATE SET active = k.active + EXCLUDED.active, held = k.held + EXCLUDED.held`,
  `${FIGURES}
   INSERT INTO minute_counters AS k (campaign_id, minute, slot, active)
   SELECT $1, subject::timestamptz, 0, expected - found FROM minute_figures WHERE expected <> found
   ON CONFLICT (campaign_id, minute, slot) DO UPDATE SET active = k.active + EXCLUDED.active`,
  `${FIGURES}
   UPDATE partner_quotas q SET live = q.live + (f.expected - f.found)
     FROM quota_figures f
    WHERE q.campaign_id = $1 AND q.partner_id = f.subject::uuid AND f.expected <> f.found`,
];

interface DriftRow {
  check: string;
  subject: string | null;
  expected: string;
  found: string;
  size: string;
  repairable: boolean;
}

const toDrift = (r: DriftRow): Drift => ({ ...r, size: Number(r.size) });

/** Anything with pg's query: a pool, a client in a transaction. */
export interface Queryable {
  query(sql: string, params: unknown[]): Promise<{ rows: unknown[] }>;
}

export async function verifyCampaign(db: Queryable, campaignId: string): Promise<Drift[]> {
  const { rows } = await db.query(VERIFY_SQL, [campaignId]);
  return (rows as DriftRow[]).map(toDrift);
}

/**
 * Repairs the counters of the campaign in one transaction under its gate (exclusive: claims of the
 * campaign wait a moment), and answers what verification finds afterwards: the rows repair never
 * touches (ticket statuses, allotments). Returns the drifts it repaired too.
 */
export async function repairCampaign(pool: Pool, campaignId: string): Promise<{ repaired: Drift[]; remaining: Drift[] }> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    await client.query('BEGIN');
    // The gate, exclusive, where claims take it (campaignGate.ts says why two statements).
    await client.query("SELECT tessera_lock('campaign', $1::uuid::text)", [campaignId]);
    await client.query('SELECT tessera_lock_campaign_gate($1::uuid)', [campaignId]);
    const before = await verifyCampaign(client, campaignId);
    const repaired = before.filter((d) => d.repairable);
    if (repaired.length > 0) for (const sql of REPAIR_SQL) await client.query(sql, [campaignId]);
    const remaining = await verifyCampaign(client, campaignId);
    await client.query('COMMIT');
    return { repaired, remaining };
  } catch (error) {
    await client.query('ROLLBACK').catch((rollback: Error) => (broken = rollback));
    throw error;
  } finally {
    client.release(broken);
  }
}
