// offboardPartner: a partner cut off, in one transaction. Its live key and its test key are revoked
// (a key revoked already keeps its first revoked_at), and every webhook endpoint of its own, live
// and test, is deleted as deleteWebhook deletes one (endpointDeletion, deleteWebhookEndpoint.ts: its
// pending deliveries FAILED, "endpoint deleted"). The partner's row, its allocations, entries,
// quotas and allotments stay: what it claimed stands.
// The owner locks createWebhookEndpoint takes come first, for both modes (always live, then test:
// two off-boardings take them in the same order): an endpoint being created now is committed before
// the deletion reads the endpoints, and goes with the rest.
import { Prisma } from '../generated/prisma/client';
import type { Batchable } from './campaignGate';
import { lockEndpointOwner } from './createWebhookEndpoint';
import { endpointDeletion } from './deleteWebhookEndpoint';

export interface Offboarded {
  /** The live key's prefix and when it was revoked (now, or earlier). */
  keyPrefix: string;
  revokedAt: Date;
  /** The test key's prefix; null for a partner without a test key. */
  testKeyPrefix: string | null;
  /** Endpoints this call deleted. */
  endpointsDeleted: number;
}

/** Null when there is no such partner (nothing changed). */
export async function offboardPartner(db: Batchable, partnerId: string): Promise<Offboarded | null> {
  const [, , live, test, deleted] = await db.$transaction([
    lockEndpointOwner(db, partnerId, false),
    lockEndpointOwner(db, partnerId, true),
    db.$queryRaw<{ key_prefix: string; revoked_at: Date }[]>`
      UPDATE partners SET revoked_at = COALESCE(revoked_at, now())
       WHERE id = ${partnerId}::uuid
      RETURNING key_prefix, revoked_at`,
    db.$queryRaw<{ key_prefix: string }[]>`
      UPDATE partner_test_keys SET revoked_at = COALESCE(revoked_at, now())
       WHERE partner_id = ${partnerId}::uuid
      RETURNING key_prefix`,
    ...endpointDeletion(db, Prisma.sql`e.partner_id = ${partnerId}::uuid`),
  ]);
  const partner = (live as { key_prefix: string; revoked_at: Date }[])[0];
  if (!partner) return null;
  return {
    keyPrefix: partner.key_prefix,
    revokedAt: partner.revoked_at,
    testKeyPrefix: (test as { key_prefix: string }[])[0]?.key_prefix ?? null,
    endpointsDeleted: deleted as number,
  };
}
