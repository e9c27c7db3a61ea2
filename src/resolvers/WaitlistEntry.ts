import type { WaitlistEntryResolvers } from '../generated/graphql';
import { isTestCampaignId } from '../testMode';

export const WaitlistEntry: WaitlistEntryResolvers = {
  test: (entry) => isTestCampaignId(entry.campaignId),
  offer: async (entry, _, ctx) => {
    const ids = await ctx.loaders.waitlistOffer.load(`${entry.campaignId}:${entry.id}`);
    const allocations = await ctx.loaders.allocation.loadMany(ids);
    return allocations.map((a) => {
      if (!a || a instanceof Error) throw a ?? new Error(`an allocation of waitlist entry ${entry.id} is missing`);
      return a;
    });
  },
};
