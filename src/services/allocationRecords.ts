// Allocations once they exist: confirming a hold, releasing, and reading them. (Making them is the
// claim path: allocation.ts.)
import { inScope } from '../auth';
import { confirmHold } from '../db/confirmHold';
import { extendHold } from '../db/extendHold';
import { countAllocations, findAllocationPage } from '../db/findAllocations';
import type { Database } from '../db/client';
import { releaseAllocation } from '../db/releaseAllocation';
import { apiError, claimError, ErrorCode, InvalidInput } from '../errors';
import type { ClaimErrorCode } from '../generated/graphql';
import type { LiveUpdates } from '../live';
import type { AllocationModel, ConnectionModel } from '../models';
import * as validate from '../validation';
import type { ClaimResult } from '../claim/service';
import { sequenceCursor } from './cursors';
import type { RequestContext } from './requestContext';

/** The loaders' key of a ticket. */
export const ticketKey = (t: { campaignId: string; id: string }) => `${t.campaignId}:${t.id}`;

const refusedOne = (code: ClaimErrorCode): ClaimResult => ({ allocation: null, error: claimError(code) });

export class AllocationRecordService {
  constructor(
    private readonly db: Database,
    /** Tells campaignStats subscribers that a campaign's figures moved. */
    private readonly live?: LiveUpdates,
  ) {}

  /**
   * HELD -> ACTIVE while the hold lasts. A confirmation of a hold that was already confirmed
   * answers it again (a retry is harmless); an expired one is HOLD_EXPIRED — its ticket is back in
   * the pool — and anything else that is not a hold is NOT_HELD.
   */
  async confirm(ctx: RequestContext, allocationId: string): Promise<ClaimResult> {
    const existing = await this.ownAllocation(ctx, allocationId);
    if (!existing) return refusedOne('ALLOCATION_NOT_FOUND');
    const { verdict, allocation } = await confirmHold(this.db.prisma, existing);
    if (allocation) {
      this.live?.changed(allocation.campaignId);
      ctx.loaders.allocation.clear(allocation.id).prime(allocation.id, allocation);
      ctx.loaders.ticket.clear(ticketKey({ campaignId: allocation.campaignId, id: allocation.ticketId }));
      return { allocation, error: null };
    }
    ctx.loaders.allocation.clear(allocationId);
    const now = await ctx.loaders.allocation.load(allocationId);
    if (now?.status === 'EXPIRED') return refusedOne('HOLD_EXPIRED');
    if (now?.status === 'ACTIVE' && now.confirmedAt !== null) return { allocation: now, error: null };
    if (now?.status === 'HELD' && verdict !== 'OK') return refusedOne(verdict as ClaimErrorCode);
    return refusedOne('NOT_HELD');
  }

  /**
   * A hold's expiry moved to max(expiresAt, now + ttlSeconds), within the campaign's maxHoldSeconds
   * and, for a waitlist offer's or a ballot win's hold, within its window (db/extendHold.ts). The
   * admin may extend any hold, a partner only its own.
   */
  async extend(ctx: RequestContext, allocationId: string, ttlSeconds: number): Promise<ClaimResult> {
    let ttl: number;
    try {
      ttl = validate.intInRange('ttlSeconds', ttlSeconds, 1, validate.LIMITS.holdSeconds);
    } catch (error) {
      if (error instanceof InvalidInput) return { allocation: null, error: claimError('INVALID_INPUT', error.message) };
      throw error;
    }
    const existing = await this.ownAllocation(ctx, allocationId);
    if (!existing) return refusedOne('ALLOCATION_NOT_FOUND');
    const { verdict, allocation } = await extendHold(this.db.prisma, existing, ttl);
    ctx.loaders.allocation.clear(existing.id);
    if (!allocation) return refusedOne(verdict as ClaimErrorCode);
    ctx.loaders.allocation.prime(allocation.id, allocation);
    return { allocation, error: null };
  }

