import type { BallotEntryResolvers } from '../generated/graphql';
import { isTestCampaignId } from '../testMode';

export const BallotEntry: BallotEntryResolvers = {
  test: (entry) => isTestCampaignId(entry.campaignId),
  allocations: async (entry, _, ctx) => {
    const ids = await ctx.loaders.ballotWon.load(`${entry.campaignId}:${entry.id}`);
    const allocations = await ctx.loaders.allocation.loadMany(ids);
    return allocations.map((a) => {
      if (!a || a instanceof Error) throw a ?? new Error(`an allocation of ballot entry ${entry.id} is missing`);
      return a;
    });
  },
  partner: (entry, _, ctx) =>
    ctx.loaders.partner.load(entry.partnerId).then((partner) => {
      if (!partner) throw new Error(`partner ${entry.partnerId} of ballot entry ${entry.id} is missing`);
      return partner;
    }),
};
