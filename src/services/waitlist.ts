// Waitlists: joining, leaving and reading entries (db/waitlist.ts has the how; the offers are made
// in the database, by whoever returns a ticket). Expected outcomes come back in the payload's
// `error`, as a claim's do.
import { inScope } from '../auth';
import type { Database } from '../db/client';
import type { JsonValue } from '../db/json';
import { retryDeadlocks } from '../db/pgErrors';
import { countEntries, findEntriesByIds, findEntryPage, joinWaitlist, leaveWaitlist } from '../db/waitlist';
import { claimError, InvalidInput, type ClaimError } from '../errors';
import type { LiveUpdates } from '../live';
import type { ConnectionModel, WaitlistEntryModel, WaitlistStatus } from '../models';
import * as validate from '../validation';
import { sequenceCursor } from './cursors';
import { fingerprint } from './fingerprint';
import type { RequestContext } from './requestContext';

export interface JoinWaitlistInput {
  campaignId: string;
  holder: string;
  quantity?: number | null;
  metadata?: JsonValue | null;
  idempotencyKey?: string | null;
}

export type EntryResult = { entry: WaitlistEntryModel | null; error: ClaimError | null };

const refused = (code: ClaimError['code'], message?: string, entry: WaitlistEntryModel | null = null): EntryResult => ({
  entry,
  error: claimError(code, message),
});


export class WaitlistService {
  constructor(
    private readonly db: Database,
    /** Tells campaignStats subscribers that a campaign's figures moved. */
    private readonly live?: LiveUpdates,
  ) {}

  async join(ctx: RequestContext, input: JoinWaitlistInput): Promise<EntryResult> {
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
        : fingerprint('joinWaitlist', { campaignId, holder: request.holder, quantity: request.quantity, metadata: request.metadata });
    const joined = await retryDeadlocks(() =>
      joinWaitlist(this.db.prisma, { campaignId, partnerId: ctx.viewer.partnerId, ...request, requestHash }),
    );
    switch (joined.verdict) {
      case 'OK':
        return { entry: await this.fresh(joined.entryId!), error: null };
      case 'PRIOR':
        if (joined.priorCampaignId !== campaignId || joined.priorRequestHash !== requestHash) return refused('IDEMPOTENCY_KEY_REUSED');
        return { entry: await this.fresh(joined.entryId!), error: null };
      case 'ALREADY_ENTERED':
        return refused('ALREADY_ENTERED', 'This holder already has a live entry on this waitlist.', await this.fresh(joined.entryId!));
      case 'INVALID_INPUT':
        return refused('INVALID_INPUT', "The campaign's release policy is not WAITLIST_FIRST, or quantity is above its perHolderLimit.");
      case 'NOT_SOLD_OUT':
        return refused('NOT_SOLD_OUT', 'A ticket is available to this partner: claim it instead.');
      default:
        return refused(joined.verdict);
    }
  }

  /** A WAITING entry is LEFT; an OFFERED one's holds are released and passed on. */
  async leave(ctx: RequestContext, entryId: string): Promise<EntryResult> {
    if (!validate.isUuid(entryId)) return refused('ENTRY_NOT_FOUND');
    // A partner key's entry outside its campaigns (its scope, its mode: live or test) is as if it did not exist.
    if (ctx.viewer.kind === 'partner' && !(await this.get(ctx, entryId))) return refused('ENTRY_NOT_FOUND');
    const id = entryId.toLowerCase();
    const verdict = await retryDeadlocks(() => leaveWaitlist(this.db.prisma, id, ctx.viewer.kind === 'admin' ? null : ctx.viewer.partnerId));
    if (verdict === 'ENTRY_NOT_FOUND') return refused('ENTRY_NOT_FOUND');
    const entry = await this.fresh(id);
    if (verdict === 'NOT_WAITLISTED') return refused('NOT_WAITLISTED', `The entry is ${entry?.status ?? 'gone'}: it is no longer waiting or offered.`, entry);
    if (entry) this.live?.changed(entry.campaignId);
    ctx.loaders.allocation.clearAll();
    ctx.loaders.ticket.clearAll();
    ctx.loaders.stats.clearAll();
    return { entry, error: null };
  }

  /** `waitlistEntry(id)`: the owning partner's (within its key's scope) or the admin's; null otherwise. */
  async get(ctx: RequestContext, id: string): Promise<WaitlistEntryModel | null> {
    if (!validate.isUuid(id)) return null;
    const [entry] = await findEntriesByIds(this.db.prisma, [id.toLowerCase()]);
    if (!entry || (ctx.viewer.kind === 'partner' && entry.partnerId !== ctx.viewer.partnerId) || !inScope(ctx.viewer, entry.campaignId)) return null;
    return entry;
  }

  /** A campaign's entries in join order (admin). */
  async list(
    ctx: RequestContext,
    campaignId: string,
    args: { first?: number | null; after?: string | null; status?: WaitlistStatus | null },
  ): Promise<ConnectionModel<WaitlistEntryModel>> {
    const limit = validate.pageSize(args.first);
    const afterSeq = args.after ? sequenceCursor.decode(args.after) : null;
    const partnerId = ctx.viewer.kind === 'admin' ? null : ctx.viewer.partnerId;
    const status = args.status ?? null;
    const rows = await findEntryPage(this.db.prisma, { campaignId, partnerId, status, afterSeq, limit });
    const edges = rows.slice(0, limit).map((node) => ({ node, cursor: sequenceCursor.encode(node.seq) }));
    return {
      edges,
      pageInfo: { hasNextPage: rows.length > limit, endCursor: edges.at(-1)?.cursor ?? null },
      totalCount: () => countEntries(this.db.prisma, campaignId, partnerId, status),
    };
  }

  /** The number of WAITING entries (batched per request). */
  length(ctx: RequestContext, campaignId: string): Promise<number> {
    return ctx.loaders.waitlistFigures.load(campaignId).then((f) => f.waiting);
  }

  private async fresh(id: string): Promise<WaitlistEntryModel | null> {
    const [entry] = await findEntriesByIds(this.db.prisma, [id]);
    return entry ?? null;
  }
}
