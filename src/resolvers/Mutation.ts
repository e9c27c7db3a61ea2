import type { MutationResolvers } from '../generated/graphql';

export const Mutation: MutationResolvers = {
  createPartner: (_, { input }, ctx) => ctx.services.partners.create(ctx, input),
  createCampaign: async (_, { input }, ctx) => ({ campaign: await ctx.services.campaigns.create(ctx, input) }),
  loadTickets: (_, { campaignId, codes }, ctx) => ctx.services.campaigns.loadTickets(ctx, campaignId, codes),
  generateTickets: (_, { campaignId, count, prefix }, ctx) =>
    ctx.services.campaigns.generateTickets(ctx, campaignId, count, prefix),
  openCampaign: async (_, { id }, ctx) => ({ campaign: await ctx.services.campaigns.open(ctx, id) }),
  purgeTestData: (_, { before }, ctx) => ctx.services.campaigns.purgeTestData(ctx, before),
  createTestCopy: async (_, { campaignId, tickets }, ctx) => ({ campaign: await ctx.services.campaigns.createTestCopy(ctx, campaignId, tickets) }),
  resetTestCampaign: async (_, { id }, ctx) => ({ campaign: await ctx.services.campaigns.resetTestCampaign(ctx, id) }),
  advanceTestClock: async (_, { campaignId, seconds }, ctx) => ({ campaign: await ctx.services.campaigns.advanceTestClock(ctx, campaignId, seconds) }),
  closeCampaign: async (_, { id }, ctx) => ({ campaign: await ctx.services.campaigns.close(ctx, id) }),
  claimTicket: (_, { input }, ctx) => ctx.services.allocations.claim(ctx, input),
  releaseAllocation: (_, { allocationId }, ctx) => ctx.services.allocationRecords.release(ctx, allocationId),
  holdTicket: (_, { input }, ctx) => ctx.services.allocations.hold(ctx, input),
  confirmHold: (_, { allocationId }, ctx) => ctx.services.allocationRecords.confirm(ctx, allocationId),
  extendHold: (_, { allocationId, ttlSeconds }, ctx) => ctx.services.allocationRecords.extend(ctx, allocationId, ttlSeconds),
  claimTickets: (_, { input }, ctx) => ctx.services.allocations.claimMany(ctx, input),
  joinWaitlist: (_, { input }, ctx) => ctx.services.waitlist.join(ctx, input),
  leaveWaitlist: (_, { entryId }, ctx) => ctx.services.waitlist.leave(ctx, entryId),
  enterBallot: (_, { input }, ctx) => ctx.services.ballots.enter(ctx, input),
  withdrawBallotEntry: (_, { entryId }, ctx) => ctx.services.ballots.withdraw(ctx, entryId),
  drawBallot: async (_, { campaignId }, ctx) => ({ ballot: await ctx.services.ballots.draw(ctx, campaignId) }),
  setPartnerQuota: async (_, { campaignId, partnerId, quota }, ctx) => ({
    campaign: await ctx.services.campaigns.setPartnerQuota(ctx, campaignId, partnerId, quota),
  }),
  setPartnerAllotment: (_, { campaignId, partnerId, size, lapsesAt }, ctx) =>
    ctx.services.campaigns.setPartnerAllotment(ctx, campaignId, partnerId, size, lapsesAt),
  updateCampaign: async (_, { id, input }, ctx) => ({ campaign: await ctx.services.campaigns.update(ctx, id, input) }),
  revokeApiKey: async (_, { partnerId, test }, ctx) => ({ partner: await ctx.services.partners.revoke(ctx, partnerId, test === true) }),
  rotateApiKey: (_, { partnerId, test }, ctx) => ctx.services.partners.rotate(ctx, partnerId, test === true),
  setPartnerRateLimit: async (_, { partnerId, pointsPerSecond }, ctx) => ({
    partner: await ctx.services.partners.setRateLimit(ctx, partnerId, pointsPerSecond),
  }),
  repairCampaign: (_, { id }, ctx) => ctx.services.campaigns.repair(ctx, id),
  createOperatorKey: (_, { input }, ctx) => ctx.services.operatorKeys.create(input),
  revokeOperatorKey: (_, { id }, ctx) => ctx.services.operatorKeys.revoke(id),
  scopePartnerKey: (_, { partnerId, campaignIds }, ctx) => ctx.services.partners.setScope(ctx, partnerId, campaignIds),
  createWebhook: (_, { input }, ctx) => ctx.services.webhooks.create(ctx, input),
  deleteWebhook: (_, { id }, ctx) => ctx.services.webhooks.delete(ctx, id),
  redeliverWebhook: (_, { deliveryId }, ctx) => ctx.services.webhooks.redeliver(ctx, deliveryId),
};
