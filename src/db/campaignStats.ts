// Campaign figures — every field of CampaignStats — in one statement, batched for every campaign a
// request asks about. They come from tessera_campaign_counts (prisma/functions/), the one function
// that computes each figure, with what "sold out" means from tessera_sold_out; the webhook events'
// figures and CAMPAIGN_SOLD_OUT read the same function, and the claim's SOLD_OUT the same definition,
// so they cannot disagree. O(1)
// in the campaign's size (counter slots kept in the same transactions as the tickets), plus
// O(allotted); total = allocated + held + allotted + available + void holds in every answer.
import type { Db } from './client';
import type { CampaignStatsModel } from '../models';

interface StatsRow {
  campaign_id: string;
  total: bigint;
  allocated: bigint;
  held: bigint;
  allotted: bigint;
  available: bigint;
  void: bigint;
  fill_rate: number;
  sold_out: boolean;
  sold_out_at: Date | null;
}

export async function campaignStats(db: Db, campaignIds: readonly string[]): Promise<Map<string, CampaignStatsModel>> {
  const rows = await db.$queryRaw<StatsRow[]>`SELECT * FROM tessera_campaign_counts(${campaignIds}::uuid[])`;
  const stats = new Map<string, CampaignStatsModel>();
  for (const row of rows) {
    stats.set(row.campaign_id, {
      total: Number(row.total),
      allocated: Number(row.allocated),
      held: Number(row.held),
      available: Number(row.available),
      allotted: Number(row.allotted),
      void: Number(row.void),
      fillRate: Number(row.fill_rate),
      soldOut: row.sold_out,
      soldOutAt: row.sold_out_at,
    });
  }
  return stats;
}
