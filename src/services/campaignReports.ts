// A campaign's figures over time and by partner, and the campaignStats subscription: reads only.
import type { Database } from '../db/client';
import { campaignTimeline, type TimelineUnit } from '../db/campaignReports';
import type { LiveUpdates } from '../live';
import type { CampaignStatsModel, PartnerStatsModel, TimelinePointModel } from '../models';
import { requireCampaign } from './campaignRecord';
import { campaignStatsStream } from './liveStats';
import type { RequestContext } from './requestContext';

export class CampaignReportService {
  constructor(private readonly db: Database) {}

  /** Allocations and refusals per bucket, with the running total; a replica may serve it (db/replicas.ts). */
  async timeline(ctx: RequestContext, campaignId: string, bucket: 'MINUTE' | 'HOUR' | 'DAY'): Promise<TimelinePointModel[]> {
    return campaignTimeline(this.db.read().prisma, campaignId, bucket.toLowerCase() as TimelineUnit);
  }

  async partnerStats(ctx: RequestContext, campaignId: string): Promise<PartnerStatsModel[]> {
    return ctx.loaders.partnerStats.load(campaignId);
  }

  /** campaignStats subscription: admin only; NOT_FOUND for an unknown campaign. */
  async watchStats(ctx: RequestContext & { db: Database; live: LiveUpdates }, id: string): Promise<AsyncIterableIterator<CampaignStatsModel>> {
    const campaign = await requireCampaign(this.db, id);
    return campaignStatsStream(ctx.db, ctx.live, campaign.id);
  }
}
