// Campaign figures, counted from the tickets themselves in one statement, so that
// total = allocated + held + available holds in every answer (one snapshot; every ticket has
// exactly one status). Batched: one statement for every campaign a request asks about.
import type { Db } from './client';
import type { CampaignStatsModel } from '../models';

interface StatsRow {
  campaign_id: string;
  total: bigint;
  allocated: bigint;
  held: bigint;
  available: bigint;
}

export async function campaignStats(db: Db, campaignIds: readonly string[]): Promise<Map<string, CampaignStatsModel>> {
  const rows = await db.$queryRaw<StatsRow[]>`
    SELECT campaign_id,
           count(*) AS total,
           count(*) FILTER (WHERE status = 'ALLOCATED') AS allocated,
           count(*) FILTER (WHERE status = 'HELD') AS held,
           count(*) FILTER (WHERE status = 'AVAILABLE') AS available
      FROM tickets
     WHERE campaign_id = ANY(${campaignIds}::uuid[])
     GROUP BY campaign_id`;
  const stats = new Map<string, CampaignStatsModel>();
  for (const row of rows) {
    stats.set(row.campaign_id, {
      total: Number(row.total),
      allocated: Number(row.allocated),
      held: Number(row.held),
      available: Number(row.available),
    });
  }
  return stats;
}
