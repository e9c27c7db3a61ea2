// Ballot drops: entering, withdrawing, the draw, and reading ballots and entries (db/ballots.ts has
// the how; the rules are in the database functions it names). Expected outcomes of enterBallot and
// withdrawBallotEntry come back in the payload's `error`, as a claim's do; drawBallot is an admin
// operation and fails with a GraphQL error.
import { inScope } from '../auth';
import { openSeed } from '../ballot/seed';
import type { Database } from '../db/client';
import type { JsonValue } from '../db/json';
import {
  countBallotEntries,
  drawBallot,
  enterBallot,
  findBallotEntriesByIds,
  findBallotEntryPage,
  findBallots,
  withdrawBallotEntry,
} from '../db/ballots';
import { retryDeadlocks } from '../db/pgErrors';
import { apiError, claimError, ErrorCode, InvalidInput, notFound, type ClaimError } from '../errors';
import type { LiveUpdates } from '../live';
import type { BallotEntryModel, BallotModel, ConnectionModel } from '../models';
import * as validate from '../validation';
import { ballotEntryCursor } from './cursors';
import { fingerprint } from './fingerprint';
import type { RequestContext } from './requestContext';

export interface EnterBallotInput {
  campaignId: string;
  holder: string;
  quantity?: number | null;
  metadata?: JsonValue | null;
  idempotencyKey?: string | null;
}

export type BallotEntryResult = { entry: BallotEntryModel | null; error: ClaimError | null };

const refused = (code: ClaimError['code'], message?: string, entry: BallotEntryModel | null = null): BallotEntryResult => ({
  entry,
  error: claimError(code, message),
});

/** The draw's own time budget: a million entries take seconds, far under this. */
const DRAW_TIMEOUT_MS = 5 * 60_000;

/** What the API shows of a ballot: never the sealed seed. */
const publicBallot = ({ sealedSeed: _sealed, ...ballot }: BallotModel & { sealedSeed: string }): BallotModel => ballot;

export class BallotService {
  constructor(
    private readonly db: Database,
    /** Opens the sealed seed at the draw (the server's secrets key). */
    private readonly secretKey?: Buffer,
    /** Tells campaignStats subscribers that a campaign's figures moved. */
    private readonly live?: LiveUpdates,
  ) {}

  async enter(ctx: RequestContext, input: EnterBallotInput): Promise<BallotEntryResult> {
    let request: { holder: string; quantity: number; metadata: JsonValue | null; idempotencyKey: string | null };
    try {
      request = {
        holder: validate.text('holder', input.holder, validate.LIMITS.holderLength),
        quantity: validate.intInRange('quantity', input.quantity ?? 1, 1, validate.LIMITS.ticketsPerClaim),
        metadata: validate.metadata(input.metadata),
        idempotencyKey: validate.idempotencyKey(input.idempotencyKey),
      };
    } catch (error) {
      if (error instanceof InvalidInput) return refused('INVALID_INPUT', error.message);
      throw error;
    }
    if (!validate.isUuid(input.campaignId) || !inScope(ctx.viewer, input.campaignId)) return refused('CAMPAIGN_NOT_FOUND');
    const campaignId = input.campaignId.toLowerCase();
    const requestHash =
      request.idempotencyKey === null
        ? null
        : fingerprint('enterBallot', { campaignId, holder: request.holder, quantity: request.quantity, metadata: request.metadata });
    const entered = await retryDeadlocks(() => enterBallot(this.db.prisma, { campaignId, partnerId: ctx.viewer.partnerId, ...request, requestHash }));
    switch (entered.verdict) {
      case 'OK':
        this.live?.changed(campaignId);
        return { entry: await this.fresh(entered.entryId!), error: null };
      case 'PRIOR':
        if (entered.priorCampaignId !== campaignId || entered.priorRequestHash !== requestHash) return refused('IDEMPOTENCY_KEY_REUSED');
        return { entry: await this.fresh(entered.entryId!), error: null };
      case 'ALREADY_ENTERED':
        return refused('ALREADY_ENTERED', 'This holder already has an entry in this ballot.', await this.fresh(entered.entryId!));
      case 'ENTRIES_CLOSED':
        return refused('ENTRIES_CLOSED', 'Entries are closed: the ballot was drawn, or entriesCloseAt has passed.');
      case 'INVALID_INPUT':
        return refused('INVALID_INPUT', 'The campaign is not a BALLOT campaign, or quantity is above its perHolderLimit.');
      default:
        return refused(entered.verdict);
    }
  }

  /** ENTERED -> WITHDRAWN before the draw (the holder may enter again); after it, ENTRIES_CLOSED. */
  async withdraw(ctx: RequestContext, entryId: string): Promise<BallotEntryResult> {
    if (!validate.isUuid(entryId)) return refused('ENTRY_NOT_FOUND', 'Unknown ballot entry, or another partner\'s.');
    // A partner key's entry outside its campaigns (its scope, its mode: live or test) is as if it did not exist.
    if (ctx.viewer.kind === 'partner' && !(await this.get(ctx, entryId))) return refused('ENTRY_NOT_FOUND', 'Unknown ballot entry, or another partner\'s.');
    const id = entryId.toLowerCase();
    const { verdict, campaignId } = await retryDeadlocks(() =>
      withdrawBallotEntry(this.db.prisma, id, ctx.viewer.kind === 'admin' ? null : ctx.viewer.partnerId),
    );
    if (verdict === 'ENTRY_NOT_FOUND') return refused('ENTRY_NOT_FOUND', 'Unknown ballot entry, or another partner\'s.');
    const entry = await this.fresh(id);
    if (verdict === 'ENTRIES_CLOSED') return refused('ENTRIES_CLOSED', `The ballot was drawn: the entry is ${entry?.status ?? 'gone'}.`, entry);
    if (campaignId) this.live?.changed(campaignId);
    return { entry, error: null };
  }

