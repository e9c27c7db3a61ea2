// Partners and their API keys.
import { LRUCache } from 'lru-cache';
import { issueApiKey, requireAdmin, type Authenticator, type PartnerKeyRecord } from '../auth';
import type { Database } from '../db/client';
import type { PartnerModel } from '../models';
import * as validate from '../validation';
import type { RequestContext } from './requestContext';

export class PartnerService implements Authenticator {
  /**
   * Key records by prefix, for `keyCacheTtlMs` (0: no cache): every request is authenticated, and
   * a database look-up per request costs more than the rest of an empty query. The cached record
   * still goes through the constant-time hash comparison; a revocation in this process drops it at
   * once, one made elsewhere (another instance, SQL) takes effect within the TTL.
   */
  private readonly keys: LRUCache<string, PartnerKeyRecord> | null;

  constructor(
    private readonly db: Database,
    readonly adminApiKey: string,
    keyCacheTtlMs = 0,
  ) {
    this.keys = keyCacheTtlMs > 0 ? new LRUCache({ max: 10_000, ttl: keyCacheTtlMs }) : null;
  }

  /** Issues a partner and its API key; the key is returned once and only its hash is stored. */
  async create(ctx: RequestContext, input: { name: string }): Promise<{ partner: PartnerModel; apiKey: string }> {
    requireAdmin(ctx.viewer);
    const name = validate.text('name', input.name, validate.LIMITS.nameLength);
    const key = issueApiKey();
    const row = await this.db.prisma.partner.create({
      data: { name, keyPrefix: key.prefix, keyHash: key.hash },
      select: { id: true, name: true, createdAt: true },
    });
    ctx.loaders.partner.prime(row.id, row);
    return { partner: row, apiKey: key.apiKey };
  }

  async findPartnerByPrefix(prefix: string): Promise<PartnerKeyRecord | null> {
    const cached = this.keys?.get(prefix);
    if (cached) return cached;
    const record = await this.db.prisma.partner.findUnique({
      where: { keyPrefix: prefix },
      select: { id: true, name: true, createdAt: true, keyHash: true, revokedAt: true },
    });
    if (record && record.revokedAt === null) this.keys?.set(prefix, record);
    return record;
  }

  /** Forget a key's cached record (after it was revoked or rotated in this process). */
  forgetKey(prefix: string): void {
    this.keys?.delete(prefix);
  }

  async findByIds(ids: readonly string[]): Promise<PartnerModel[]> {
    return this.db.prisma.partner.findMany({
      where: { id: { in: [...ids] } },
      select: { id: true, name: true, createdAt: true },
    });
  }
}
