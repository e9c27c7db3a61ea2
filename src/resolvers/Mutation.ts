import type { MutationResolvers } from '../generated/graphql';

export const Mutation: MutationResolvers = {
  createPartner: (_, { input }, ctx) => ctx.services.partners.create(ctx, input),
  createCampaign: async (_, { input }, ctx) => ({ campaign: await ctx.services.campaigns.create(ctx, input) }),
  loadTickets: (_, { campaignId, codes }, ctx) => ctx.services.campaigns.loadTickets(ctx, campaignId, codes),
  generateTickets: (_, { campaignId, count, prefix }, ctx) =>
    ctx.services.campaigns.generateTickets(ctx, campaignId, count, prefix),
  openCampaign: async (_, { id }, ctx) => ({ campaign: await ctx.services.campaigns.open(ctx, id) }),
  closeCampaign: async (_, { id }, ctx) => ({ campaign: await ctx.services.campaigns.close(ctx, id) }),
  claimTicket: (_, { input }, ctx) => ctx.services.allocations.claim(ctx, input),
  releaseAllocation: (_, { allocationId }, ctx) => ctx.services.allocations.release(ctx, allocationId),
};
