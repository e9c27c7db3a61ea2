// Partners and their API keys: issue, look up (cached), revoke, rotate, rate limits, last use.
import { LRUCache } from 'lru-cache';
import { issueApiKey, type Authenticator, type PartnerKeyRecord } from '../auth';
import type { Database } from '../db/client';
import type { LiveUpdates } from '../live';
import { notFound } from '../errors';
import type { ConnectionModel, PartnerModel } from '../models';
import * as validate from '../validation';
import { partnerCursor } from './cursors';
import type { RequestContext } from './requestContext';

const PARTNER_FIELDS = { id: true, name: true, createdAt: true, lastUsedAt: true, revokedAt: true, rateLimit: true } as const;
/** last_used_at is written at most this often per key: a write per request would cost more than the request. */
const LAST_USED_RESOLUTION_MS = 60_000;

export class PartnerService implements Authenticator {
  /**
   * Key records by prefix, for `keyCacheTtlMs` (0: no cache): every request is authenticated, and
   * a database look-up per request costs more than the rest of an empty query. The cached record
   * still goes through the constant-time hash comparison; a revocation or rotation in this process
   * drops it at once, one made elsewhere (another instance, SQL) takes effect within the TTL.
   */
  private readonly keys: LRUCache<string, PartnerKeyRecord> | null;
  private readonly lastUsedWritten = new LRUCache<string, number>({ max: 100_000 });

  constructor(
    private readonly db: Database,
    readonly adminApiKey: string,
    keyCacheTtlMs = 0,
    private readonly onError: (error: unknown) => void = () => undefined,
    /** Tells every instance when a key was revoked, rotated or changed (live.ts). */
    private readonly live?: LiveUpdates,
  ) {
    this.keys = keyCacheTtlMs > 0 ? new LRUCache({ max: 10_000, ttl: keyCacheTtlMs }) : null;
    // A change made on another instance: drop this instance's cached record at once.
    live?.onKeyChanged((partnerId) => this.forget(partnerId));
  }

  /** Drops the cached key record of a partner. */
  forget(partnerId: string): void {
    for (const [prefix, record] of this.keys?.entries() ?? []) if (record.id === partnerId) this.keys?.delete(prefix);
  }

  /** Issues a partner and its API key; the key is returned once and only its hash is stored. */
  async create(ctx: RequestContext, input: { name: string }): Promise<{ partner: PartnerModel; apiKey: string }> {
    const name = validate.text('name', input.name, validate.LIMITS.nameLength);
    const key = issueApiKey();
    const row = await this.db.prisma.partner.create({ data: { name, keyPrefix: key.prefix, keyHash: key.hash }, select: PARTNER_FIELDS });
    ctx.loaders.partner.prime(row.id, row);
    return { partner: row, apiKey: key.apiKey };
  }

  /** The key stops working: here at once, on other instances within the cache TTL. */
  async revoke(ctx: RequestContext, partnerId: string): Promise<PartnerModel> {
    const current = await this.require(partnerId);
    const row = await this.db.prisma.partner.update({
      where: { id: current.id },
      data: { revokedAt: current.revokedAt ?? new Date() },
      select: { ...PARTNER_FIELDS, keyPrefix: true },
    });
    this.keys?.delete(row.keyPrefix);
    this.live?.keyChanged(row.id);
    return this.fresh(ctx, row);
  }

  /** A new key (shown once); the old one stops working as with revoke. Also un-revokes. */
  async rotate(ctx: RequestContext, partnerId: string): Promise<{ partner: PartnerModel; apiKey: string }> {
    const current = await this.require(partnerId);
    const key = issueApiKey();
    const old = await this.db.prisma.partner.findUniqueOrThrow({ where: { id: current.id }, select: { keyPrefix: true } });
    const row = await this.db.prisma.partner.update({
      where: { id: current.id },
      data: { keyPrefix: key.prefix, keyHash: key.hash, revokedAt: null, rotatedAt: new Date() },
      select: PARTNER_FIELDS,
    });
    this.keys?.delete(old.keyPrefix);
    this.live?.keyChanged(row.id);
    return { partner: this.fresh(ctx, row), apiKey: key.apiKey };
  }

  async setRateLimit(ctx: RequestContext, partnerId: string, pointsPerSecond: number | null | undefined): Promise<PartnerModel> {
    const current = await this.require(partnerId);
    const rateLimit = validate.optionalIntInRange('pointsPerSecond', pointsPerSecond, 1, 1_000_000);
    const row = await this.db.prisma.partner.update({ where: { id: current.id }, data: { rateLimit }, select: { ...PARTNER_FIELDS, keyPrefix: true } });
    this.keys?.delete(row.keyPrefix);
    this.live?.keyChanged(row.id);
    return this.fresh(ctx, row);
  }

  async list(ctx: RequestContext, args: { first?: number | null; after?: string | null }): Promise<ConnectionModel<PartnerModel>> {
    const limit = validate.pageSize(args.first);
    const afterId = args.after ? partnerCursor.decode(args.after) : null;
    const rows = await this.db.prisma.partner.findMany({
      where: { keyPrefix: { not: 'operator' }, ...(afterId ? { id: { gt: afterId } } : {}) },
      orderBy: { id: 'asc' },
      take: limit + 1,
      select: PARTNER_FIELDS,
    });
    const page = rows.slice(0, limit);
    page.forEach((p) => ctx.loaders.partner.prime(p.id, p));
    const edges = page.map((node) => ({ node, cursor: partnerCursor.encode(node.id) }));
    return {
      edges,
      pageInfo: { hasNextPage: rows.length > limit, endCursor: edges.at(-1)?.cursor ?? null },
      totalCount: () => this.db.prisma.partner.count({ where: { keyPrefix: { not: 'operator' } } }),
    };
  }

  async findPartnerByPrefix(prefix: string): Promise<PartnerKeyRecord | null> {
    const cached = this.keys?.get(prefix);
    const record =
      cached ??
      (await this.db.prisma.partner.findUnique({
        where: { keyPrefix: prefix },
        select: { id: true, name: true, createdAt: true, keyHash: true, revokedAt: true, rateLimit: true },
      }));
    if (!cached && record && record.revokedAt === null) this.keys?.set(prefix, record);
    return record;
  }

  /** Records that a key authenticated a request, at most once a minute per partner, off the request's path. */
  touch(partnerId: string): void {
    const now = Date.now();
    if (now - (this.lastUsedWritten.get(partnerId) ?? 0) < LAST_USED_RESOLUTION_MS) return;
    this.lastUsedWritten.set(partnerId, now);
    this.db.prisma.partner.update({ where: { id: partnerId }, data: { lastUsedAt: new Date(now) }, select: { id: true } }).catch(this.onError);
  }

  async findByIds(ids: readonly string[]): Promise<PartnerModel[]> {
    return this.db.prisma.partner.findMany({ where: { id: { in: [...ids] } }, select: PARTNER_FIELDS });
  }

  private async require(partnerId: string): Promise<PartnerModel> {
    if (!validate.isUuid(partnerId)) throw notFound('Partner', partnerId);
    const row = await this.db.prisma.partner.findUnique({ where: { id: partnerId.toLowerCase() }, select: PARTNER_FIELDS });
    if (!row || partnerId === '00000000-0000-0000-0000-000000000000') throw notFound('Partner', partnerId);
    return row;
  }

  private fresh(ctx: RequestContext, row: PartnerModel & { keyPrefix?: string }): PartnerModel {
    const { keyPrefix: _keyPrefix, ...partner } = row;
    ctx.loaders.partner.clear(partner.id).prime(partner.id, partner);
    return partner;
  }
}
