// Per-request DataLoaders: every look-up a list of allocations needs (ticket, campaign, partner,
// stats) is batched into one statement per kind, so listing 100 allocations costs a constant
// number of queries (test/dataloader.test.ts counts them). Caches live for one request only, and a
// loader is made only when the request first uses it.
import DataLoader from 'dataloader';
import type { PartnerTestKeyModel } from './services/partners';
import type { Database } from './db/client';
import { campaignStats } from './db/campaignStats';
import { findAllocationsByIds } from './db/findAllocations';
import { findTickets } from './db/findTickets';
import { partnerStats } from './db/campaignReports';
import { findOfferAllocationIds, waitlistFigures } from './db/waitlist';
import { findWonAllocationIds } from './db/ballots';
import { loadBallots } from './services/ballots';
import type { AllocationModel, BallotModel, CampaignModel, CampaignStatsModel, OperatorKeyModel, PartnerModel, PartnerStatsModel, TicketModel } from './models';
import type { CampaignService } from './services/campaigns';
import type { OperatorKeyService } from './services/operatorKeys';
import type { PartnerService } from './services/partners';

export interface Loaders {
  readonly campaign: DataLoader<string, CampaignModel | null>;
  /** Every field of a campaign, whatever `campaign` was primed with (a claim returns it without its settings). */
  readonly campaignDetails: DataLoader<string, CampaignModel | null>;
  readonly stats: DataLoader<string, CampaignStatsModel>;
  readonly partner: DataLoader<string, PartnerModel | null>;
  /** Every field of a partner, whatever `partner` was primed with. */
  readonly partnerDetails: DataLoader<string, PartnerModel | null>;
  /** A partner's test key, without the key: one statement for a page of partners. */
  readonly partnerTestKey: DataLoader<string, PartnerTestKeyModel | null>;
  /** Keyed by `${campaignId}:${ticketId}`. */
  readonly ticket: DataLoader<string, TicketModel | null>;
  readonly allocation: DataLoader<string, AllocationModel | null>;
  /** Per campaign (admin report; one statement per campaign asked about). */
  readonly partnerStats: DataLoader<string, PartnerStatsModel[]>;
  /** Per campaign: WAITING and OFFERED waitlist entries. */
  readonly waitlistFigures: DataLoader<string, { waiting: number; offered: number }>;
  /** Keyed by `${campaignId}:${entryId}`: the ids of the allocations offered to the entry. */
  readonly waitlistOffer: DataLoader<string, string[]>;
  /** Per campaign: its ballot (public part), null for none. */
  readonly ballot: DataLoader<string, BallotModel | null>;
  /** Keyed by `${campaignId}:${entryId}`: the ids of the allocations the ballot entry won. */
  readonly ballotWon: DataLoader<string, string[]>;
  /** Operator keys by id (the audit log's `operator`). */
  readonly operatorKey: DataLoader<string, OperatorKeyModel | null>;
}

const EMPTY_STATS: CampaignStatsModel = { total: 0, allocated: 0, held: 0, available: 0, allotted: 0, void: 0, fillRate: 0, soldOut: false, soldOutAt: null };

function byKey<T>(keys: readonly string[], items: T[], keyOf: (item: T) => string): (T | null)[] {
  const found = new Map(items.map((item) => [keyOf(item), item]));
  return keys.map((key) => found.get(key) ?? null);
}

/**
 * The request's loaders, each made the first time it is used: most operations (a claim, an empty
 * query) use none or one of them, and the request pays for no others. `partner`, when given, is the
 * caller's own partner, primed into the `partner` loader when that is made. (A class: its getters
 * live on the prototype, where an object literal with getters would define them per request.)
 */
class RequestLoaders implements Loaders {
  #campaign?: Loaders['campaign'];
  #campaignDetails?: Loaders['campaignDetails'];
  #stats?: Loaders['stats'];
  #partner?: Loaders['partner'];
  #partnerDetails?: Loaders['partnerDetails'];
  #partnerTestKey?: Loaders['partnerTestKey'];
  #ticket?: Loaders['ticket'];
  #allocation?: Loaders['allocation'];
  #partnerStats?: Loaders['partnerStats'];
  #waitlistFigures?: Loaders['waitlistFigures'];
  #waitlistOffer?: Loaders['waitlistOffer'];
  #ballot?: Loaders['ballot'];
  #ballotWon?: Loaders['ballotWon'];
  #operatorKey?: Loaders['operatorKey'];