  /**
   * Returns the ticket to the pool. The admin may release any allocation, a partner only its own;
   * releasing an allocation that is no longer live answers it as it is (a retry is harmless).
   */
  async release(ctx: RequestContext, allocationId: string): Promise<ClaimResult> {
    if (!validate.isUuid(allocationId)) return refusedOne('ALLOCATION_NOT_FOUND');
    // A partner key's allocation outside its campaigns (its scope, its mode: live or test) is as if it did not exist.
    if (ctx.viewer.kind === 'partner' && !(await this.ownAllocation(ctx, allocationId))) return refusedOne('ALLOCATION_NOT_FOUND');
    const ownerFilter = ctx.viewer.kind === 'admin' ? null : ctx.viewer.partnerId;
    const released = await releaseAllocation(this.db.prisma, allocationId, ownerFilter);
    if (released) {
      this.live?.changed(released.campaignId);
      ctx.loaders.ticket.clear(ticketKey({ campaignId: released.campaignId, id: released.ticketId }));
      ctx.loaders.allocation.clear(released.id).prime(released.id, released);
      ctx.loaders.stats.clear(released.campaignId);
      return { allocation: released, error: null };
    }
    const existing = await this.ownAllocation(ctx, allocationId);
    return existing ? { allocation: existing, error: null } : refusedOne('ALLOCATION_NOT_FOUND');
  }

  /** The allocation if it exists and the caller may act on it (the admin, or its partner within its key's scope). */
  private async ownAllocation(ctx: RequestContext, allocationId: string): Promise<AllocationModel | null> {
    if (!validate.isUuid(allocationId)) return null;
    const allocation = await ctx.loaders.allocation.load(allocationId.toLowerCase());
    if (!allocation || (ctx.viewer.kind === 'partner' && allocation.partnerId !== ctx.viewer.partnerId)) return null;
    return inScope(ctx.viewer, allocation.campaignId) ? allocation : null;
  }

  /** `allocation(id)`: null when unknown or outside a scoped key's campaigns; FORBIDDEN when it is another partner's. */
  async get(ctx: RequestContext, id: string): Promise<AllocationModel | null> {
    if (!validate.isUuid(id)) return null;
    const allocation = await ctx.loaders.allocation.load(id.toLowerCase());
    if (allocation && !inScope(ctx.viewer, allocation.campaignId)) return null;
    if (allocation && ctx.viewer.kind === 'partner' && allocation.partnerId !== ctx.viewer.partnerId) {
      throw apiError(ErrorCode.FORBIDDEN, 'This allocation belongs to another partner.');
    }
    return allocation;
  }

  /** A campaign's allocations in allocation order; a partner sees only its own. */
  async listForCampaign(
    ctx: RequestContext,
    campaignId: string,
    args: { first?: number | null; after?: string | null; order?: 'OLDEST_FIRST' | 'NEWEST_FIRST' | null; holder?: string | null; code?: string | null },
  ): Promise<ConnectionModel<AllocationModel>> {
    const limit = validate.pageSize(args.first);
    const afterSequence = args.after ? sequenceCursor.decode(args.after) : null;
    const partnerId = ctx.viewer.kind === 'admin' ? null : ctx.viewer.partnerId;
    const newestFirst = args.order === 'NEWEST_FIRST';
    const holder = args.holder ? validate.text('holder', args.holder, validate.LIMITS.holderLength) : null;
    const code = args.code ? validate.text('code', args.code, 128) : null;
    // An operator's page (the console, the export) may come from a replica; a partner reads its own
    // allocations from the primary, so it always sees the claim it was just answered (read-your-writes).
    const db = ctx.viewer.kind === 'admin' ? this.db.read().prisma : this.db.prisma;
    const rows = await findAllocationPage(db, { campaignId, partnerId, afterSequence, limit, newestFirst, holder, code });
    const page = rows.slice(0, limit);
    page.forEach((allocation) => ctx.loaders.allocation.prime(allocation.id, allocation));
    const edges = page.map((node) => ({ node, cursor: sequenceCursor.encode(node.sequence) }));
    return {
      edges,
      pageInfo: { hasNextPage: rows.length > limit, endCursor: edges.at(-1)?.cursor ?? null },
      totalCount: () => countAllocations(db, { campaignId, partnerId, holder, code }),
    };
  }
}
