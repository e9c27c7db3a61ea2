// A claim, end to end: claimTicket, holdTicket and claimTickets. The service validates the request,
// asks the database, and turns each outcome into a typed result; every decision is the database's.
//
//   claimTicket    the first look (batcher.ts → firstLook.ts: the gate, one AVAILABLE ticket, alone
//                  or in a group of waiting requests); what it cannot decide goes to the second look
//   holdTicket,    the second look only (secondLook.ts: tessera_claim_tickets, which also takes the
//   claimTickets   claimer's allotted tickets, lapsed allotments' and expired holds')
//
// The second look is repeated here until its answer is definite (single(), below). Retries never
// change what a request means: a contended pool is asked again (waiting, then with a fresh
// snapshot), a key that raced in is answered from the allocations the other request made, and a
// keyed claim whose connection died is asked again so the key can answer it.
import { randomInt } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { inScope } from '../auth';
import { isTestCampaignId } from '../testMode';
import type { Database } from '../db/client';
import { claimTicket, readClaim, type ClaimOutcome, type ClaimTicketParams } from './secondLook';
import { campaignMaxHoldSeconds } from '../db/extendHold';
import { findAllocationsByKey } from '../db/findAllocations';
import type { JsonValue } from '../db/json';
import { isConnectionLost, isTransientDbError, pgErrorInfo, PG } from '../db/pgErrors';
import { randomPickStart } from '../db/pickTickets';
import { apiError, BALLOT_CLAIM_MESSAGE, claimError, ErrorCode, InvalidInput, WAITLIST_SOLD_OUT_MESSAGE, type ClaimError } from '../errors';
import type { ClaimErrorCode } from '../generated/graphql';
import type { LiveUpdates } from '../live';
import type { Metrics } from '../metrics';
import type { AllocationModel } from '../models';
import * as validate from '../validation';
import { ticketKey } from '../services/allocationRecords';
import type { ClaimBatcher } from './batcher';
import type { RefusalCounter } from '../services/refusalCounter';
import { fingerprint } from '../services/fingerprint';
import { ATTR, decideOutcome, inChild, rememberAllocation, type Span } from '../tracing';
import type { RequestContext } from '../services/requestContext';

export interface ClaimInput {
  campaignId: string;
  holder: string;
  metadata?: JsonValue | null;
  idempotencyKey?: string | null;
}
export interface HoldInput extends ClaimInput {
  ttlSeconds: number;
}
export interface ClaimManyInput extends ClaimInput {
  quantity: number;
}

export type ClaimResult = { allocation: AllocationModel; error: null } | { allocation: null; error: ClaimError };
export type ClaimManyResult = { allocations: AllocationModel[]; error: ClaimError | null };

/** What one request asks the claim statement for. */
interface Request {
  operation: 'claimTicket' | 'holdTicket' | 'claimTickets';
  kind: ClaimTicketParams['kind'];
  campaignId: string;
  holder: string;
  metadata: JsonValue | null;
  idempotencyKey: string | null;
  quantity: number;
  ttlSeconds: number | null;
}

type Allocated = { allocations: AllocationModel[]; error: null; replayed: boolean } | { allocations: []; error: ClaimError };

const refusal = (code: ClaimErrorCode, message?: string): Allocated => ({ allocations: [], error: claimError(code, message) });

/** Extra attempts after a deadlock, or for a keyed claim whose connection died under it. */
const CONNECTION_LOST_RETRIES = 2;
/** Waiting looks of a claim that found nothing free while claims in flight held tickets (single(), below). */
const MAX_WAITS = 3;

export class AllocationService {
  constructor(
    private readonly db: Database,
    /** The first look of claimTicket requests, alone or in groups (CLAIM_BATCH_MAX). */
    private readonly batcher: ClaimBatcher,
    private readonly metrics?: Metrics,
    /** Tells campaignStats subscribers that a campaign's figures moved. */
    private readonly live?: LiveUpdates,
    /** Refusals per campaign and minute, for the timeline (off the claim path: services/refusalCounter.ts). */
    private readonly refusals?: RefusalCounter,
  ) {}

  async claim(ctx: RequestContext, input: ClaimInput): Promise<ClaimResult> {
    const result = await this.allocate(ctx, 'claimTicket', () => ({
      ...this.common(input),
      operation: 'claimTicket',
      kind: 'claim',
      quantity: 1,
      ttlSeconds: null,
    }));
    return single(result);
  }

  /** A ticket HELD for ttlSeconds: counted as held; confirmHold makes it ACTIVE, expiry frees it. */
  async hold(ctx: RequestContext, input: HoldInput): Promise<ClaimResult> {
    const result = await this.allocate(ctx, 'holdTicket', () => ({
      ...this.common(input),
      operation: 'holdTicket',
      kind: 'hold',
      quantity: 1,
      ttlSeconds: validate.intInRange('ttlSeconds', input.ttlSeconds, 1, validate.LIMITS.holdSeconds),
    }));
    return single(result);
  }

