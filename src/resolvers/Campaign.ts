import type { AllotmentResolvers, CampaignResolvers, CampaignStatsResolvers, PartnerStatsResolvers } from '../generated/graphql';
import type { Loaders } from '../loaders';
import type { CampaignModel } from '../models';
import { isTestCampaignId } from '../testMode';

/** The campaign with every field: itself when it has them, else read once per request (campaignDetails). */
async function details(ctx: { loaders: Loaders }, campaign: CampaignModel): Promise<CampaignModel> {
  if (campaign.releasePolicy !== undefined) return campaign;
  return (await ctx.loaders.campaignDetails.load(campaign.id)) ?? campaign;
}

export const Campaign: CampaignResolvers = {
  test: (campaign) => isTestCampaignId(campaign.id),
  testClock: (campaign, _, ctx) => (isTestCampaignId(campaign.id) ? ctx.services.campaignTestMode.testClockOf(campaign.id) : null),
  stats: (campaign, _, ctx) => ctx.loaders.stats.load(campaign.id),
  lowStockThreshold: async (campaign, _, ctx) => campaign.lowStockThreshold ?? (await details(ctx, campaign)).lowStockThreshold ?? null,
  maxHoldSeconds: async (campaign, _, ctx) => campaign.maxHoldSeconds ?? (await details(ctx, campaign)).maxHoldSeconds ?? null,
  releasePolicy: async (campaign, _, ctx) => campaign.releasePolicy ?? (await details(ctx, campaign)).releasePolicy ?? 'POOL',
  allocations: (campaign, args, ctx) => ctx.services.allocationRecords.listForCampaign(ctx, campaign.id, args),
  timeline: (campaign, { bucket }, ctx) => ctx.services.campaignReports.timeline(ctx, campaign.id, bucket),
  partnerStats: (campaign, _, ctx) => ctx.services.campaignReports.partnerStats(ctx, campaign.id),
  allotments: (campaign, _, ctx) => ctx.services.campaignQuotas.allotments(ctx, campaign.id),
  waitlistOfferSeconds: async (campaign, _, ctx) => campaign.waitlistOfferSeconds ?? (await details(ctx, campaign)).waitlistOfferSeconds ?? 900,
  waitlist: (campaign, args, ctx) => ctx.services.waitlist.list(ctx, campaign.id, args),
  waitlistLength: (campaign, _, ctx) => ctx.services.waitlist.length(ctx, campaign.id),
  mode: async (campaign, _, ctx) => campaign.mode ?? (await details(ctx, campaign)).mode ?? 'FIRST_COME',
  entriesCloseAt: async (campaign, _, ctx) => (campaign.mode !== undefined ? campaign : await details(ctx, campaign)).entriesCloseAt ?? null,
  ballotConfirmSeconds: async (campaign, _, ctx) =>
    (campaign.mode !== undefined ? campaign : await details(ctx, campaign)).ballotConfirmSeconds ?? null,
  ballot: (campaign, _, ctx) => ctx.services.ballots.ballot(ctx, campaign.id),
  ballotEntries: (campaign, args, ctx) => ctx.services.ballots.list(ctx, campaign.id, args),
};

export const Allotment: AllotmentResolvers = {
  partner: (allotment, _, ctx) =>
    ctx.loaders.partner.load(allotment.partnerId).then((partner) => {
      if (!partner) throw new Error(`partner ${allotment.partnerId} of an allotment is missing`);
      return partner;
    }),
};

export const PartnerStats: PartnerStatsResolvers = {
  partner: (stats, _, ctx) =>
    ctx.loaders.partner.load(stats.partnerId).then((partner) => {
      if (!partner) throw new Error(`partner ${stats.partnerId} in partnerStats is missing`);
      return partner;
    }),
};

// Every field, fillRate and soldOut included, comes as it is from db/campaignStats.ts: the figures
// the webhook events carry are built by the same function.
export const CampaignStats: CampaignStatsResolvers = {};