  /**
   * Draws the ballot once; a second call, concurrent or later, answers the same ballot. NOT_FOUND for
   * an unknown campaign, BAD_USER_INPUT for one that is not a ballot, INVALID_TRANSITION before the
   * opening (no seed yet) or after the close.
   */
  async draw(ctx: RequestContext, campaignId: string): Promise<BallotModel> {
    if (!validate.isUuid(campaignId)) throw notFound('Campaign', campaignId);
    const id = campaignId.toLowerCase();
    const ballot = (await findBallots(this.db.prisma, [id])).get(id);
    if (!ballot) throw await this.noBallot(ctx, id);
    if (!ballot.drawnAt) {
      if (!this.secretKey) throw apiError(ErrorCode.NOT_CONFIGURED, 'Drawing a ballot needs WEBHOOK_SECRET_KEY, which sealed its seed.');
      const verdict = await drawBallot(this.db.prisma, id, openSeed(ballot.sealedSeed, this.secretKey), DRAW_TIMEOUT_MS);
      if (verdict === 'CAMPAIGN_NOT_OPEN') throw apiError(ErrorCode.INVALID_TRANSITION, `Campaign ${id} is CLOSED; its ballot can no longer be drawn.`);
      if (verdict !== 'OK' && verdict !== 'DRAWN') throw new Error(`drawBallot(${id}): ${verdict}`);
      this.live?.changed(id);
      ctx.loaders.stats.clearAll();
      ctx.loaders.ballot.clear(id);
    }
    const drawn = (await findBallots(this.db.prisma, [id])).get(id)!;
    return publicBallot(drawn);
  }

  /**
   * Campaign.ballot: null for a first-come campaign, and for a ballot not yet opened (no seed). A
   * partner sees only its own entry of partnerLimits ({} when nothing capped its wins): the others
   * name other partners and their allotments and quotas, which a partner is shown nowhere else
   * (Campaign.allotments, partnerStats). Verifying the whole draw needs every entry, which only the
   * operator reads and publishes (for verify-ballot); the other figures are the same for all.
   */
  async ballot(ctx: RequestContext, campaignId: string): Promise<BallotModel | null> {
    const ballot = await ctx.loaders.ballot.load(campaignId);
    if (!ballot?.partnerLimits || ctx.viewer.kind === 'admin') return ballot;
    const own = ballot.partnerLimits[ctx.viewer.partnerId];
    return { ...ballot, partnerLimits: own ? { [ctx.viewer.partnerId]: own } : {} };
  }

  /** `ballotEntry(id)`: the owning partner's (within its key's scope) or the admin's; null otherwise. */
  async get(ctx: RequestContext, id: string): Promise<BallotEntryModel | null> {
    if (!validate.isUuid(id)) return null;
    const entry = await this.fresh(id.toLowerCase());
    if (!entry || (ctx.viewer.kind === 'partner' && entry.partnerId !== ctx.viewer.partnerId) || !inScope(ctx.viewer, entry.campaignId)) return null;
    return entry;
  }

  /** Campaign.ballotEntries: entry order before the draw, rank order after it; a partner sees its own. */
  async list(ctx: RequestContext, campaignId: string, args: { first?: number | null; after?: string | null }): Promise<ConnectionModel<BallotEntryModel>> {
    const limit = validate.pageSize(args.first);
    const ballot = await ctx.loaders.ballot.load(campaignId);
    const order = ballot?.drawnAt ? 'rank' : 'seq';
    const after = args.after ? ballotEntryCursor.decode(order, args.after) : null;
    const partnerId = ctx.viewer.kind === 'admin' ? null : ctx.viewer.partnerId;
    const rows = await findBallotEntryPage(this.db.prisma, { campaignId, partnerId, byRank: order === 'rank', after, limit });
    const edges = rows.slice(0, limit).map((node) => ({ node, cursor: ballotEntryCursor.encode(order, order === 'rank' ? node.rank! : node.seq) }));
    return {
      edges,
      pageInfo: { hasNextPage: rows.length > limit, endCursor: edges.at(-1)?.cursor ?? null },
      totalCount: () => countBallotEntries(this.db.prisma, campaignId, partnerId, order === 'rank'),
    };
  }

  private async noBallot(ctx: RequestContext, id: string): Promise<Error> {
    const campaign = await ctx.loaders.campaignDetails.load(id);
    if (!campaign) return notFound('Campaign', id);
    if (campaign.mode !== 'BALLOT') return new InvalidInput('campaignId', `Campaign ${id} is not a BALLOT campaign.`);
    return apiError(ErrorCode.INVALID_TRANSITION, `Campaign ${id} is ${campaign.status}: a ballot is drawn once it is open.`);
  }

  private async fresh(id: string): Promise<BallotEntryModel | null> {
    const [entry] = await findBallotEntriesByIds(this.db.prisma, [id]);
    return entry ?? null;
  }
}

/** Campaign.ballot for the loaders: the public part of each campaign's ballot. */
export async function loadBallots(db: Database, campaignIds: readonly string[]): Promise<(BallotModel | null)[]> {
  const ballots = await findBallots(db.prisma, campaignIds);
  return campaignIds.map((id) => {
    const ballot = ballots.get(id);
    return ballot ? publicBallot(ballot) : null;
  });
}
