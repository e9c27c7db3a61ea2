// Campaign figures in one statement, in O(1) of the campaign's size: the ticket counts come from
// the 64 counter slots the triggers in prisma/functions/ keep in the same transactions as
// the tickets, so total = allocated + held + allotted + available + void holds in every answer (one
// snapshot). `allotted` (the unused tickets of live allotments, db/allotments.ts) is counted from the
// tickets ALLOTTED to them: O(allotted), nothing at all in a campaign without allotments.
// A hold past its expiry counts as available (its ticket is claimable from that instant) — as void
// under the VOID release policy, which retires it — not as held, even before the sweeper has
// written so: those are counted from the index of held allocations. Under WAITLIST_FIRST it stays
// held until the sweeper has offered it to the waitlist (or put it back in the pool): no claim takes
// it meanwhile.
// Batched: one statement for every campaign a request asks about.
//
// soldOutAt: recorded by the release that ends a sell-out (db/releaseAllocation.ts); while a
// campaign is sold out and nothing has been released yet, it is the moment the last ticket became
// ACTIVE — one backward step of the timeline index.
import type { Db } from './client';
import type { CampaignStatsModel } from '../models';

interface StatsRow {
  campaign_id: string;
  total: bigint;
  allocated: bigint;
  held: bigint;
  available: bigint;
  allotted: bigint;
  void: bigint;
  sold_out_at: Date | null;
}

export async function campaignStats(db: Db, campaignIds: readonly string[]): Promise<Map<string, CampaignStatsModel>> {
  const rows = await db.$queryRaw<StatsRow[]>`
    WITH counts AS (
      SELECT c.campaign_id, sum(c.total) AS total, sum(c.allocated) AS allocated, sum(c.held) AS held, sum(c.void) AS void
        FROM campaign_counters c
       WHERE c.campaign_id = ANY(${campaignIds}::uuid[])
       GROUP BY c.campaign_id
    ),
    live_allotments AS MATERIALIZED (
      SELECT l.campaign_id, l.partner_id FROM allotments l
       WHERE l.campaign_id = ANY(${campaignIds}::uuid[]) AND l.lapsed_at IS NULL AND (l.lapses_at IS NULL OR l.lapses_at > clock_timestamp())
    ),
    lapsed AS (
      SELECT a.campaign_id, count(*) AS n,
             count(*) FILTER (WHERE a.from_allotment AND (a.campaign_id, a.partner_id) IN (SELECT campaign_id, partner_id FROM live_allotments)) AS drawn
        FROM allocations a
       WHERE a.campaign_id = ANY(${campaignIds}::uuid[]) AND a.status = 'HELD' AND a.expires_at <= clock_timestamp()
       GROUP BY a.campaign_id
    ),
    set_aside AS (
      SELECT t.campaign_id, count(*) AS n
        FROM tickets t JOIN live_allotments l ON l.campaign_id = t.campaign_id AND l.partner_id = t.allotted_to
       WHERE t.status = 'ALLOTTED'
       GROUP BY t.campaign_id
    ),
    -- WAITLIST_FIRST: tickets on their way to the waitlist count as held — RETURNED ones, and the
    -- unused tickets of allotments past lapses_at that the sweeper has not returned yet (no claim
    -- takes either: they are offered first).
    on_the_way AS (
      SELECT t.campaign_id, count(*) AS n
        FROM tickets t
       WHERE t.campaign_id = ANY(${campaignIds}::uuid[])
         AND (t.status = 'RETURNED'
              OR (t.status = 'ALLOTTED'
                  AND (t.campaign_id, t.allotted_to) NOT IN (SELECT campaign_id, partner_id FROM live_allotments)
                  AND (SELECT cp.release_policy FROM campaigns cp WHERE cp.id = t.campaign_id) = 'WAITLIST_FIRST'))
       GROUP BY t.campaign_id
    ),
    figures AS (
      SELECT cp.id AS campaign_id, cp.sold_out_at,
             COALESCE(c.total, 0) AS total,
             COALESCE(c.allocated, 0) AS allocated,
             COALESCE(c.held, 0) + COALESCE(r.n, 0)
               - CASE cp.release_policy WHEN 'WAITLIST_FIRST' THEN COALESCE(l.drawn, 0) ELSE COALESCE(l.n, 0) END AS held,
             COALESCE(s.n, 0) + CASE WHEN cp.release_policy = 'VOID' THEN 0 ELSE COALESCE(l.drawn, 0) END AS allotted,
             COALESCE(c.total - c.allocated - c.held - c.void, 0) - COALESCE(s.n, 0) - COALESCE(r.n, 0)
               + CASE WHEN cp.release_policy = 'POOL' THEN COALESCE(l.n - l.drawn, 0) ELSE 0 END AS available,
             COALESCE(c.void, 0) + CASE WHEN cp.release_policy = 'VOID' THEN COALESCE(l.n, 0) ELSE 0 END AS void
        FROM campaigns cp
        LEFT JOIN counts c ON c.campaign_id = cp.id
        LEFT JOIN lapsed l ON l.campaign_id = cp.id
        LEFT JOIN set_aside s ON s.campaign_id = cp.id
        LEFT JOIN on_the_way r ON r.campaign_id = cp.id
       WHERE cp.id = ANY(${campaignIds}::uuid[])
    )
    SELECT f.campaign_id, f.total, f.allocated, f.held, f.allotted, f.available, f.void,
           COALESCE(f.sold_out_at,
                    CASE WHEN f.total > 0 AND f.available = 0 AND f.held = 0 THEN
                      (SELECT max(COALESCE(a.confirmed_at, a.allocated_at)) FROM allocations a
                        WHERE a.campaign_id = f.campaign_id AND a.status = 'ACTIVE')
                    END) AS sold_out_at
      FROM figures f`;
  const stats = new Map<string, CampaignStatsModel>();
  for (const row of rows) {
    stats.set(row.campaign_id, {
      total: Number(row.total),
      allocated: Number(row.allocated),
      held: Number(row.held),
      available: Number(row.available),
      allotted: Number(row.allotted),
      void: Number(row.void),
      soldOutAt: row.sold_out_at,
    });
  }
  return stats;
}
