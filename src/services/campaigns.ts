// Campaigns, the operator's side — create, change, load tickets, open, close — and the reads both
// sides share (one campaign, the list). Test mode, quotas and allotments, reports and repair are
// services of their own beside this one (campaignTestMode.ts, campaignQuotas.ts, campaignReports.ts,
// campaignRepair.ts).
import { inScope } from '../auth';
import { newSeed, sealSeed, seedCommitment } from '../ballot/seed';
import { lockCampaignGate } from '../db/campaignGate';
import type { Database } from '../db/client';
import { closeCampaign } from '../db/closeCampaign';
import { findCampaignPage } from '../db/findCampaigns';
import { analyzeIfStale, generateTicketsByCopy, loadTicketsByCopy } from '../db/loadTickets';
import { openCampaign } from '../db/openCampaign';
import { apiError, ErrorCode, notFound } from '../errors';
import type { LiveUpdates } from '../live';
import type { Logger } from '../logger';
import type { CampaignModel, CampaignStatus, ConnectionModel } from '../models';
import { newTestCampaignId } from '../testMode';
import * as validate from '../validation';
import { CAMPAIGN_FIELDS, freshCampaign, requireCampaign } from './campaignRecord';
import { campaignChanges, newCampaignSettings, type CreateCampaignInput, type UpdateCampaignInput } from './campaignSettings';
import { campaignCursor } from './cursors';
import type { RequestContext } from './requestContext';

export type { CreateCampaignInput, UpdateCampaignInput } from './campaignSettings';

export interface LoadResult {
  loaded: number;
  duplicates: number;
  campaign: CampaignModel;
}

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

  /** A new seed for a BALLOT campaign, committed and sealed; null for first come. Opening and a test campaign's reset take one. */
  ballotSeed(campaign: CampaignModel): { commitment: string; sealed: string } | null {
    if (campaign.mode !== 'BALLOT') return null;
    if (!this.secretKey) {
      throw apiError(ErrorCode.NOT_CONFIGURED, 'A BALLOT campaign needs WEBHOOK_SECRET_KEY, which seals its seed until the draw.');
    }
    const seed = newSeed();
    return { commitment: seedCommitment(seed), sealed: sealSeed(seed, this.secretKey) };
  }

  async create(ctx: RequestContext, input: CreateCampaignInput): Promise<CampaignModel> {
    const settings = newCampaignSettings(input);
    // Written, then read: Prisma casts an enum among the returned columns to text in RETURNING,
    // which Citus refuses on a reference table.
    // A test campaign's id says so (testMode.ts); a live one's is the database's (version 7).
    const test = input.test === true;
    const { id } = await this.db.prisma.campaign.create({
      data: { ...(test ? { id: newTestCampaignId(), test } : {}), ...settings },
      select: { id: true },
    });
    const campaign = await this.db.prisma.campaign.findUniqueOrThrow({ where: { id }, select: CAMPAIGN_FIELDS });
    ctx.loaders.campaign.prime(campaign.id, campaign);
    return campaign;
  }

  /** DRAFT -> OPEN. Opening an OPEN campaign changes nothing; a CLOSED one stays closed. */
  async open(ctx: RequestContext, id: string): Promise<CampaignModel> {
    const current = await requireCampaign(this.db, id);
    if (current.status === 'CLOSED') {
      throw apiError(ErrorCode.INVALID_TRANSITION, `Campaign ${id} is CLOSED; a closed campaign cannot be opened again.`);
    }
    if (current.status === 'DRAFT') await openCampaign(this.db.prisma, current.id, this.ballotSeed(current));
    return this.fresh(ctx, await requireCampaign(this.db, id));
  }

  /**
   * DRAFT or OPEN -> CLOSED, linearizable with claims (db/closeCampaign.ts): when this returns,
   * no further claim commits. Closing a CLOSED campaign changes nothing.
   */
  async close(ctx: RequestContext, id: string): Promise<CampaignModel> {
    if (!validate.isUuid(id)) throw notFound('Campaign', id);
    if (!(await closeCampaign(this.db.prisma, id))) throw notFound('Campaign', id);
    return this.fresh(ctx, await requireCampaign(this.db, id));
  }

  /**
   * Name, window, per-holder limit, hold cap, low-stock threshold and waitlist offer time of a DRAFT
   * or OPEN campaign, and its release policy while DRAFT; fields left out are unchanged. Under the
   * campaign gate (exclusive), so a claim sees the old rules or the new, never a mix; a release
   * policy changes only where the row is still DRAFT, so an open racing it wins or waits.
   */
  async update(ctx: RequestContext, id: string, input: UpdateCampaignInput): Promise<CampaignModel> {
    const current = await requireCampaign(this.db, id);
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
    return this.fresh(ctx, await requireCampaign(this.db, id));
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

  /** null when it does not exist, or lies outside a scoped partner key's campaigns. */
  async get(ctx: RequestContext, id: string): Promise<CampaignModel | null> {
    if (!validate.isUuid(id) || !inScope(ctx.viewer, id)) return null;
    return ctx.loaders.campaign.load(id.toLowerCase());
  }

  /** Newest first, by keyset (db/findCampaigns.ts). */
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

  private async requireLoadable(id: string): Promise<CampaignModel> {
    const campaign = await requireCampaign(this.db, id);
    if (campaign.status === 'CLOSED') {
      throw apiError(ErrorCode.CAMPAIGN_CLOSED, `Campaign ${id} is CLOSED; tickets cannot be added to it.`);
    }
    return campaign;
  }

  private fresh(ctx: RequestContext, campaign: CampaignModel): CampaignModel {
    return freshCampaign(ctx, campaign, this.live);
  }
}