  constructor(
    private readonly db: Database,
    private readonly services: { campaigns: CampaignService; partners: PartnerService; operatorKeys: OperatorKeyService },
    private readonly caller?: PartnerModel,
  ) {}

  get campaign(): Loaders['campaign'] {
    return (this.#campaign ??= new DataLoader(async (ids) => byKey(ids, await this.services.campaigns.findByIds(ids), (c) => c.id)));
  }

  get campaignDetails(): Loaders['campaignDetails'] {
    return (this.#campaignDetails ??= new DataLoader(async (ids) => byKey(ids, await this.services.campaigns.findByIds(ids), (c) => c.id)));
  }

  get stats(): Loaders['stats'] {
    return (this.#stats ??= new DataLoader(async (ids) => {
      const stats = await campaignStats(this.db.prisma, ids);
      return ids.map((id) => stats.get(id) ?? EMPTY_STATS);
    }));
  }

  get partner(): Loaders['partner'] {
    if (!this.#partner) {
      this.#partner = new DataLoader(async (ids) => byKey(ids, await this.services.partners.findByIds(ids), (p) => p.id));
      if (this.caller) this.#partner.prime(this.caller.id, this.caller);
    }
    return this.#partner;
  }

  get operatorKey(): Loaders['operatorKey'] {
    return (this.#operatorKey ??= new DataLoader(async (ids) => byKey(ids, await this.services.operatorKeys.findByIds(ids), (k) => k.id)));
  }

  get partnerTestKey(): Loaders['partnerTestKey'] {
    return (this.#partnerTestKey ??= new DataLoader(async (ids) => byKey(ids, await this.services.partners.testKeysOf(ids), (k) => k.partnerId)));
  }

  get partnerDetails(): Loaders['partnerDetails'] {
    return (this.#partnerDetails ??= new DataLoader(async (ids) => byKey(ids, await this.services.partners.findByIds(ids), (p) => p.id)));
  }

  get ticket(): Loaders['ticket'] {
    return (this.#ticket ??= new DataLoader(async (keys) => {
      const parsed = keys.map((key) => {
        const [campaignId, ticketId] = key.split(':') as [string, string];
        return { campaignId, ticketId };
      });
      return byKey(keys, await findTickets(this.db.prisma, parsed), (t) => `${t.campaignId}:${t.id}`);
    }));
  }

  get allocation(): Loaders['allocation'] {
    return (this.#allocation ??= new DataLoader(async (ids) => byKey(ids, await findAllocationsByIds(this.db.prisma, ids), (a) => a.id)));
  }

  get partnerStats(): Loaders['partnerStats'] {
    return (this.#partnerStats ??= new DataLoader(async (ids) => Promise.all(ids.map((id) => partnerStats(this.db.read().prisma, id)))));
  }

  get waitlistFigures(): Loaders['waitlistFigures'] {
    return (this.#waitlistFigures ??= new DataLoader(async (ids) => {
      const figures = await waitlistFigures(this.db.prisma, ids);
      return ids.map((id) => figures.get(id) ?? { waiting: 0, offered: 0 });
    }));
  }

  get waitlistOffer(): Loaders['waitlistOffer'] {
    return (this.#waitlistOffer ??= new DataLoader(async (keys) => {
      const entries = keys.map((key) => {
        const [campaignId, id] = key.split(':') as [string, string];
        return { campaignId, id };
      });
      const offers = await findOfferAllocationIds(this.db.prisma, entries);
      return entries.map((e) => offers.get(e.id) ?? []);
    }));
  }

  get ballot(): Loaders['ballot'] {
    return (this.#ballot ??= new DataLoader(async (ids) => loadBallots(this.db, ids)));
  }

  get ballotWon(): Loaders['ballotWon'] {
    return (this.#ballotWon ??= new DataLoader(async (keys) => {
      const entries = keys.map((key) => {
        const [campaignId, id] = key.split(':') as [string, string];
        return { campaignId, id };
      });
      const won = await findWonAllocationIds(this.db.prisma, entries);
      return entries.map((e) => won.get(e.id) ?? []);
    }));
  }
}

export function createLoaders(db: Database, services: { campaigns: CampaignService; partners: PartnerService; operatorKeys: OperatorKeyService }, caller?: PartnerModel): Loaders {
  return new RequestLoaders(db, services, caller);
}