  /** `quantity` tickets, all or nothing. */
  async claimMany(ctx: RequestContext, input: ClaimManyInput): Promise<ClaimManyResult> {
    const result = await this.allocate(ctx, 'claimTickets', () => ({
      ...this.common(input),
      operation: 'claimTickets',
      kind: 'claim',
      quantity: validate.intInRange('quantity', input.quantity, 1, validate.LIMITS.ticketsPerClaim),
      ttlSeconds: null,
    }));
    return { allocations: result.allocations, error: result.error };
  }

  private common(input: ClaimInput): Pick<Request, 'campaignId' | 'holder' | 'metadata' | 'idempotencyKey'> {
    return {
      campaignId: input.campaignId,
      holder: validate.text('holder', input.holder, validate.LIMITS.holderLength),
      metadata: validate.metadata(input.metadata),
      idempotencyKey: validate.idempotencyKey(input.idempotencyKey),
    };
  }

  /**
   * Validation, metrics (outcome and latency), and the retry of a keyed request whose database
   * connection died under it: the statement may have committed, and the retry then finds it
   * through the key and answers it. Without a key a retry could allocate twice, so the client gets
   * UNAVAILABLE and decides.
   */
  private async allocate(ctx: RequestContext, operation: Request['operation'], parse: () => Request): Promise<Allocated> {
    const started = performance.now();
    // Tracing on: the operation's span gets the claim's campaign, outcome and allocation.
    const span = ctx.trace;
    let outcome = 'ERROR';
    let test = false;
    try {
      let request: Request;
      try {
        request = parse();
        test = isTestCampaignId(request.campaignId);
      } catch (error) {
        if (error instanceof InvalidInput) {
          outcome = 'INVALID_INPUT';
          return refusal('INVALID_INPUT', error.message);
        }
        throw error;
      }
      span?.setAttribute(ATTR.campaignId, request.campaignId);
      let retryReason = '';
      for (let attempt = 0; ; attempt += 1) {
        try {
          let result =
            attempt === 0
              ? await this.allocateOnce(ctx, request, span)
              : await inChild(span, 'tessera.claim.retry', { [ATTR.attempt]: attempt, [ATTR.retryReason]: retryReason }, (retry) => this.allocateOnce(ctx, request, retry));
          if (result.error?.code === 'SOLD_OUT') result = await this.soldOut(ctx, request.campaignId.toLowerCase(), result);
          if (span && result.error === null) this.traced(span, result.allocations);
          outcome = result.error ? result.error.code : result.replayed ? 'REPLAYED' : 'ALLOCATED';
          if (outcome === 'ALLOCATED') this.live?.changed(result.allocations[0]!.campaignId);
          else if (result.error) this.refusals?.count(request.campaignId, result.error.code);
          return result;
        } catch (error) {
          // A deadlock victim was rolled back, certainly: always safe to ask again. A lost
          // connection may have committed: safe only when the key can find what it did, and only
          // while the server answers (not when the pool gave up on it: stallWatch.ts).
          const deadlock = pgErrorInfo(error).code === PG.DEADLOCK_DETECTED;
          const retryable = deadlock || (request.idempotencyKey !== null && isConnectionLost(error) && this.db.unresponsive() === null);
          if (!retryable || attempt >= CONNECTION_LOST_RETRIES) throw error;
          retryReason = deadlock ? 'deadlock' : 'connection lost (keyed)';
          await sleep(25 * (attempt + 1) + randomInt(25));
        }
      }
    } catch (error) {
      if (isTransientDbError(error) || (error as { extensions?: { code?: string } }).extensions?.code === ErrorCode.UNAVAILABLE) outcome = 'UNAVAILABLE';
      throw error;
    } finally {
      if (span) decideOutcome(span, outcome);
      // Test campaigns' claims stay out of the live figures (testMode.ts).
      if (test) {
        this.metrics?.testClaims.inc({ operation, outcome });
      } else {
        this.metrics?.claims.inc({ operation, outcome });
        this.metrics?.claimSeconds.observe({ operation, outcome }, (performance.now() - started) / 1000);
      }
    }
  }

  /** Tracing on: each new allocation remembers its span (its webhook deliveries link to it); a single one is named on the span. */
  private traced(span: Span, allocations: readonly AllocationModel[]): void {
    for (const allocation of allocations) rememberAllocation(allocation.id, span);
    if (allocations.length === 1) span.setAttribute(ATTR.allocationId, allocations[0]!.id);
  }

