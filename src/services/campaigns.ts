// Campaigns: the operator's side — create, load, open, close — and the reads both sides share.
import { inScope } from '../auth';
import { isTestCampaignId, newTestCampaignId } from '../testMode';
import { advanceTestClock } from '../db/testClock';
import { purgeTestData, type Purged } from '../db/purgeTestData';
import { resetTestCampaign } from '../db/resetTestCampaign';
import { retryDeadlocks } from '../db/pgErrors';
import { expireHolds, lapseAllotments } from '../db/expireHolds';
import { offerAllReturned } from '../db/waitlist';
import { passOnBallots } from '../db/ballots';
import type { Database } from '../db/client';
import type { LiveUpdates } from '../live';
import type { Logger } from '../logger';
import { newSeed, sealSeed, seedCommitment } from '../ballot/seed';
import { campaignTimeline, type TimelineUnit } from '../db/campaignReports';
import { lockCampaignGate } from '../db/campaignGate';
import { repairCampaign, verifyCampaign } from '../db/verifyCampaign';
import { closeCampaign } from '../db/closeCampaign';
import { openCampaign } from '../db/openCampaign';
import { setPartnerQuota } from '../db/partnerQuota';
import { findAllotments, setPartnerAllotment, type AllotmentRow } from '../db/allotments';
import { findCampaignPage } from '../db/findCampaigns';
import { analyzeIfStale, generateTicketsByCopy, loadTicketsByCopy } from '../db/loadTickets';
import type { GraphQLError } from 'graphql';
import { apiError, ErrorCode, InvalidInput, notFound } from '../errors';
import type { CampaignMode, CampaignModel, CampaignVerificationModel, CampaignStatsModel, ReleasePolicy, CampaignStatus, ConnectionModel, PartnerStatsModel, TimelinePointModel } from '../models';
import { campaignCursor } from './cursors';
import { campaignStatsStream } from './liveStats';
import * as validate from '../validation';
import type { RequestContext } from './requestContext';

/** A test copy's name ends so (the name is cut to fit 200 characters with it). */
const TEST_COPY_SUFFIX = ' (test copy)';
/** A test copy's synthetic codes start so. */
const TEST_COPY_PREFIX = 'TEST-';
/** advanceTestClock moves a clock at most a year at a time. */
const MAX_TEST_CLOCK_SECONDS = 31_536_000;
/** Expired holds returned per statement when advanceTestClock sweeps (as the sweeper does). */
const HOLD_SWEEP_BATCH = 1000;

export interface CreateCampaignInput {
  name: string;
  perHolderLimit?: number | null;
  opensAt?: Date | null;
  closesAt?: Date | null;
  lowStockThreshold?: number | null;
  maxHoldSeconds?: number | null;
  releasePolicy?: ReleasePolicy | null;
  waitlistOfferSeconds?: number | null;
  mode?: CampaignMode | null;
  entriesCloseAt?: Date | null;
  ballotConfirmSeconds?: number | null;
  /** A test campaign (testMode.ts); fixed at creation. */
  test?: boolean | null;
}

export interface UpdateCampaignInput {
  name?: string | null;
  perHolderLimit?: number | null;
  opensAt?: Date | null;
  closesAt?: Date | null;
  releasePolicy?: ReleasePolicy | null;
  maxHoldSeconds?: number | null;
  lowStockThreshold?: number | null;
  waitlistOfferSeconds?: number | null;
}

export interface LoadResult {
  loaded: number;
  duplicates: number;
  campaign: CampaignModel;
}

const CAMPAIGN_FIELDS = {
  id: true,
  name: true,
  status: true,
  opensAt: true,
  closesAt: true,
  perHolderLimit: true,
  lowStockThreshold: true,
  maxHoldSeconds: true,
  releasePolicy: true,
  waitlistOfferSeconds: true,
  mode: true,
  entriesCloseAt: true,
  ballotConfirmSeconds: true,
  createdAt: true,
} as const;

/** How long a waitlist offer is held when createCampaign does not say (15 minutes). */
const DEFAULT_WAITLIST_OFFER_SECONDS = 900;
/** How long a ballot winner's hold lasts when createCampaign does not say (15 minutes). */
const DEFAULT_BALLOT_CONFIRM_SECONDS = 900;

