import type { AllocationResolvers } from '../generated/graphql';
import { ticketKey } from '../services/allocationRecords';
import { isTestCampaignId } from '../testMode';

/** Related objects through the request's DataLoaders; a missing one breaks a foreign key, so it throws. */
const present = <T>(what: string) => (value: T | null): T => {
  if (value === null) throw new Error(`${what} referenced by an allocation is missing`);
  return value;
};

export const Allocation: AllocationResolvers = {
  test: (a) => isTestCampaignId(a.campaignId),
  campaign: (a, _, ctx) => ctx.loaders.campaign.load(a.campaignId).then(present('campaign')),
  partner: (a, _, ctx) => ctx.loaders.partner.load(a.partnerId).then(present('partner')),
  ticket: (a, _, ctx) => ctx.loaders.ticket.load(ticketKey({ campaignId: a.campaignId, id: a.ticketId })).then(present('ticket')),
};
