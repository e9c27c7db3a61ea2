// The admin reports, from the counters the triggers in prisma/functions/ keep (per partner,
// per minute): O(partners) and O(minutes) of the campaign, not O(allocations). Both count ACTIVE
// allocations (a confirmed hold from the moment it was confirmed), so their sums equal
// stats.allocated; a hold past its expiry is not counted as held (its partner's count is
// corrected from the index of held allocations, as stats are).
import type { Db } from './client';
import type { PartnerStatsModel, TimelinePointModel } from '../models';

export type TimelineUnit = 'minute' | 'hour' | 'day';

/** Allocations per bucket (UTC) and the running total. */
export async function campaignTimeline(db: Db, campaignId: string, unit: TimelineUnit): Promise<TimelinePointModel[]> {
  const rows = await db.$queryRaw<{ at: Date; allocated: bigint; cumulative: bigint; refusals: Record<string, string> | null }[]>`
    WITH allocated AS (
      SELECT date_trunc(${unit}::text, m.minute, 'UTC') AS at, sum(m.active) AS allocated
        FROM minute_counters m
       WHERE m.campaign_id = ${campaignId}::uuid
       GROUP BY 1
      HAVING sum(m.active) <> 0
    ),
    refused AS (
      SELECT at, jsonb_object_agg(code, n) AS refusals
        FROM (SELECT date_trunc(${unit}::text, r.minute, 'UTC') AS at, r.code, sum(r.count) AS n
                FROM refusal_counters r
               WHERE r.campaign_id = ${campaignId}::uuid
               GROUP BY 1, 2) per_code
       GROUP BY at
    )
    SELECT COALESCE(a.at, r.at) AS at,
           COALESCE(a.allocated, 0) AS allocated,
           sum(COALESCE(a.allocated, 0)) OVER (ORDER BY COALESCE(a.at, r.at)) AS cumulative,
           r.refusals
      FROM allocated a FULL JOIN refused r ON r.at = a.at
     ORDER BY 1`;
  return rows.map((r) => {
    const refusals = Object.entries(r.refusals ?? {})
      .map(([code, n]) => ({ code: code as TimelinePointModel['refusals'][number]['code'], count: Number(n) }))
      .sort((x, y) => y.count - x.count || x.code.localeCompare(y.code));
    return { at: r.at, allocated: Number(r.allocated), cumulative: Number(r.cumulative), refused: refusals.reduce((n, x) => n + x.count, 0), refusals };
  });
}

/** Every partner with live allocations or a quota in the campaign. */
export async function partnerStats(db: Db, campaignId: string): Promise<PartnerStatsModel[]> {
  const rows = await db.$queryRaw<{ partner_id: string; allocated: bigint; held: bigint; quota: number | null }[]>`
    WITH counted AS (
      SELECT partner_id, sum(active) AS allocated, sum(held) AS held
        FROM partner_counters WHERE campaign_id = ${campaignId}::uuid
       GROUP BY partner_id
    ),
    lapsed AS (
      SELECT partner_id, count(*) AS n
        FROM allocations
       WHERE campaign_id = ${campaignId}::uuid AND status = 'HELD' AND expires_at <= clock_timestamp()
       GROUP BY partner_id
    )
    SELECT COALESCE(c.partner_id, q.partner_id) AS partner_id,
           COALESCE(c.allocated, 0) AS allocated,
           COALESCE(c.held, 0) - COALESCE(l.n, 0) AS held,
           q.quota
      FROM counted c
      FULL JOIN (SELECT partner_id, quota FROM partner_quotas WHERE campaign_id = ${campaignId}::uuid) q
        ON q.partner_id = c.partner_id
      LEFT JOIN lapsed l ON l.partner_id = COALESCE(c.partner_id, q.partner_id)
     ORDER BY 2 DESC, 1`;
  return rows
    .map((r) => ({ partnerId: r.partner_id, allocated: Number(r.allocated), held: Number(r.held), quota: r.quota }))
    .filter((r) => r.allocated > 0 || r.held > 0 || r.quota !== null);
}