export class CampaignService {
  constructor(
    private readonly db: Database,
    /** Tells campaignStats subscribers that a campaign's figures moved. */
    private readonly live?: LiveUpdates,
    /** Seals a ballot's seed until its draw (the server's secrets key); without it a BALLOT campaign cannot open. */
    private readonly secretKey?: Buffer,
    private readonly logger?: Logger,
  ) {}

  /** The last ANALYZE after a load (analyzed()): one at a time in this process. */
  private analyzing: Promise<void> = Promise.resolve();

  /**
   * After a load's commit, the statistics it made stale (db/loadTickets.ts, analyzeIfStale), before
   * the load answers — so a campaign opened right after is planned with them. One at a time: a
   * second load waits for the ANALYZE in progress, then decides for itself. The load has committed
   * whatever happens here: a failed ANALYZE is logged, never the load's error.
   */
  private analyzed(loaded: number): Promise<void> {
    this.analyzing = this.analyzing.then(async () => {
      try {
        await analyzeIfStale(this.db.prisma, loaded);
      } catch (error) {
        this.logger?.warn({ error: (error as Error).message }, 'ANALYZE after a load failed; autovacuum (where it is on) analyzes later');
      }
    });
    return this.analyzing;
  }

  /** A new seed for a BALLOT campaign, committed and sealed; null for first come. */
  private ballotSeed(campaign: CampaignModel): { commitment: string; sealed: string } | null {
    if (campaign.mode !== 'BALLOT') return null;
    if (!this.secretKey) {
      throw apiError(ErrorCode.NOT_CONFIGURED, 'A BALLOT campaign needs WEBHOOK_SECRET_KEY, which seals its seed until the draw.');
    }
    const seed = newSeed();
    return { commitment: seedCommitment(seed), sealed: sealSeed(seed, this.secretKey) };
  }

  async create(ctx: RequestContext, input: CreateCampaignInput): Promise<CampaignModel> {
    const name = validate.text('name', input.name, validate.LIMITS.nameLength);
    const perHolderLimit = validate.optionalIntInRange('perHolderLimit', input.perHolderLimit, 1, validate.LIMITS.perHolderLimit);
    const lowStockThreshold = validate.optionalIntInRange('lowStockThreshold', input.lowStockThreshold, 1, validate.LIMITS.lowStockThreshold);
    const maxHoldSeconds = validate.optionalIntInRange('maxHoldSeconds', input.maxHoldSeconds, 1, validate.LIMITS.maxHoldSeconds);
    const releasePolicy = input.releasePolicy ?? 'POOL';
    // An offer is a hold: never longer than maxHoldSeconds.
    const waitlistOfferSeconds =
      validate.optionalIntInRange('waitlistOfferSeconds', input.waitlistOfferSeconds, 1, maxHoldSeconds ?? validate.LIMITS.maxHoldSeconds) ??
      Math.min(DEFAULT_WAITLIST_OFFER_SECONDS, maxHoldSeconds ?? DEFAULT_WAITLIST_OFFER_SECONDS);
    validate.campaignWindow(input.opensAt, input.closesAt);
    const ballot = ballotSettings(input, releasePolicy, maxHoldSeconds);
    // Written, then read: Prisma casts an enum among the returned columns to text in RETURNING,
    // which Citus refuses on a reference table (docs/SCALING.md, "Citus").
    // A test campaign's id says so (testMode.ts); a live one's is the database's (version 7).
    const test = input.test === true;
    const { id } = await this.db.prisma.campaign.create({
      data: {
        ...(test ? { id: newTestCampaignId(), test } : {}),
        name,
        perHolderLimit,
        lowStockThreshold,
        maxHoldSeconds,
        releasePolicy,
        waitlistOfferSeconds,
        ...ballot,
        opensAt: input.opensAt ?? null,
        closesAt: input.closesAt ?? null,
      },
      select: { id: true },
    });
    const campaign = await this.db.prisma.campaign.findUniqueOrThrow({ where: { id }, select: CAMPAIGN_FIELDS });
    ctx.loaders.campaign.prime(campaign.id, campaign);
    return campaign;
  }

