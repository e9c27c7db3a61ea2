// Campaigns: the operator's side — create, load, open, close — and the reads both sides share.
import { requireAdmin } from '../auth';
import type { Database } from '../db/client';
import { closeCampaign } from '../db/closeCampaign';
import { findCampaignPage, type CampaignCursor } from '../db/findCampaigns';
import { generateTickets, loadTickets } from '../db/loadTickets';
import { apiError, ErrorCode, InvalidInput, notFound } from '../errors';
import type { CampaignModel, CampaignStatus, ConnectionModel } from '../models';
import * as validate from '../validation';
import type { RequestContext } from './requestContext';

export interface CreateCampaignInput {
  name: string;
  perHolderLimit?: number | null;
  opensAt?: Date | null;
  closesAt?: Date | null;
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
  createdAt: true,
} as const;

/** generateTickets writes up to 1,000,000 rows in one statement: it gets its own time budget. */
const GENERATE_TIMEOUT_MS = 10 * 60_000;

export class CampaignService {
  constructor(private readonly db: Database) {}

  async create(ctx: RequestContext, input: CreateCampaignInput): Promise<CampaignModel> {
    requireAdmin(ctx.viewer);
    const name = validate.text('name', input.name, validate.LIMITS.nameLength);
    const perHolderLimit =
      input.perHolderLimit === null || input.perHolderLimit === undefined
        ? null
        : validate.intInRange('perHolderLimit', input.perHolderLimit, 1, validate.LIMITS.perHolderLimit);
    validate.campaignWindow(input.opensAt, input.closesAt);
    const campaign = await this.db.prisma.campaign.create({
      data: { name, perHolderLimit, opensAt: input.opensAt ?? null, closesAt: input.closesAt ?? null },
      select: CAMPAIGN_FIELDS,
    });
    ctx.loaders.campaign.prime(campaign.id, campaign);
    return campaign;
  }

  /** DRAFT -> OPEN. Opening an OPEN campaign changes nothing; a CLOSED one stays closed. */
  async open(ctx: RequestContext, id: string): Promise<CampaignModel> {
    requireAdmin(ctx.viewer);
    const current = await this.require(id);
    if (current.status === 'CLOSED') {
      throw apiError(ErrorCode.INVALID_TRANSITION, `Campaign ${id} is CLOSED; a closed campaign cannot be opened again.`);
    }
    const campaign = await this.db.prisma.campaign.update({
      where: { id: current.id },
      data: current.status === 'DRAFT' ? { status: 'OPEN', openedAt: new Date() } : {},
      select: CAMPAIGN_FIELDS,
    });
    return this.fresh(ctx, campaign);
  }

  /**
   * DRAFT or OPEN -> CLOSED, linearizable with claims (see db/closeCampaign.ts): when this returns,
   * no further claim commits. Closing a CLOSED campaign changes nothing.
   */
  async close(ctx: RequestContext, id: string): Promise<CampaignModel> {
    requireAdmin(ctx.viewer);
    if (!validate.isUuid(id)) throw notFound('Campaign', id);
    if (!(await closeCampaign(this.db.prisma, id))) throw notFound('Campaign', id);
    return this.fresh(ctx, await this.require(id));
  }

  async loadTickets(ctx: RequestContext, campaignId: string, codes: readonly string[]): Promise<LoadResult> {
    requireAdmin(ctx.viewer);
    const valid = validate.codes(codes);
    const campaign = await this.requireLoadable(campaignId);
    const loaded = await loadTickets(this.db.prisma, campaign.id, valid);
    return { loaded, duplicates: valid.length - loaded, campaign: this.fresh(ctx, campaign) };
  }

  async generateTickets(ctx: RequestContext, campaignId: string, count: number, prefix?: string | null): Promise<LoadResult> {
    requireAdmin(ctx.viewer);
    const n = validate.intInRange('count', count, 1, validate.LIMITS.generateCount);
    const p = validate.prefix(prefix);
    const campaign = await this.requireLoadable(campaignId);
    const prisma = this.db.prisma;
    const [, loaded] = await prisma.$transaction([
      prisma.$executeRaw`SELECT set_config('statement_timeout', ${String(GENERATE_TIMEOUT_MS)}, true)`,
      generateTickets(prisma, campaign.id, n, p),
    ]);
    return { loaded, duplicates: n - loaded, campaign: this.fresh(ctx, campaign) };
  }

  async get(ctx: RequestContext, id: string): Promise<CampaignModel | null> {
    if (!validate.isUuid(id)) return null;
    return ctx.loaders.campaign.load(id.toLowerCase());
  }

  /** Newest first, by keyset (see db/findCampaigns.ts). */
  async list(
    ctx: RequestContext,
    args: { first?: number | null; after?: string | null; status?: CampaignStatus | null },
  ): Promise<ConnectionModel<CampaignModel>> {
    const limit = validate.pageSize(args.first);
    const after = args.after ? decodeCampaignCursor(args.after) : null;
    const status = args.status ?? null;
    const rows = await findCampaignPage(this.db.prisma, { status, after, limit });
    const page = rows.slice(0, limit);
    page.forEach(({ campaign }) => ctx.loaders.campaign.prime(campaign.id, campaign));
    const edges = page.map(({ campaign, cursor }) => ({ node: campaign, cursor: encodeCampaignCursor(cursor) }));
    return {
      edges,
      pageInfo: { hasNextPage: rows.length > limit, endCursor: edges.at(-1)?.cursor ?? null },
      totalCount: () => this.db.prisma.campaign.count({ where: status ? { status } : {} }),
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
    ctx.loaders.campaign.clear(campaign.id).prime(campaign.id, campaign);
    ctx.loaders.stats.clear(campaign.id);
    return campaign;
  }
}

const encodeCampaignCursor = (c: CampaignCursor) => Buffer.from(JSON.stringify([c.createdAt, c.id])).toString('base64url');

function decodeCampaignCursor(cursor: string): CampaignCursor {
  try {
    const [createdAt, id] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown[];
    if (typeof createdAt === 'string' && !Number.isNaN(Date.parse(createdAt)) && typeof id === 'string' && validate.isUuid(id)) {
      return { createdAt, id };
    }
  } catch {
    // fall through: not a cursor of ours
  }
  throw new InvalidInput('after', 'after is not a cursor returned by this connection.');
}
