// Per-request DataLoaders: every look-up a list of allocations needs (ticket, campaign, partner,
// stats) is batched into one statement per kind, so listing 100 allocations costs a constant
// number of queries (test/dataloader.test.ts counts them). Caches live for one request only.
import DataLoader from 'dataloader';
import type { Database } from './db/client';
import { campaignStats } from './db/campaignStats';
import { findAllocationsByIds } from './db/findAllocations';
import { findTickets } from './db/findTickets';
import { partnerStats } from './db/campaignReports';
import type { AllocationModel, CampaignModel, CampaignStatsModel, PartnerModel, PartnerStatsModel, TicketModel } from './models';
import type { CampaignService } from './services/campaigns';
import type { PartnerService } from './services/partners';

export interface Loaders {
  campaign: DataLoader<string, CampaignModel | null>;
  stats: DataLoader<string, CampaignStatsModel>;
  partner: DataLoader<string, PartnerModel | null>;
  /** Every field of a partner, whatever `partner` was primed with. */
  partnerDetails: DataLoader<string, PartnerModel | null>;
  /** Keyed by `${campaignId}:${ticketId}`. */
  ticket: DataLoader<string, TicketModel | null>;
  allocation: DataLoader<string, AllocationModel | null>;
  /** Per campaign (admin report; one statement per campaign asked about). */
  partnerStats: DataLoader<string, PartnerStatsModel[]>;
}

const EMPTY_STATS: CampaignStatsModel = { total: 0, allocated: 0, held: 0, available: 0, soldOutAt: null };

function byKey<T>(keys: readonly string[], items: T[], keyOf: (item: T) => string): (T | null)[] {
  const found = new Map(items.map((item) => [keyOf(item), item]));
  return keys.map((key) => found.get(key) ?? null);
}

export function createLoaders(db: Database, services: { campaigns: CampaignService; partners: PartnerService }): Loaders {
  return {
    campaign: new DataLoader(async (ids) => byKey(ids, await services.campaigns.findByIds(ids), (c) => c.id)),
    stats: new DataLoader(async (ids) => {
      const stats = await campaignStats(db.prisma, ids);
      return ids.map((id) => stats.get(id) ?? EMPTY_STATS);
    }),
    partner: new DataLoader(async (ids) => byKey(ids, await services.partners.findByIds(ids), (p) => p.id)),
    partnerDetails: new DataLoader(async (ids) => byKey(ids, await services.partners.findByIds(ids), (p) => p.id)),
    ticket: new DataLoader(async (keys) => {
      const parsed = keys.map((key) => {
        const [campaignId, ticketId] = key.split(':') as [string, string];
        return { campaignId, ticketId };
      });
      return byKey(keys, await findTickets(db.prisma, parsed), (t) => `${t.campaignId}:${t.id}`);
    }),
    allocation: new DataLoader(async (ids) => byKey(ids, await findAllocationsByIds(db.prisma, ids), (a) => a.id)),
    partnerStats: new DataLoader(async (ids) => Promise.all(ids.map((id) => partnerStats(db.prisma, id)))),
  };
}