  /**
   * advanceTestClock (db/testClock.ts): a test campaign's clock `seconds` forward, then what the
   * sweeper would do at once — holds expired, allotments lapsed, returned tickets offered, ballots
   * passed on — so the effects are there when this returns. Those sweeps are the sweeper's own, for
   * every campaign: what is due elsewhere is done a moment before the sweeper would, nothing that is
   * not due; stock announcements are left to the sweeper. An operator, or a partner's test key
   * where every allocation, hold and entry in the campaign is its own (FORBIDDEN otherwise: see
   * rehearsingPartner); to a live key a test campaign does not exist. LIVE_CAMPAIGN on a live one.
   */
  async advanceTestClock(ctx: RequestContext, id: string, seconds: number): Promise<CampaignModel> {
    const current = await this.requireTest(ctx, id, "advanceTestClock moves test campaigns' clocks only");
    const by = validate.intInRange('seconds', seconds, 1, MAX_TEST_CLOCK_SECONDS);
    const verdict = await retryDeadlocks(() => advanceTestClock(this.db.pool, current.id, rehearsingPartner(ctx), by));
    if (verdict === 'NOT_FOUND') throw notFound('Campaign', id);
    if (verdict === 'SHARED') throw sharedTestCampaign(id, 'move its clock');
    for (let swept = HOLD_SWEEP_BATCH; swept >= HOLD_SWEEP_BATCH; ) swept = await expireHolds(this.db.prisma, HOLD_SWEEP_BATCH);
    await lapseAllotments(this.db.prisma);
    await offerAllReturned(this.db.prisma);
    await passOnBallots(this.db.prisma);
    ctx.loaders.allocation.clearAll();
    return this.fresh(ctx, await this.require(id));
  }

  /**
   * resetTestCampaign (db/resetTestCampaign.ts): a test campaign back to just after its opening —
   * no allocation, entry or counted activity left, every ticket available (allotments set aside
   * anew), its clock the real one, a ballot's fresh seed. Who may: as advanceTestClock.
   */
  async resetTestCampaign(ctx: RequestContext, id: string): Promise<CampaignModel> {
    const current = await this.requireTest(ctx, id, 'resetTestCampaign returns test campaigns to their opening');
    const seed = current.mode === 'BALLOT' && current.status !== 'DRAFT' ? this.ballotSeed(current) : null;
    // A deadlock with the sweeper (on Citus, a distributed one) rolled the whole reset back: run it again.
    const verdict = await retryDeadlocks(() => resetTestCampaign(this.db.pool, current.id, rehearsingPartner(ctx), seed));
    if (verdict === 'NOT_FOUND') throw notFound('Campaign', id);
    if (verdict === 'SHARED') throw sharedTestCampaign(id, 'reset it');
    ctx.loaders.allocation.clearAll();
    return this.fresh(ctx, await this.require(id));
  }

  /** A test campaign the caller may see (an operator, or a partner's test key); NOT_FOUND as for a missing one, LIVE_CAMPAIGN for a live one. */
  private async requireTest(ctx: RequestContext, id: string, what: string): Promise<CampaignModel> {
    if (!validate.isUuid(id) || !inScope(ctx.viewer, id)) throw notFound('Campaign', id);
    const current = await this.require(id);
    if (!isTestCampaignId(current.id)) throw apiError(ErrorCode.LIVE_CAMPAIGN, `Campaign ${id} is live: ${what}.`);
    return current;
  }

