import type { SubscriptionResolvers } from '../generated/graphql';
import type { CampaignStatsModel } from '../models';

export const Subscription: SubscriptionResolvers = {
  campaignStats: {
    subscribe: (_, { id }, ctx) => ctx.services.campaignReports.watchStats(ctx, id),
    resolve: (stats: CampaignStatsModel) => stats,
  },
};
