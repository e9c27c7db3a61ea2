// Allotments (prisma/migrations/20261203130000_allotments): tickets of a campaign set aside
// for one partner. The unused ones are the tickets ALLOTTED to it — no other partner's pick looks at
// that status, so none can take them — and the partner's claims draw on them first (the first look
// defers to the second, which picks `own` first: src/db/pickTickets.ts). What was drawn is marked on
// the allocation (from_allotment) and goes back to the allotment when it ends while the allotment
// lasts (tessera_returned_ticket). So, while an allotment lasts:
//   used      = the partner's live allocations drawn from it;
//   remaining = its ALLOTTED tickets, plus its drawn holds that expired and will return to it;
//   size      = used + remaining — so under the VOID policy a drawn ticket that comes back is
//               retired and the allotment shrinks by one, as the contract says.
// From lapses_at on, remaining is 0: any claim may take what is left, and the sweeper returns it to
// the pool (tessera_lapse_allotments), recording `returned` and the size it had.
import { Prisma } from '../generated/prisma/client';
import type { Batchable } from './campaignGate';
import { lockCampaignGate } from './campaignGate';
import type { Db } from './client';
import type { AllotmentModel } from '../models';

export type AllotmentVerdict = 'OK' | 'REMOVED' | 'BELOW_USED' | 'TOO_FEW';

/**
 * The figures of an allotment as in the header: `partner` and `campaign` are SQL names in scope.
 * Expired drawn holds return to the allotment unless the campaign retires returned tickets (VOID).
 */
const FIGURES = (campaign: Prisma.Sql, partner: Prisma.Sql) => Prisma.sql`
  (SELECT count(*) FROM allocations a
    WHERE a.campaign_id = ${campaign} AND a.partner_id = ${partner} AND a.from_allotment
      AND (a.status = 'ACTIVE' OR (a.status = 'HELD' AND a.expires_at > clock_timestamp())))::int AS used,
  (SELECT count(*) FROM allocations a
    WHERE a.campaign_id = ${campaign} AND a.partner_id = ${partner} AND a.from_allotment
      AND a.status = 'HELD' AND a.expires_at <= clock_timestamp()
      AND (SELECT cp.release_policy FROM campaigns cp WHERE cp.id = ${campaign}) <> 'VOID')::int AS returning,
  (SELECT count(*) FROM tickets t
    WHERE t.campaign_id = ${campaign} AND t.status = 'ALLOTTED' AND t.allotted_to = ${partner})::int AS unused`;

/**
 * Sets the partner's allotment to `size` tickets (0 removes it) until `lapsesAt`. Under the campaign
 * gate, exclusive: no claim, release or sweep of the campaign is in flight while the figures are
 * counted and the tickets set aside or put back, so both are exact. Nothing is written unless the
 * verdict is OK or REMOVED.
 */