  /**
   * createTestCopy: a test campaign with the original's settings — limits, window (while it is
   * still ahead), release policy, waitlist and ballot settings (a ballot gets its own seed when the
   * copy opens) — its partners' quotas and live allotments, and `tickets` synthetic codes (TEST-…;
   * as many as the original has when left out; at most generateTickets' cap, LIMITS.generateCount,
   * made by one generateTickets load). OPEN unless the original is a DRAFT. Made step by
   * step through the same operations an operator would call: a failure part-way leaves a partial
   * test copy, which purgeTestData removes like any other.
   */
  async createTestCopy(ctx: RequestContext, campaignId: string, tickets: number | null | undefined): Promise<CampaignModel> {
    const original = await this.require(campaignId);
    const count = tickets === null || tickets === undefined ? (await ctx.loaders.stats.load(original.id)).total : tickets;
    // One generateTickets' worth at most, in one load: the copy's codes are all there or none are.
    if (!Number.isInteger(count) || count < 0 || count > validate.LIMITS.generateCount) {
      const cap = validate.LIMITS.generateCount.toLocaleString('en-US');
      throw new InvalidInput(
        'tickets',
        tickets === null || tickets === undefined
          ? `The original has ${count.toLocaleString('en-US')} tickets; a test copy has at most ${cap} (generateTickets' cap): pass tickets.`
          : `tickets must be an integer from 0 to ${cap} (generateTickets' cap).`,
      );
    }
    const [quotas, allotments] = await Promise.all([
      this.db.prisma.partnerQuota.findMany({ where: { campaignId: original.id }, select: { partnerId: true, quota: true } }),
      this.db.prisma.allotment.findMany({ where: { campaignId: original.id, lapsedAt: null }, select: { partnerId: true, size: true, lapsesAt: true } }),
    ]);
    const now = Date.now();
    const kept = allotments.filter((a) => a.size > 0 && (a.lapsesAt === null || a.lapsesAt.getTime() > now));
    const allotted = kept.reduce((sum, a) => sum + a.size, 0);
    if (allotted > count) throw new InvalidInput('tickets', `The original's allotments set aside ${allotted} tickets: a copy needs at least as many.`);
    const ahead = (at: Date | null) => (at !== null && at.getTime() > now ? at : null);
    const closesAt = ahead(original.closesAt);
    const copy = await this.create(ctx, {
      name: `${[...original.name].slice(0, validate.LIMITS.nameLength - TEST_COPY_SUFFIX.length).join('')}${TEST_COPY_SUFFIX}`,
      perHolderLimit: original.perHolderLimit,
      opensAt: closesAt ? original.opensAt : null,
      closesAt,
      lowStockThreshold: original.lowStockThreshold,
      maxHoldSeconds: original.maxHoldSeconds,
      releasePolicy: original.releasePolicy,
      waitlistOfferSeconds: original.waitlistOfferSeconds,
      mode: original.mode,
      entriesCloseAt: original.mode === 'BALLOT' ? ahead(original.entriesCloseAt ?? null) : null,
      ballotConfirmSeconds: original.mode === 'BALLOT' ? original.ballotConfirmSeconds : null,
      test: true,
    });
    if (count > 0) await generateTicketsByCopy(this.db.pool, copy.id, count, TEST_COPY_PREFIX);
    await this.analyzed(count);
    for (const q of quotas) await setPartnerQuota(this.db.prisma, copy.id, q.partnerId, q.quota);
    for (const a of kept) {
      const result = await setPartnerAllotment(this.db.prisma, { campaignId: copy.id, partnerId: a.partnerId, size: a.size, lapsesAt: a.lapsesAt });
      if (result.verdict !== 'OK') throw new Error(`createTestCopy: allotment of ${a.size} for partner ${a.partnerId} refused (${result.verdict})`);
    }
    if (original.status !== 'DRAFT') await openCampaign(this.db.prisma, copy.id, this.ballotSeed(copy));
    return this.fresh(ctx, await this.require(copy.id));
  }

  /**
   * purgeTestData (db/purgeTestData.ts): test campaigns made before `before`, and what is theirs,
   * deleted — all of them or, when it fails, none. A deadlock rolled the whole purge back: run it again.
   */
  async purgeTestData(ctx: RequestContext, before: Date): Promise<Purged> {
    const at = validate.date('before', before);
    const purged = await retryDeadlocks(() => purgeTestData(this.db.pool, at));
    ctx.loaders.campaign.clearAll();
    ctx.loaders.allocation.clearAll();
    return purged;
  }

  /** A test campaign's clock now (the real time plus what advanceTestClock added); null when there is no such campaign. */
  async testClockOf(id: string): Promise<Date | null> {
    const row = await this.db.prisma.campaign.findUnique({ where: { id }, select: { testClockSeconds: true } });
    return row && new Date(Date.now() + Number(row.testClockSeconds) * 1000);
  }

  /** DRAFT -> OPEN. Opening an OPEN campaign changes nothing; a CLOSED one stays closed. */
  async open(ctx: RequestContext, id: string): Promise<CampaignModel> {
    const current = await this.require(id);
    if (current.status === 'CLOSED') {
      throw apiError(ErrorCode.INVALID_TRANSITION, `Campaign ${id} is CLOSED; a closed campaign cannot be opened again.`);
    }
    if (current.status === 'DRAFT') await openCampaign(this.db.prisma, current.id, this.ballotSeed(current));
    return this.fresh(ctx, await this.require(id));
  }

