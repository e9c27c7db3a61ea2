import type { CampaignResolvers, CampaignStatsResolvers } from '../generated/graphql';

export const Campaign: CampaignResolvers = {
  stats: (campaign, _, ctx) => ctx.loaders.stats.load(campaign.id),
  allocations: (campaign, args, ctx) => ctx.services.allocations.listForCampaign(ctx, campaign.id, args),
};

export const CampaignStats: CampaignStatsResolvers = {
  fillRate: (stats) => (stats.total === 0 ? 0 : stats.allocated / stats.total),
};
