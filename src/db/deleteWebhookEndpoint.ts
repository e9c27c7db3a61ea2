// deleteWebhook: a soft delete (the row stays for its deliveries' history) and the end of what it
// still had to send. Two statements in one transaction, on purpose: the second takes its snapshot
// after the first holds the endpoint's row lock, so it also sees a delivery that redeliverWebhook
// (redeliverWebhook.ts, which locks the endpoint FOR SHARE) set back to PENDING just before — one
// statement's snapshot, taken before that lock wait, would miss it and leave it PENDING for good.
// The two statements are endpointDeletion's, which offboardPartner.ts runs for all of a partner's
// endpoints: an endpoint is deleted the same way whoever deletes it.
import { Prisma } from '../generated/prisma/client';
import type { Batchable } from './campaignGate';

/** Why a pending delivery ended when its endpoint was deleted (WebhookDelivery.lastError). */
export const ENDPOINT_DELETED = 'endpoint deleted';

/**
 * The statements that delete the endpoints `which` selects (a condition on `webhook_endpoints e`),
 * for a batch transaction: the endpoints not yet deleted, then the pending deliveries of those
 * deleted. The first's count is how many endpoints it deleted.
 */
export function endpointDeletion(db: Batchable, which: Prisma.Sql): [Prisma.PrismaPromise<number>, Prisma.PrismaPromise<number>] {
  return [
    db.$executeRaw`
      UPDATE webhook_endpoints e
         SET deleted_at = now(), enabled = false
       WHERE e.deleted_at IS NULL AND ${which}`,
    // Whoever deleted it: a pending delivery of a deleted endpoint is never to be sent.
    db.$executeRaw`
      UPDATE webhook_deliveries d
         SET status = 'FAILED', last_error = ${ENDPOINT_DELETED}::text, lease_until = NULL
        FROM webhook_endpoints e
       WHERE e.deleted_at IS NOT NULL AND ${which}
         AND d.endpoint_id = e.id AND d.status = 'PENDING'`,
  ];
}

/**
 * Deletes the endpoint if it exists, is not deleted yet and belongs to `partnerId` (null: any owner,
 * for the admin). True when this call deleted it.
 */
export async function deleteWebhookEndpoint(db: Batchable, id: string, owner: { partnerId: string; test: boolean } | null): Promise<boolean> {
  const partnerId = owner?.partnerId ?? null;
  const test = owner?.test ?? null;
  const [deleted] = await db.$transaction(
    endpointDeletion(
      db,
      Prisma.sql`e.id = ${id}::uuid
         AND (${partnerId}::uuid IS NULL OR e.partner_id = ${partnerId}::uuid)
         AND (${test}::boolean IS NULL OR e.test = ${test}::boolean)`,
    ),
  );
  return deleted === 1;
}