  /**
   * DRAFT or OPEN -> CLOSED, linearizable with claims (see db/closeCampaign.ts): when this returns,
   * no further claim commits. Closing a CLOSED campaign changes nothing.
   */
  async close(ctx: RequestContext, id: string): Promise<CampaignModel> {
    if (!validate.isUuid(id)) throw notFound('Campaign', id);
    if (!(await closeCampaign(this.db.prisma, id))) throw notFound('Campaign', id);
    return this.fresh(ctx, await this.require(id));
  }

  /**
   * Name, window, per-holder limit, hold cap, low-stock threshold and waitlist offer time of a DRAFT
   * or OPEN campaign, and its release policy while DRAFT; fields left out are unchanged. Under the
   * campaign gate (exclusive), so a claim sees the old rules or the new, never a mix; a release
   * policy changes only where the row is still DRAFT, so an open racing it wins or waits.
   */
  async update(ctx: RequestContext, id: string, input: UpdateCampaignInput): Promise<CampaignModel> {
    const current = await this.require(id);
    if (current.status === 'CLOSED') {
      throw apiError(ErrorCode.INVALID_TRANSITION, `Campaign ${id} is CLOSED; a closed campaign cannot be changed.`);
    }
    const data = campaignChanges(current, input);
    const policyChanges = data.releasePolicy !== undefined && data.releasePolicy !== current.releasePolicy;
    if (policyChanges && current.status !== 'DRAFT') {
      throw apiError(ErrorCode.INVALID_TRANSITION, `Campaign ${id} is ${current.status}: its release policy is fixed once it opens.`);
    }
    const prisma = this.db.prisma;
    const [, , updated] = await prisma.$transaction([
      ...lockCampaignGate(prisma, current.id),
      prisma.campaign.updateMany({ where: { id: current.id, status: policyChanges ? 'DRAFT' : { not: 'CLOSED' } }, data }),
    ]);
    if (updated.count === 0) {
      throw apiError(ErrorCode.INVALID_TRANSITION, `Campaign ${id} was ${policyChanges ? 'opened or closed' : 'closed'} meanwhile; it cannot be changed.`);
    }
    return this.fresh(ctx, await this.require(id));
  }

  /** Caps (or with null uncaps) a partner's live allocations in a campaign. */
  async setPartnerQuota(ctx: RequestContext, campaignId: string, partnerId: string, quota: number | null | undefined): Promise<CampaignModel> {
    const campaign = await this.require(campaignId);
    if (!validate.isUuid(partnerId) || (await ctx.loaders.partner.load(partnerId.toLowerCase())) === null) throw notFound('Partner', partnerId);
    const cap = validate.optionalIntInRange('quota', quota, 0, validate.LIMITS.quota);
    await setPartnerQuota(this.db.prisma, campaign.id, partnerId.toLowerCase(), cap);
    ctx.loaders.partnerStats.clear(campaign.id);
    return this.fresh(ctx, campaign);
  }

  /**
   * Sets aside `size` tickets for the partner until `lapsesAt` (0 removes the allotment): see
   * db/allotments.ts. A CLOSED campaign cannot be changed; the size may not go below what is drawn
   * from the allotment, nor take more tickets than are available.
   */
  async setPartnerAllotment(
    ctx: RequestContext,
    campaignId: string,
    partnerId: string,
    size: number,
    lapsesAt: Date | null | undefined,
  ): Promise<CampaignModel> {
    const campaign = await this.require(campaignId);
    if (!validate.isUuid(partnerId) || (await ctx.loaders.partner.load(partnerId.toLowerCase())) === null) throw notFound('Partner', partnerId);
    const count = validate.intInRange('size', size, 0, validate.LIMITS.quota);
    validate.date('lapsesAt', lapsesAt);
    if (lapsesAt && lapsesAt.getTime() <= Date.now()) throw new InvalidInput('lapsesAt', 'lapsesAt must be in the future.');
    if (campaign.status === 'CLOSED') throw apiError(ErrorCode.INVALID_TRANSITION, `Campaign ${campaign.id} is closed; its allotments cannot be changed.`);
    const result = await setPartnerAllotment(this.db.prisma, { campaignId: campaign.id, partnerId: partnerId.toLowerCase(), size: count, lapsesAt: lapsesAt ?? null });
    if (result.verdict === 'BELOW_USED') throw new InvalidInput('size', `size may not be below the ${result.inUse} tickets drawn from the allotment (or 0, which removes it).`);
    if (result.verdict === 'TOO_FEW') throw new InvalidInput('size', `Only ${result.available} more tickets are available to set aside.`);
    ctx.loaders.stats.clear(campaign.id);
    this.live?.changed(campaign.id);
    return this.fresh(ctx, campaign);
  }