export async function setPartnerAllotment(
  db: Batchable,
  a: { campaignId: string; partnerId: string; size: number; lapsesAt: Date | null },
): Promise<{ verdict: AllotmentVerdict; inUse: number; available: number }> {
  const C = Prisma.sql`${a.campaignId}::uuid`;
  const P = Prisma.sql`${a.partnerId}::uuid`;
  const S = Prisma.sql`${a.size}::int`;
  const L = Prisma.sql`${a.lapsesAt}::timestamptz`;
  const [, , rows] = await db.$transaction([
    ...lockCampaignGate(db, a.campaignId),
    db.$queryRaw<{ verdict: AllotmentVerdict; in_use: number; available: number }[]>`WITH facts AS MATERIALIZED (
         SELECT ${FIGURES(C, P)},
                (SELECT count(*) FROM tickets t WHERE t.campaign_id = ${C} AND t.status = 'AVAILABLE')::int AS available
       ),
       verdict AS MATERIALIZED (
         SELECT CASE WHEN ${S} = 0 THEN 'REMOVED'
                     WHEN ${S} < f.used + f.returning THEN 'BELOW_USED'
                     WHEN ${S} - f.used - f.returning - f.unused > f.available THEN 'TOO_FEW'
                     ELSE 'OK' END AS verdict,
                ${S} - f.used - f.returning - f.unused AS delta, f.used + f.returning AS in_use, f.available
           FROM facts f
       ),
       set_aside AS (
         UPDATE tickets t SET status = 'ALLOTTED', allotted_to = ${P}
          WHERE t.campaign_id = ${C} AND t.status = 'AVAILABLE'
            AND t.id = ANY(ARRAY(SELECT x.id FROM tickets x
                                  WHERE x.campaign_id = ${C} AND x.status = 'AVAILABLE'
                                    AND (SELECT verdict = 'OK' AND delta > 0 FROM verdict)
                                  ORDER BY x.pick_order LIMIT (SELECT GREATEST(delta, 0) FROM verdict)))
         RETURNING 1
       ),
       put_back AS (
         UPDATE tickets t SET status = 'AVAILABLE', allotted_to = NULL
          WHERE t.campaign_id = ${C} AND t.status = 'ALLOTTED' AND t.allotted_to = ${P}
            AND t.id = ANY(ARRAY(SELECT x.id FROM tickets x
                                  WHERE x.campaign_id = ${C} AND x.status = 'ALLOTTED' AND x.allotted_to = ${P}
                                    AND (SELECT verdict = 'REMOVED' OR (verdict = 'OK' AND delta < 0) FROM verdict)
                                  ORDER BY x.pick_order
                                  LIMIT (SELECT CASE WHEN verdict = 'REMOVED' THEN NULL ELSE GREATEST(-delta, 0) END FROM verdict)))
         RETURNING 1
       ),
       -- A removed allotment has drawn nothing: what was drawn from it returns to the pool.
       undrawn AS (
         UPDATE allocations al SET from_allotment = false
          WHERE al.campaign_id = ${C} AND al.partner_id = ${P} AND al.from_allotment
            AND (SELECT verdict = 'REMOVED' FROM verdict)
         RETURNING 1
       ),
       removed AS (
         DELETE FROM allotments l
          WHERE l.campaign_id = ${C} AND l.partner_id = ${P} AND (SELECT verdict = 'REMOVED' FROM verdict)
         RETURNING 1
       ),
       saved AS (
         -- the time given with the row: Citus takes no function in DO UPDATE SET
         INSERT INTO allotments AS l (campaign_id, partner_id, size, lapses_at, updated_at)
         SELECT ${C}, ${P}, ${S}, ${L}, statement_timestamp() FROM verdict WHERE verdict = 'OK'
         ON CONFLICT (campaign_id, partner_id)
         DO UPDATE SET size = EXCLUDED.size, lapses_at = EXCLUDED.lapses_at, lapsed_at = NULL, returned = NULL, updated_at = EXCLUDED.updated_at
         RETURNING 1
       )
       SELECT v.verdict, v.in_use, v.available
         FROM verdict v
        WHERE (SELECT count(*) FROM set_aside) + (SELECT count(*) FROM put_back) + (SELECT count(*) FROM undrawn)
            + (SELECT count(*) FROM removed) + (SELECT count(*) FROM saved) >= 0`,
  ]);
  const row = (rows as { verdict: AllotmentVerdict; in_use: number; available: number }[])[0]!;
  return { verdict: row.verdict, inUse: row.in_use, available: row.available };
}

export type AllotmentRow = AllotmentModel;

/** A campaign's allotments (one partner's, when `partnerId` is given), in the order they were made. */
export async function findAllotments(db: Db, campaignId: string, partnerId: string | null): Promise<AllotmentRow[]> {
  const rows = await db.$queryRaw<
    { partner_id: string; size: number; used: number; returning: number; unused: number; live: boolean; lapses_at: Date | null; lapsed_at: Date | null }[]
  >`SELECT l.partner_id, l.size, l.lapses_at, l.lapsed_at,
           l.lapsed_at IS NULL AND (l.lapses_at IS NULL OR l.lapses_at > clock_timestamp()) AS live,
           ${FIGURES(Prisma.sql`l.campaign_id`, Prisma.sql`l.partner_id`)}
      FROM allotments l
     WHERE l.campaign_id = ${campaignId}::uuid AND (${partnerId}::uuid IS NULL OR l.partner_id = ${partnerId}::uuid)
     ORDER BY l.created_at, l.partner_id`;
  return rows.map((r) => {
    const remaining = r.live ? r.unused + r.returning : 0;
    return {
      campaignId,
      partnerId: r.partner_id,
      // While it lasts, size is what it holds; once lapsed, what it held then (recorded at the lapse).
      size: r.live ? r.used + remaining : r.size,
      used: r.used,
      remaining,
      lapsesAt: r.lapses_at,
      lapsedAt: r.lapsed_at,
    };
  });
}