  /** One look at the request; `trace`: the span its work goes under (tracing on). */
  private async allocateOnce(ctx: RequestContext, r: Request, trace: Span | undefined): Promise<Allocated> {
    // Outside a scoped partner key's campaigns, exactly as for a campaign that does not exist.
    if (!validate.isUuid(r.campaignId) || !inScope(ctx.viewer, r.campaignId)) return refusal('CAMPAIGN_NOT_FOUND');
    const campaignId = r.campaignId.toLowerCase();
    const partnerId = ctx.viewer.partnerId;
    const requestHash =
      r.idempotencyKey === null
        ? null
        : fingerprint(r.operation, { campaignId, holder: r.holder, metadata: r.metadata, quantity: r.quantity, ttlSeconds: r.ttlSeconds });
    if (r.operation === 'claimTicket') {
      // The first look (alone or in a group: batcher.ts); what it cannot decide goes to the
      // second look below.
      const answer = await this.batcher.submit({ campaignId, partnerId, holder: r.holder, metadata: r.metadata, idempotencyKey: r.idempotencyKey, requestHash }, trace);
      switch (answer.kind) {
        case 'CLAIMED':
          ctx.loaders.ticket.prime(ticketKey(answer.ticket), answer.ticket);
          ctx.loaders.allocation.prime(answer.allocation.id, answer.allocation);
          ctx.loaders.campaign.prime(campaignId, answer.campaign);
          return { allocations: [answer.allocation], error: null, replayed: false };
        case 'FINAL':
          return answer.verdict === 'CAMPAIGN_NOT_OPEN' ? this.notOpen(ctx, campaignId) : refusal(answer.verdict);
        case 'PRIOR':
          return this.replay(ctx, answer.campaignId, r.idempotencyKey!, requestHash, trace);
        case 'FAILED':
          throw answer.error;
        case 'BUSY':
          throw apiError(ErrorCode.UNAVAILABLE, 'Too many claims are waiting; retry shortly.', { retryable: true });
        default:
          break; // UNDECIDED or RETRY: the single claim answers it
      }
    }
    if (r.ttlSeconds !== null) {
      // A hold may not outlast the campaign's cap (set at creation, never changed).
      const longest = await campaignMaxHoldSeconds(this.db.prisma, campaignId, trace);
      if (longest !== null && r.ttlSeconds > longest) return refusal('INVALID_INPUT', `ttlSeconds may be at most the campaign's maxHoldSeconds (${longest}).`);
    }
    // A claimTicket's second look, in its own span when tracing is on; a hold's or claimTickets' only look.
    if (r.operation === 'claimTicket') return inChild(trace, 'tessera.claim.second_look', undefined, (second) => this.single(ctx, r, campaignId, requestHash, second));
    return this.single(ctx, r, campaignId, requestHash, trace);
  }

  /**
   * The single claim statement — the second look of a claimTicket request, the only look of a hold
   * or a multi-ticket claim — until its answer is definite:
   *   1. SKIP LOCKED: takes what is free (AVAILABLE tickets, then expired holds);
   *   2. if too few were free but more looked claimable — locked by claims in flight that may roll
   *      back — it waits for exactly those rows (plain FOR UPDATE): each one
   *      comes back (a rollback: it takes it) or turns out taken; then
   *   3. it looks once more with a fresh snapshot (what the waited-on claims gave back is invisible
   *      to the statement that waited). Found nothing free, and nothing locked: SOLD_OUT when the
   *      campaign is sold out (tessera_sold_out), else ALL_ALLOTTED or ALL_HELD while tickets
   *      may come back. Still contended — newer claims took rows meanwhile — it waits for those
   *      (2 and 3 again), up to MAX_WAITS times: a group of one campaign's claims on Citus holds
   *      its rows for a whole call of first looks, and the claims finishing a sold-out race are
   *      answered SOLD_OUT rather than "retry". Contended still, it answers ALL_HELD: nothing is
   *      free now, tickets in flight may come back, retry. Never SOLD_OUT while a ticket could
   *      still come back (that would under-allocate), and never UNAVAILABLE while the database
   *      answers: at most 2 × MAX_WAITS + 1 statements, no queue of its own.
   */
  private async single(ctx: RequestContext, r: Request, campaignId: string, requestHash: string | null, trace: Span | undefined): Promise<Allocated> {
    const partnerId = ctx.viewer.partnerId;
    let wait = false;
    let waits = 0;
    for (let keyRaces = 0; ; ) {
      let outcome: ClaimOutcome;
      try {
        const rows = await claimTicket(
          this.db.prisma,
          { ...r, campaignId, partnerId, requestHash, start: wait ? 0 : randomPickStart(), wait },
          this.db.dialect.keyCheck,
          trace,
        );
        outcome = readClaim(rows, campaignId);
      } catch (error) {
        // Backstop only: the gate serializes requests with one key, so the unique index on
        // (campaign, partner, key, index) should never fire; if it does, asking again finds PRIOR.
        const info = pgErrorInfo(error);
        if (info.code === PG.UNIQUE_VIOLATION && info.constraint === 'allocations_campaign_id_partner_id_idempotency_key_request_index_key' && keyRaces < 2) {
          keyRaces += 1;
          trace?.addEvent('idempotency key raced: asked again', { [ATTR.attempt]: keyRaces });
          continue;
        }
        throw error;
      }
      switch (outcome.kind) {
        case 'CLAIMED':
          outcome.tickets.forEach((ticket) => ctx.loaders.ticket.prime(ticketKey(ticket), ticket));
          outcome.allocations.forEach((allocation) => ctx.loaders.allocation.prime(allocation.id, allocation));
          ctx.loaders.campaign.prime(campaignId, outcome.campaign);
          return { allocations: outcome.allocations, error: null, replayed: false };
        case 'PRIOR':
          return this.replay(ctx, outcome.campaignId, r.idempotencyKey!, requestHash, trace);
        case 'SHORT':
          if (wait) {
            wait = false;
            waits += 1;
            continue;
          }
          if (outcome.contended && waits < MAX_WAITS) {
            wait = true;
            trace?.addEvent('tickets locked by claims in flight: waiting for them', { [ATTR.waits]: waits + 1 });
            continue;
          }
          return this.shortage(r, outcome.soldOut && !outcome.contended, outcome.allotted);
        case 'CAMPAIGN_NOT_OPEN':
          return this.notOpen(ctx, campaignId);
        default:
          return refusal(outcome.kind);
      }
    }
  }