  /** A campaign's allotments: every partner's for an operator, the caller's own for a partner. */
  async allotments(ctx: RequestContext, campaignId: string): Promise<AllotmentRow[]> {
    return findAllotments(this.db.prisma, campaignId, ctx.viewer.kind === 'admin' ? null : ctx.viewer.partnerId);
  }

  /** campaignStats subscription: admin only; NOT_FOUND for an unknown campaign. */
  async watchStats(ctx: RequestContext & { db: Database; live: LiveUpdates }, id: string): Promise<AsyncIterableIterator<CampaignStatsModel>> {
    const campaign = await this.require(id);
    return campaignStatsStream(ctx.db, ctx.live, campaign.id);
  }

  async timeline(ctx: RequestContext, campaignId: string, bucket: 'MINUTE' | 'HOUR' | 'DAY'): Promise<TimelinePointModel[]> {
    // A report: a replica may serve it (db/replicas.ts).
    return campaignTimeline(this.db.read().prisma, campaignId, bucket.toLowerCase() as TimelineUnit);
  }

  async partnerStats(ctx: RequestContext, campaignId: string): Promise<PartnerStatsModel[]> {
    return ctx.loaders.partnerStats.load(campaignId);
  }

  async loadTickets(ctx: RequestContext, campaignId: string, codes: readonly string[]): Promise<LoadResult> {
    const valid = validate.codes(codes);
    const campaign = await this.requireLoadable(campaignId);
    const loaded = await loadTicketsByCopy(this.db.pool, campaign.id, valid);
    await this.analyzed(loaded);
    return { loaded, duplicates: valid.length - loaded, campaign: this.fresh(ctx, campaign) };
  }

  async generateTickets(ctx: RequestContext, campaignId: string, count: number, prefix?: string | null): Promise<LoadResult> {
    const n = validate.intInRange('count', count, 1, validate.LIMITS.generateCount);
    const p = validate.prefix(prefix);
    const campaign = await this.requireLoadable(campaignId);
    const loaded = await generateTicketsByCopy(this.db.pool, campaign.id, n, p);
    await this.analyzed(loaded);
    return { loaded, duplicates: n - loaded, campaign: this.fresh(ctx, campaign) };
  }

  /** Every figure of the campaign recomputed from its rows (db/verifyCampaign.ts). */
  async verify(ctx: RequestContext, id: string): Promise<CampaignVerificationModel> {
    const campaign = await this.require(id);
    const drifts = await verifyCampaign(this.db.pool, campaign.id);
    return { campaign, checkedAt: new Date(), ok: drifts.length === 0, drifts, repaired: [] };
  }

  /** Repairs the campaign's counters under its gate; rows (tickets, allocations) are never touched. */
  async repair(ctx: RequestContext, id: string): Promise<CampaignVerificationModel> {
    const campaign = await this.require(id);
    const { repaired, remaining } = await repairCampaign(this.db.pool, campaign.id);
    if (repaired.length > 0) {
      this.live?.changed(campaign.id);
      ctx.loaders.stats.clear(campaign.id);
    }
    return { campaign, checkedAt: new Date(), ok: remaining.length === 0, drifts: remaining, repaired };
  }

  /** null when it does not exist, or lies outside a scoped partner key's campaigns. */
  async get(ctx: RequestContext, id: string): Promise<CampaignModel | null> {
    if (!validate.isUuid(id) || !inScope(ctx.viewer, id)) return null;
    return ctx.loaders.campaign.load(id.toLowerCase());
  }

