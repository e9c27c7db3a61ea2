// Partners and their API keys.
import { issueApiKey, requireAdmin, type Authenticator, type PartnerKeyRecord } from '../auth';
import type { Database } from '../db/client';
import type { PartnerModel } from '../models';
import * as validate from '../validation';
import type { RequestContext } from './requestContext';

export class PartnerService implements Authenticator {
  constructor(
    private readonly db: Database,
    readonly adminApiKey: string,
  ) {}

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

  findPartnerByPrefix(prefix: string): Promise<PartnerKeyRecord | null> {
    return this.db.prisma.partner.findUnique({
      where: { keyPrefix: prefix },
      select: { id: true, name: true, createdAt: true, keyHash: true, revokedAt: true },
    });
  }

  async findByIds(ids: readonly string[]): Promise<PartnerModel[]> {
    return this.db.prisma.partner.findMany({
      where: { id: { in: [...ids] } },
      select: { id: true, name: true, createdAt: true },
    });
  }
}
