// Partners and their API keys, as operators manage them: issue, revoke, off-board, rotate, rate
// limits, scope, and the list. Each partner has a live key and a test key; where a request's key is
// looked up (cached) is partnerKeys.ts, told here of every change.
import { issueApiKey, type Authenticator, type PartnerKeyRecord, type Viewer } from '../auth';
import type { Database } from '../db/client';
import { offboardPartner } from '../db/offboardPartner';
import type { LiveUpdates } from '../live';
import { apiError, ErrorCode, InvalidInput, notFound } from '../errors';
import type { ConnectionModel, PartnerModel } from '../models';
import * as validate from '../validation';
import { partnerCursor } from './cursors';
import { PartnerKeyCaches } from './partnerKeys';
import type { RequestContext } from './requestContext';

/** The most campaigns one partner key can be scoped to. */
const MAX_SCOPE = 1000;

const PARTNER_FIELDS = { id: true, name: true, createdAt: true, lastUsedAt: true, revokedAt: true, rateLimit: true, scoped: true, campaignScope: true } as const;

/** A partner's test key, as Partner.testKey shows it (never the key). */
export interface PartnerTestKeyModel {
  partnerId: string;
  prefix: string;
  createdAt: Date;
  lastUsedAt: Date | null;
  revokedAt: Date | null;
}

export class PartnerService implements Pick<Authenticator, 'findPartnerByPrefix'> {
  private readonly caches: PartnerKeyCaches;

  constructor(
    private readonly db: Database,
    keyCacheTtlMs = 0,
    onError: (error: unknown) => void = () => undefined,
    /** Tells every instance when a key was revoked, rotated or changed (live.ts). */
    private readonly live?: LiveUpdates,
  ) {
    this.caches = new PartnerKeyCaches(db, keyCacheTtlMs, onError);
    // A change made on another instance: drop this instance's cached records at once.
    live?.onKeyChanged((partnerId) => this.caches.forget(partnerId));
  }

  /** Issues a partner, its API key and its test key; each is returned once and only its hash is stored. */
  async create(ctx: RequestContext, input: { name: string }): Promise<{ partner: PartnerModel; apiKey: string; testApiKey: string }> {
    const name = validate.text('name', input.name, validate.LIMITS.nameLength);
    const key = issueApiKey();
    const testKey = issueApiKey('partner-test');
    const row = await this.db.prisma.partner.create({
      data: { name, keyPrefix: key.prefix, keyHash: key.hash, testKey: { create: { keyPrefix: testKey.prefix, keyHash: testKey.hash } } },
      select: PARTNER_FIELDS,
    });
    this.caches.live.added(key.prefix);
    this.caches.test.added(testKey.prefix);
    ctx.loaders.partner.prime(row.id, row);
    return { partner: row, apiKey: key.apiKey, testApiKey: testKey.apiKey };
  }

  /** These partners' test keys (without the keys themselves); a partner without one is left out. */
  async testKeysOf(partnerIds: readonly string[]): Promise<PartnerTestKeyModel[]> {
    const rows = await this.db.prisma.partnerTestKey.findMany({
      where: { partnerId: { in: [...partnerIds] } },
      select: { partnerId: true, keyPrefix: true, createdAt: true, lastUsedAt: true, revokedAt: true },
    });
    return rows.map((r) => ({ partnerId: r.partnerId, prefix: `tsp_${r.keyPrefix}`, createdAt: r.createdAt, lastUsedAt: r.lastUsedAt, revokedAt: r.revokedAt }));
  }

  /** The key stops working: here at once, on other instances within the cache TTL. `test`: the test key instead. */
  async revoke(ctx: RequestContext, partnerId: string, test = false): Promise<PartnerModel> {
    const current = await this.require(partnerId);
    if (test) {
      const key = await this.db.prisma.partnerTestKey.findUnique({ where: { partnerId: current.id }, select: { keyPrefix: true, revokedAt: true } });
      if (key && key.revokedAt === null) {
        await this.db.prisma.partnerTestKey.update({ where: { partnerId: current.id }, data: { revokedAt: new Date() }, select: { partnerId: true } });
      }
      if (key) this.caches.test.removed(key.keyPrefix);
      this.live?.keyChanged(current.id);
      return this.fresh(ctx, current);
    }
    const row = await this.db.prisma.partner.update({
      where: { id: current.id },
      data: { revokedAt: current.revokedAt ?? new Date() },
      select: { ...PARTNER_FIELDS, keyPrefix: true },
    });
    this.caches.live.removed(row.keyPrefix);
    this.live?.keyChanged(row.id);
    return this.fresh(ctx, row);
  }

  /**
   * Both keys stop working as with revoke — here at once, their open sockets with them (ws.ts hears
   * keyChanged) — and the partner's webhook endpoints are deleted, in one transaction
   * (db/offboardPartner.ts).
   */
  async offboard(ctx: RequestContext, partnerId: string): Promise<PartnerModel> {
    const current = await this.require(partnerId);
    const done = await offboardPartner(this.db.prisma, current.id);
    if (!done) throw notFound('Partner', partnerId);
    this.caches.live.removed(done.keyPrefix);
    if (done.testKeyPrefix !== null) this.caches.test.removed(done.testKeyPrefix);
    this.live?.keyChanged(current.id);
    return this.fresh(ctx, { ...current, revokedAt: done.revokedAt });
  }