  /** Newest first, by keyset (see db/findCampaigns.ts). */
  async list(
    ctx: RequestContext,
    args: { first?: number | null; after?: string | null; status?: CampaignStatus | null; test?: boolean | null },
  ): Promise<ConnectionModel<CampaignModel>> {
    const limit = validate.pageSize(args.first);
    const after = args.after ? campaignCursor.decode(args.after) : null;
    const status = args.status ?? null;
    const only = ctx.viewer.kind === 'partner' && ctx.viewer.scope ? [...ctx.viewer.scope] : null;
    // A partner key sees its own mode's campaigns; an operator both, or the mode it asks for.
    const test = ctx.viewer.kind === 'partner' ? ctx.viewer.test : (args.test ?? null);
    // An operator's list may come from a replica; a partner's (which may decide a claim) from the primary.
    const db = ctx.viewer.kind === 'admin' ? this.db.read().prisma : this.db.prisma;
    const rows = await findCampaignPage(db, { status, after, limit, only, test });
    const page = rows.slice(0, limit);
    page.forEach(({ campaign }) => ctx.loaders.campaign.prime(campaign.id, campaign));
    const edges = page.map(({ campaign, cursor }) => ({ node: campaign, cursor: campaignCursor.encode(cursor) }));
    return {
      edges,
      pageInfo: { hasNextPage: rows.length > limit, endCursor: edges.at(-1)?.cursor ?? null },
      totalCount: () => db.campaign.count({ where: { ...(status ? { status } : {}), ...(only ? { id: { in: only } } : {}), ...(test === null ? {} : { test }) } }),
    };
  }

  async findByIds(ids: readonly string[]): Promise<CampaignModel[]> {
    return this.db.prisma.campaign.findMany({ where: { id: { in: [...ids] } }, select: CAMPAIGN_FIELDS });
  }

  private async require(id: string): Promise<CampaignModel> {
    if (!validate.isUuid(id)) throw notFound('Campaign', id);
    const campaign = await this.db.prisma.campaign.findUnique({ where: { id: id.toLowerCase() }, select: CAMPAIGN_FIELDS });
    if (!campaign) throw notFound('Campaign', id);
    return campaign;
  }

  private async requireLoadable(id: string): Promise<CampaignModel> {
    const campaign = await this.require(id);
    if (campaign.status === 'CLOSED') {
      throw apiError(ErrorCode.CAMPAIGN_CLOSED, `Campaign ${id} is CLOSED; tickets cannot be added to it.`);
    }
    return campaign;
  }

  /** The request's loaders must not answer later fields with a state this mutation changed. */
  private fresh(ctx: RequestContext, campaign: CampaignModel): CampaignModel {
    this.live?.changed(campaign.id);
    ctx.loaders.campaign.clear(campaign.id).prime(campaign.id, campaign);
    ctx.loaders.stats.clear(campaign.id);
    return campaign;
  }
}

/**
 * mode, entriesCloseAt and ballotConfirmSeconds of a new campaign. The two ballot settings belong to
 * BALLOT campaigns only; a winner's hold is a hold (never longer than maxHoldSeconds); a ballot's
 * tickets pass on to its ranking, so WAITLIST_FIRST does not combine with it.
 */
type CampaignChanges = Partial<
  Pick<CampaignModel, 'name' | 'perHolderLimit' | 'opensAt' | 'closesAt' | 'releasePolicy' | 'maxHoldSeconds' | 'lowStockThreshold' | 'waitlistOfferSeconds'>
>;

