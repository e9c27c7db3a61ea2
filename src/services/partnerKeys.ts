// Where a partner key's record is found when a request authenticates: one KeyCache (keyCache.ts) of
// live keys and one of test keys (`tsp_test_…`, in partner_test_keys, so that using one changes no
// live row), told apart by the prefix. PartnerService tells them of every key it issues, revokes or
// changes.
import { TEST_KEY_PREFIX, type PartnerKeyRecord } from '../auth';
import type { Database } from '../db/client';
import { KeyCache } from './keyCache';

const KEY_RECORD_FIELDS = { id: true, name: true, createdAt: true, revokedAt: true, rateLimit: true, scoped: true, campaignScope: true } as const;

const isTestPrefix = (prefix: string): boolean => prefix.startsWith(TEST_KEY_PREFIX);

export class PartnerKeyCaches {
  /** Key records by prefix: live keys, and test keys (`test_…` prefixes). */
  readonly live: KeyCache<PartnerKeyRecord>;
  readonly test: KeyCache<PartnerKeyRecord>;

  constructor(db: Database, ttlMs: number, onError: (error: unknown) => void) {
    this.live = new KeyCache<PartnerKeyRecord>(
      ttlMs,
      async (prefix) => {
        const row = await db.prisma.partner.findUnique({ where: { keyPrefix: prefix }, select: { ...KEY_RECORD_FIELDS, keyHash: true } });
        return row && { ...row, test: false };
      },
      (id, at) => db.prisma.partner.update({ where: { id }, data: { lastUsedAt: at }, select: { id: true } }),
      onError,
      async () => (await db.prisma.partner.findMany({ where: { revokedAt: null, keyPrefix: { not: 'operator' } }, select: { keyPrefix: true } })).map((p) => p.keyPrefix),
    );
    // A test key's record: the partner's, with the test key's hash and revocation.
    this.test = new KeyCache<PartnerKeyRecord>(
      ttlMs,
      async (prefix) => {
        const row = await db.prisma.partnerTestKey.findUnique({ where: { keyPrefix: prefix }, select: { keyHash: true, revokedAt: true, partner: { select: KEY_RECORD_FIELDS } } });
        return row && { ...row.partner, keyHash: row.keyHash, revokedAt: row.revokedAt, test: true };
      },
      (id, at) => db.prisma.partnerTestKey.update({ where: { partnerId: id }, data: { lastUsedAt: at }, select: { partnerId: true } }),
      onError,
      async () => (await db.prisma.partnerTestKey.findMany({ where: { revokedAt: null }, select: { keyPrefix: true } })).map((k) => k.keyPrefix),
    );
  }

  /** The cache a prefix belongs to. */
  of(prefix: string): KeyCache<PartnerKeyRecord> {
    return isTestPrefix(prefix) ? this.test : this.live;
  }

  /** Both of the partner's cached records dropped: the next request with either key reads it again. */
  forget(partnerId: string): void {
    this.live.forget(partnerId);
    this.test.forget(partnerId);
  }
}