  /**
   * A new key (shown once); the old one stops working as with revoke. Also un-revokes. `test`: a new
   * test key instead (or the partner's first, where it has none).
   */
  async rotate(ctx: RequestContext, partnerId: string, test = false): Promise<{ partner: PartnerModel; apiKey: string; testApiKey: string | null }> {
    const current = await this.require(partnerId);
    if (test) {
      const key = issueApiKey('partner-test');
      const old = await this.db.prisma.partnerTestKey.findUnique({ where: { partnerId: current.id }, select: { keyPrefix: true } });
      const fields = { keyPrefix: key.prefix, keyHash: key.hash, createdAt: new Date(), revokedAt: null, lastUsedAt: null };
      await this.db.prisma.partnerTestKey.upsert({ where: { partnerId: current.id }, create: { partnerId: current.id, ...fields }, update: fields, select: { partnerId: true } });
      if (old) this.caches.test.removed(old.keyPrefix);
      this.caches.test.added(key.prefix);
      this.live?.keyChanged(current.id);
      return { partner: this.fresh(ctx, current), apiKey: key.apiKey, testApiKey: key.apiKey };
    }
    const key = issueApiKey();
    const old = await this.db.prisma.partner.findUniqueOrThrow({ where: { id: current.id }, select: { keyPrefix: true } });
    const row = await this.db.prisma.partner.update({
      where: { id: current.id },
      data: { keyPrefix: key.prefix, keyHash: key.hash, revokedAt: null, rotatedAt: new Date() },
      select: PARTNER_FIELDS,
    });
    this.caches.live.removed(old.keyPrefix);
    this.caches.live.added(key.prefix);
    this.live?.keyChanged(row.id);
    return { partner: this.fresh(ctx, row), apiKey: key.apiKey, testApiKey: null };
  }

  async setRateLimit(ctx: RequestContext, partnerId: string, pointsPerSecond: number | null | undefined): Promise<PartnerModel> {
    const current = await this.require(partnerId);
    const rateLimit = validate.optionalIntInRange('pointsPerSecond', pointsPerSecond, 1, 1_000_000);
    const row = await this.db.prisma.partner.update({ where: { id: current.id }, data: { rateLimit }, select: { ...PARTNER_FIELDS, keyPrefix: true } });
    this.caches.live.drop(row.keyPrefix);
    this.caches.test.forget(row.id);
    this.live?.keyChanged(row.id);
    return this.fresh(ctx, row);
  }

  /**
   * Limits the partner's key to these campaigns ([] = none; null = every campaign again). Every id
   * must exist. The key's cached record is dropped here and on every instance (live.ts), so the
   * scope holds at once here and within API_KEY_CACHE_TTL_MS elsewhere; it is a property of the
   * partner, so a rotated key keeps it.
   */
  async setScope(ctx: RequestContext, partnerId: string, campaignIds: readonly string[] | null | undefined): Promise<PartnerModel> {
    const current = await this.require(partnerId);
    const scope = campaignIds === null || campaignIds === undefined ? null : [...new Set(campaignIds.map((id) => id.toLowerCase()))];
    if (scope && scope.length > MAX_SCOPE) throw new InvalidInput('campaignIds', `At most ${MAX_SCOPE} campaigns.`);
    if (scope?.length) {
      const found = new Set(
        (await this.db.prisma.campaign.findMany({ where: { id: { in: scope.filter(validate.isUuid) } }, select: { id: true } })).map((c) => c.id),
      );
      const missing = scope.find((id) => !found.has(id));
      if (missing !== undefined) throw apiError(ErrorCode.CAMPAIGN_NOT_FOUND, `Campaign ${missing} does not exist.`, { campaignId: missing });
    }
    const row = await this.db.prisma.partner.update({
      where: { id: current.id },
      data: { scoped: scope !== null, campaignScope: scope ?? [] },
      select: { ...PARTNER_FIELDS, keyPrefix: true },
    });
    this.caches.live.drop(row.keyPrefix);
    this.caches.test.forget(row.id);
    this.live?.keyChanged(row.id);
    return this.fresh(ctx, row);
  }

  async list(ctx: RequestContext, args: { first?: number | null; after?: string | null }): Promise<ConnectionModel<PartnerModel>> {
    const limit = validate.pageSize(args.first);
    const afterId = args.after ? partnerCursor.decode(args.after) : null;
    const db = this.db.read().prisma; // an operators' list: a replica may serve it
    const rows = await db.partner.findMany({
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
      totalCount: () => db.partner.count({ where: { keyPrefix: { not: 'operator' } } }),
    };
  }

  /** The key's record, cached (keyCache.ts); `loadedSince`: only one read at or after that instant will do. */
  findPartnerByPrefix(prefix: string, loadedSince?: number): Promise<PartnerKeyRecord | null> {
    return this.caches.of(prefix).find(prefix, loadedSince);
  }

  /** Authenticating a key with this prefix costs no look-up (keyCache.ts). */
  isKeyCached(prefix: string): boolean {
    return this.caches.of(prefix).has(prefix);
  }

  /** Whether a partner key with this prefix exists, from memory (keyCache.ts; the failed-authentication limit). */
  keyExists(prefix: string, waitUntil: number): Promise<boolean> {
    return this.caches.of(prefix).exists(prefix, waitUntil);
  }

  /** Records that a partner's key — its live or its test key — authenticated a request (keyCache.ts). */
  touch(viewer: Extract<Viewer, { kind: 'partner' }>): void {
    (viewer.test ? this.caches.test : this.caches.live).touch(viewer.partnerId);
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
