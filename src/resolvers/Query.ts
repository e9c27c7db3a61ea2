import type { QueryResolvers } from '../generated/graphql';

export const Query: QueryResolvers = {
  campaign: (_, { id }, ctx) => ctx.services.campaigns.get(ctx, id),
  campaigns: (_, args, ctx) => ctx.services.campaigns.list(ctx, args),
  allocation: (_, { id }, ctx) => ctx.services.allocationRecords.get(ctx, id),
  partners: (_, args, ctx) => ctx.services.partners.list(ctx, args),
  auditLog: (_, args, ctx) => ctx.services.audit.list(ctx, args),
  operatorKeys: (_, __, ctx) => ctx.services.operatorKeys.list(),
  verifyCampaign: (_, { id }, ctx) => ctx.services.campaignRepair.verify(ctx, id),
  viewer: (_, __, ctx) => ctx.viewer,
  webhooks: (_, __, ctx) => ctx.services.webhooks.list(ctx),
  waitlistEntry: (_, { id }, ctx) => ctx.services.waitlist.get(ctx, id),
  ballotEntry: (_, { id }, ctx) => ctx.services.ballots.get(ctx, id),
  webhookDeliveries: (_, args, ctx) => ctx.services.webhooks.deliveries(ctx, args),
};
