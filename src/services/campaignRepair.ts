// A campaign's figures checked against its rows (verifyCampaign), and its counters repaired from
// them (repairCampaign): db/verifyCampaign.ts holds both statements.
import type { Database } from '../db/client';
import { repairCampaign, verifyCampaign } from '../db/verifyCampaign';
import type { LiveUpdates } from '../live';
import type { CampaignVerificationModel } from '../models';
import { requireCampaign } from './campaignRecord';
import type { RequestContext } from './requestContext';

export class CampaignRepairService {
  constructor(
    private readonly db: Database,
    /** Tells campaignStats subscribers that a campaign's figures moved. */
    private readonly live?: LiveUpdates,
  ) {}

  /** Every figure of the campaign recomputed from its rows. */
  async verify(ctx: RequestContext, id: string): Promise<CampaignVerificationModel> {
    const campaign = await requireCampaign(this.db, id);
    const drifts = await verifyCampaign(this.db.pool, campaign.id);
    return { campaign, checkedAt: new Date(), ok: drifts.length === 0, drifts, repaired: [] };
  }

  /** Repairs the campaign's counters under its gate; rows (tickets, allocations) are never touched. */
  async repair(ctx: RequestContext, id: string): Promise<CampaignVerificationModel> {
    const campaign = await requireCampaign(this.db, id);
    const { repaired, remaining } = await repairCampaign(this.db.pool, campaign.id);
    if (repaired.length > 0) {
      this.live?.changed(campaign.id);
      ctx.loaders.stats.clear(campaign.id);
    }
    return { campaign, checkedAt: new Date(), ok: remaining.length === 0, drifts: remaining, repaired };
  }
}
