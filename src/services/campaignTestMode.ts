// Test mode, the rehearsal controls on test campaigns (testMode.ts): a test copy of a campaign, its
// clock moved forward, a reset to just after its opening, and the purge of old test campaigns.
// Who may: an operator, or a partner's test key where every allocation, hold and entry in the
// campaign is its own (FORBIDDEN otherwise); to a live key a test campaign does not exist.
import type { GraphQLError } from 'graphql';
import { inScope } from '../auth';
import type { Database } from '../db/client';
import { expireHolds, lapseAllotments } from '../db/expireHolds';
import { passOnBallots } from '../db/ballots';
import { setPartnerAllotment } from '../db/allotments';
import { setPartnerQuota } from '../db/partnerQuota';
import { retryDeadlocks } from '../db/pgErrors';
import { purgeTestData, type Purged } from '../db/purgeTestData';
import { resetTestCampaign } from '../db/resetTestCampaign';
import { advanceTestClock } from '../db/testClock';
import { offerAllReturned } from '../db/waitlist';
import { apiError, ErrorCode, InvalidInput, notFound } from '../errors';
import type { LiveUpdates } from '../live';
import type { CampaignModel } from '../models';
import { isTestCampaignId } from '../testMode';
import * as validate from '../validation';
import { freshCampaign, requireCampaign } from './campaignRecord';
import type { CampaignService } from './campaigns';
import type { RequestContext } from './requestContext';

/** A test copy's name ends so (the name is cut to fit 200 characters with it). */
const TEST_COPY_SUFFIX = ' (test copy)';
/** A test copy's synthetic codes start so. */
const TEST_COPY_PREFIX = 'TEST-';
/** advanceTestClock moves a clock at most a year at a time. */
const MAX_TEST_CLOCK_SECONDS = 31_536_000;
/** Expired holds returned per statement when advanceTestClock sweeps (as the sweeper does). */
const HOLD_SWEEP_BATCH = 1000;

export class CampaignTestModeService {
  constructor(
    private readonly db: Database,
    /** Makes, loads and opens a test copy as an operator would; seals a reset ballot's new seed. */
    private readonly campaigns: CampaignService,
    /** Tells campaignStats subscribers that a campaign's figures moved. */
    private readonly live?: LiveUpdates,
  ) {}

  /**
   * advanceTestClock (db/testClock.ts): a test campaign's clock `seconds` forward, then what the
   * sweeper would do at once — holds expired, allotments lapsed, returned tickets offered, ballots
   * passed on — so the effects are there when this returns. Those sweeps are the sweeper's own, for
   * every campaign: what is due elsewhere is done a moment before the sweeper would, nothing that is
   * not due; stock announcements are left to the sweeper. LIVE_CAMPAIGN on a live campaign.
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
    return this.fresh(ctx, await requireCampaign(this.db, id));
  }

  /**
   * resetTestCampaign (db/resetTestCampaign.ts): a test campaign back to just after its opening —
   * no allocation, entry or counted activity left, every ticket available (allotments set aside
   * anew), its clock the real one, a ballot's fresh seed.
   */
  async resetTestCampaign(ctx: RequestContext, id: string): Promise<CampaignModel> {
    const current = await this.requireTest(ctx, id, 'resetTestCampaign returns test campaigns to their opening');
    const seed = current.mode === 'BALLOT' && current.status !== 'DRAFT' ? this.campaigns.ballotSeed(current) : null;
    // A deadlock with the sweeper (on Citus, a distributed one) rolled the whole reset back: run it again.
    const verdict = await retryDeadlocks(() => resetTestCampaign(this.db.pool, current.id, rehearsingPartner(ctx), seed));
    if (verdict === 'NOT_FOUND') throw notFound('Campaign', id);
    if (verdict === 'SHARED') throw sharedTestCampaign(id, 'reset it');
    ctx.loaders.allocation.clearAll();
    return this.fresh(ctx, await requireCampaign(this.db, id));
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
    const original = await requireCampaign(this.db, campaignId);
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
    const copy = await this.campaigns.create(ctx, {
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
    if (count > 0) await this.campaigns.generateTickets(ctx, copy.id, count, TEST_COPY_PREFIX);
    for (const q of quotas) await setPartnerQuota(this.db.prisma, copy.id, q.partnerId, q.quota);
    for (const a of kept) {
      const result = await setPartnerAllotment(this.db.prisma, { campaignId: copy.id, partnerId: a.partnerId, size: a.size, lapsesAt: a.lapsesAt });
      if (result.verdict !== 'OK') throw new Error(`createTestCopy: allotment of ${a.size} for partner ${a.partnerId} refused (${result.verdict})`);
    }
    if (original.status !== 'DRAFT') await this.campaigns.open(ctx, copy.id);
    return this.fresh(ctx, await requireCampaign(this.db, copy.id));
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

  /** A test campaign the caller may see (an operator, or a partner's test key); NOT_FOUND as for a missing one, LIVE_CAMPAIGN for a live one. */
  private async requireTest(ctx: RequestContext, id: string, what: string): Promise<CampaignModel> {
    if (!validate.isUuid(id) || !inScope(ctx.viewer, id)) throw notFound('Campaign', id);
    const current = await requireCampaign(this.db, id);
    if (!isTestCampaignId(current.id)) throw apiError(ErrorCode.LIVE_CAMPAIGN, `Campaign ${id} is live: ${what}.`);
    return current;
  }

  private fresh(ctx: RequestContext, campaign: CampaignModel): CampaignModel {
    return freshCampaign(ctx, campaign, this.live);
  }
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
