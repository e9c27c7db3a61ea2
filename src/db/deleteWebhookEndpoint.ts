// deleteWebhook: a soft delete (the row stays for its deliveries' history) and the end of what it
// still had to send. Two statements in one transaction, on purpose: the second takes its snapshot
// after the first holds the endpoint's row lock, so it also sees a delivery that redeliverWebhook
// (redeliverWebhook.ts, which locks the endpoint FOR SHARE) set back to PENDING just before — one
// statement's snapshot, taken before that lock wait, would miss it and leave it PENDING for good.
import type { Batchable } from './campaignGate';

/** Why a pending delivery ended when its endpoint was deleted (WebhookDelivery.lastError). */
export const ENDPOINT_DELETED = 'endpoint deleted';

/**
 * Deletes the endpoint if it exists, is not deleted yet and belongs to `partnerId` (null: any owner,
 * for the admin). True when this call deleted it.
 */
export async function deleteWebhookEndpoint(db: Batchable, id: string, owner: { partnerId: string; test: boolean } | null): Promise<boolean> {
  const partnerId = owner?.partnerId ?? null;
  const test = owner?.test ?? null;
  const [deleted] = await db.$transaction([
    db.$executeRaw`
      UPDATE webhook_endpoints
         SET deleted_at = now(), enabled = false
       WHERE id = ${id}::uuid AND deleted_at IS NULL
         AND (${partnerId}::uuid IS NULL OR partner_id = ${partnerId}::uuid)
         AND (${test}::boolean IS NULL OR test = ${test}::boolean)`,
    // Whoever deleted it: a pending delivery of a deleted endpoint is never to be sent.
    db.$executeRaw`
      UPDATE webhook_deliveries d
         SET status = 'FAILED', last_error = ${ENDPOINT_DELETED}::text, lease_until = NULL
        FROM webhook_endpoints e
       WHERE e.id = ${id}::uuid AND e.deleted_at IS NOT NULL
         AND d.endpoint_id = e.id AND d.status = 'PENDING'`,
  ]);
  return deleted === 1;
}