  /**
   * CAMPAIGN_NOT_OPEN, saying why when the campaign is a ballot — which takes entries, never claims,
   * open or not — rather than "draft, closed, or outside its window". The mode never changes after
   * creation, so one read of it on this refusal (never on a claim that passes) cannot be stale.
   */
  private async notOpen(ctx: RequestContext, campaignId: string): Promise<Allocated> {
    const campaign = await ctx.loaders.campaignDetails.load(campaignId);
    return refusal('CAMPAIGN_NOT_OPEN', campaign?.mode === 'BALLOT' ? BALLOT_CLAIM_MESSAGE : undefined);
  }

  /**
   * SOLD_OUT, saying what to do instead on a WAITLIST_FIRST campaign: join its waitlist. Whichever
   * look answered it (the batcher's, the second look, a replayed refusal), the campaign's release
   * policy is read once, on this refusal only — never on a claim that passes.
   */
  private async soldOut(ctx: RequestContext, campaignId: string, result: Allocated): Promise<Allocated> {
    const campaign = await ctx.loaders.campaignDetails.load(campaignId);
    return campaign?.releasePolicy === 'WAITLIST_FIRST' ? refusal('SOLD_OUT', WAITLIST_SOLD_OUT_MESSAGE) : result;
  }

  /**
   * Nothing free for this partner: tickets allotted to others come first (ALL_ALLOTTED), then
   * tickets that may come back (ALL_HELD); SOLD_OUT only when the campaign is sold out by the one
   * definition its stats and CAMPAIGN_SOLD_OUT use (prisma/functions/tessera_sold_out.sql).
   */
  private shortage(r: Request, soldOut: boolean, allotted: boolean): Allocated {
    if (r.operation === 'claimTickets') {
      const why = allotted ? ' (others are allotted to other partners)' : soldOut ? '' : ' (some are held and may come back)';
      return refusal('INSUFFICIENT_TICKETS', `Fewer than ${r.quantity} tickets are available${why}; nothing was allocated.`);
    }
    return refusal(allotted ? 'ALL_ALLOTTED' : soldOut ? 'SOLD_OUT' : 'ALL_HELD');
  }

  /** Same partner + key: the original allocations if the request is the same, else a refusal. */
  private async replay(ctx: RequestContext, campaignId: string, idempotencyKey: string, requestHash: string | null, trace: Span | undefined): Promise<Allocated> {
    const prior = await findAllocationsByKey(this.db.prisma, { campaignId, partnerId: ctx.viewer.partnerId, idempotencyKey }, trace);
    if (prior.allocations.length === 0) throw new Error(`allocations named by idempotency key in campaign ${campaignId} are missing`);
    if (prior.requestHash !== requestHash) return refusal('IDEMPOTENCY_KEY_REUSED');
    prior.allocations.forEach((allocation) => ctx.loaders.allocation.prime(allocation.id, allocation));
    return { allocations: prior.allocations, error: null, replayed: true };
  }
}

function single(result: Allocated): ClaimResult {
  if (result.error) return { allocation: null, error: result.error };
  return { allocation: result.allocations[0]!, error: null };
}