/** updateCampaign's input, validated against the campaign as it is: what changes. */
function campaignChanges(current: CampaignModel, input: UpdateCampaignInput): CampaignChanges {
  const data: CampaignChanges = {};
  const notNull = (field: 'name' | 'releasePolicy' | 'waitlistOfferSeconds') => {
    if (input[field] === null) throw new InvalidInput(field, `${field} cannot be null.`);
  };
  if (input.name !== undefined) {
    notNull('name');
    data.name = validate.text('name', input.name!, validate.LIMITS.nameLength);
  }
  if (input.perHolderLimit !== undefined) data.perHolderLimit = validate.optionalIntInRange('perHolderLimit', input.perHolderLimit, 1, validate.LIMITS.perHolderLimit);
  if (input.opensAt !== undefined) data.opensAt = input.opensAt;
  if (input.closesAt !== undefined) data.closesAt = input.closesAt;
  validate.campaignWindow(data.opensAt === undefined ? current.opensAt : data.opensAt, data.closesAt === undefined ? current.closesAt : data.closesAt);
  if (input.releasePolicy !== undefined) {
    notNull('releasePolicy');
    if (current.mode === 'BALLOT' && input.releasePolicy === 'WAITLIST_FIRST') {
      throw new InvalidInput('releasePolicy', 'A BALLOT campaign passes returned tickets on to its ranking: WAITLIST_FIRST does not apply.');
    }
    data.releasePolicy = input.releasePolicy!;
  }
  if (input.lowStockThreshold !== undefined) {
    data.lowStockThreshold = validate.optionalIntInRange('lowStockThreshold', input.lowStockThreshold, 1, validate.LIMITS.lowStockThreshold);
  }
  if (input.maxHoldSeconds !== undefined) data.maxHoldSeconds = validate.optionalIntInRange('maxHoldSeconds', input.maxHoldSeconds, 1, validate.LIMITS.maxHoldSeconds);
  const maxHold = (data.maxHoldSeconds === undefined ? current.maxHoldSeconds : data.maxHoldSeconds) ?? null;
  const confirmSeconds = current.ballotConfirmSeconds ?? null;
  if (input.waitlistOfferSeconds !== undefined) {
    notNull('waitlistOfferSeconds');
    data.waitlistOfferSeconds = validate.intInRange('waitlistOfferSeconds', input.waitlistOfferSeconds!, 1, maxHold ?? validate.LIMITS.maxHoldSeconds);
  }
  // An offer and a winner's hold are holds: never longer than the cap, the new one included.
  if (maxHold !== null) {
    const offer = data.waitlistOfferSeconds ?? current.waitlistOfferSeconds ?? 0;
    if (offer > maxHold) throw new InvalidInput('maxHoldSeconds', `maxHoldSeconds ${maxHold} is below the campaign's waitlistOfferSeconds (${offer}): lower that too.`);
    if (confirmSeconds !== null && confirmSeconds > maxHold) {
      throw new InvalidInput('maxHoldSeconds', `maxHoldSeconds ${maxHold} is below the campaign's ballotConfirmSeconds (${confirmSeconds}).`);
    }
  }
  return data;
}

function ballotSettings(
  input: CreateCampaignInput,
  releasePolicy: ReleasePolicy,
  maxHoldSeconds: number | null,
): { mode: CampaignMode; entriesCloseAt: Date | null; ballotConfirmSeconds: number | null } {
  const mode = input.mode ?? 'FIRST_COME';
  if (mode !== 'BALLOT') {
    for (const field of ['entriesCloseAt', 'ballotConfirmSeconds'] as const) {
      if (input[field] !== undefined && input[field] !== null) throw new InvalidInput(field, `${field} applies to BALLOT campaigns only.`);
    }
    return { mode, entriesCloseAt: null, ballotConfirmSeconds: null };
  }
  if (releasePolicy === 'WAITLIST_FIRST') {
    throw new InvalidInput('releasePolicy', 'A BALLOT campaign passes returned tickets on to its ranking: WAITLIST_FIRST does not apply.');
  }
  const entriesCloseAt = validate.date('entriesCloseAt', input.entriesCloseAt ?? null);
  if (entriesCloseAt !== null) {
    if (entriesCloseAt.getTime() <= Date.now()) throw new InvalidInput('entriesCloseAt', 'entriesCloseAt must be in the future.');
    if (input.closesAt && entriesCloseAt > input.closesAt) throw new InvalidInput('entriesCloseAt', 'entriesCloseAt must not be after closesAt.');
  }
  const ballotConfirmSeconds =
    validate.optionalIntInRange('ballotConfirmSeconds', input.ballotConfirmSeconds, 1, maxHoldSeconds ?? validate.LIMITS.maxHoldSeconds) ??
    Math.min(DEFAULT_BALLOT_CONFIRM_SECONDS, maxHoldSeconds ?? DEFAULT_BALLOT_CONFIRM_SECONDS);
  return { mode, entriesCloseAt, ballotConfirmSeconds };
}

/**
 * Whose rows a rehearsal control must find alone in the campaign: the calling partner's (its test
 * key may reset a test campaign or move its clock only where every allocation, hold, waitlist and
 * ballot entry is its own — db/lockTestCampaign.ts checks under the campaign's gate); null for an
 * operator, who may act whoever's rows are there.
 */
function rehearsingPartner(ctx: RequestContext): string | null {
  return ctx.viewer.kind === 'partner' ? ctx.viewer.partnerId : null;
}

/** FORBIDDEN: a partner's test key on a test campaign where others have rows. Audited as a refusal (access.ts). */
function sharedTestCampaign(id: string, what: string): GraphQLError {
  return apiError(
    ErrorCode.FORBIDDEN,
    `Test campaign ${id} has allocations, holds or entries of other partners: a partner's test key may ${what} only when everything in it is its own. An operator's key can ${what}.`,
  );
}
