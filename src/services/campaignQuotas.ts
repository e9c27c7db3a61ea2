// What each partner may take of a campaign: its quota (a cap on its live allocations) and its
// allotment (tickets set aside for it alone until the allotment lapses).
import { findAllotments, setPartnerAllotment, type AllotmentRow } from '../db/allotments';
import type { Database } from '../db/client';
import { setPartnerQuota } from '../db/partnerQuota';
import { apiError, ErrorCode, InvalidInput, notFound } from '../errors';
import type { LiveUpdates } from '../live';
import type { CampaignModel } from '../models';
import * as validate from '../validation';
import { freshCampaign, requireCampaign } from './campaignRecord';
import type { RequestContext } from './requestContext';

export class CampaignQuotaService {
  constructor(
    private readonly db: Database,
    /** Tells campaignStats subscribers that a campaign's figures moved. */
    private readonly live?: LiveUpdates,
  ) {}

  /** Caps (or with null uncaps) a partner's live allocations in a campaign. */
  async setPartnerQuota(ctx: RequestContext, campaignId: string, partnerId: string, quota: number | null | undefined): Promise<CampaignModel> {
    const campaign = await requireCampaign(this.db, campaignId);
    if (!validate.isUuid(partnerId) || (await ctx.loaders.partner.load(partnerId.toLowerCase())) === null) throw notFound('Partner', partnerId);
    const cap = validate.optionalIntInRange('quota', quota, 0, validate.LIMITS.quota);
    await setPartnerQuota(this.db.prisma, campaign.id, partnerId.toLowerCase(), cap);
    ctx.loaders.partnerStats.clear(campaign.id);
    return freshCampaign(ctx, campaign, this.live);
  }

  /**
   * Sets aside `size` tickets for the partner until `lapsesAt` (0 removes the allotment):
   * db/allotments.ts. A CLOSED campaign cannot be changed; the size may not go below what is drawn
   * from the allotment, nor take more tickets than are available.
   */
  async setPartnerAllotment(
    ctx: RequestContext,
    campaignId: string,
    partnerId: string,
    size: number,
    lapsesAt: Date | null | undefined,
  ): Promise<CampaignModel> {
    const campaign = await requireCampaign(this.db, campaignId);
    if (!validate.isUuid(partnerId) || (await ctx.loaders.partner.load(partnerId.toLowerCase())) === null) throw notFound('Partner', partnerId);
    const count = validate.intInRange('size', size, 0, validate.LIMITS.quota);
    validate.date('lapsesAt', lapsesAt);
    if (lapsesAt && lapsesAt.getTime() <= Date.now()) throw new InvalidInput('lapsesAt', 'lapsesAt must be in the future.');
    if (campaign.status === 'CLOSED') throw apiError(ErrorCode.INVALID_TRANSITION, `Campaign ${campaign.id} is closed; its allotments cannot be changed.`);
    const result = await setPartnerAllotment(this.db.prisma, { campaignId: campaign.id, partnerId: partnerId.toLowerCase(), size: count, lapsesAt: lapsesAt ?? null });
    if (result.verdict === 'BELOW_USED') throw new InvalidInput('size', `size may not be below the ${result.inUse} tickets drawn from the allotment (or 0, which removes it).`);
    if (result.verdict === 'TOO_FEW') throw new InvalidInput('size', `Only ${result.available} more tickets are available to set aside.`);
    return freshCampaign(ctx, campaign, this.live);
  }

  /** A campaign's allotments: every partner's for an operator, the caller's own for a partner. */
  async allotments(ctx: RequestContext, campaignId: string): Promise<AllotmentRow[]> {
    return findAllotments(this.db.prisma, campaignId, ctx.viewer.kind === 'admin' ? null : ctx.viewer.partnerId);
  }
}
