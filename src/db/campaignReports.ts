// The admin reports: the allocation timeline and per-partner figures. Both count ACTIVE allocations
// (a confirmed hold from the moment it was confirmed), so their sums equal stats.allocated.
import type { Db } from './client';
import type { PartnerStatsModel, TimelinePointModel } from '../models';

export type TimelineUnit = 'minute' | 'hour' | 'day';

/** Allocations per bucket (UTC) and the running total, from the timeline index. */
export async function campaignTimeline(db: Db, campaignId: string, unit: TimelineUnit): Promise<TimelinePointModel[]> {
  const rows = await db.$queryRaw<{ at: Date; allocated: bigint; cumulative: bigint }[]>`
    SELECT b.at, b.allocated, sum(b.allocated) OVER (ORDER BY b.at) AS cumulative
      FROM (SELECT date_trunc(${unit}::text, COALESCE(a.confirmed_at, a.allocated_at), 'UTC') AS at, count(*) AS allocated
              FROM allocations a
             WHERE a.campaign_id = ${campaignId}::uuid AND a.status = 'ACTIVE'
             GROUP BY 1) b
     ORDER BY b.at`;
  return rows.map((r) => ({ at: r.at, allocated: Number(r.allocated), cumulative: Number(r.cumulative) }));
}

/** Every partner with live allocations or a quota in the campaign. */
export async function partnerStats(db: Db, campaignId: string): Promise<PartnerStatsModel[]> {
  const rows = await db.$queryRaw<{ partner_id: string; allocated: bigint; held: bigint; quota: number | null }[]>`
    SELECT COALESCE(a.partner_id, q.partner_id) AS partner_id,
           COALESCE(a.allocated, 0) AS allocated, COALESCE(a.held, 0) AS held, q.quota
      FROM (SELECT partner_id,
                   count(*) FILTER (WHERE status = 'ACTIVE') AS allocated,
                   count(*) FILTER (WHERE status = 'HELD' AND expires_at > clock_timestamp()) AS held
              FROM allocations
             WHERE campaign_id = ${campaignId}::uuid AND status IN ('ACTIVE', 'HELD')
             GROUP BY partner_id) a
      FULL JOIN (SELECT partner_id, quota FROM partner_quotas WHERE campaign_id = ${campaignId}::uuid) q
        ON q.partner_id = a.partner_id
     ORDER BY 2 DESC, 1`;
  return rows
    .map((r) => ({ partnerId: r.partner_id, allocated: Number(r.allocated), held: Number(r.held), quota: r.quota }))
    .filter((r) => r.allocated > 0 || r.held > 0 || r.quota !== null);
}
