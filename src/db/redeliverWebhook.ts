// redeliverWebhook: a delivery is PENDING again and due now, with its event id and body unchanged (so
// the receiver's de-duplication on Tessera-Event-Id still works). Its attempts are kept: the retry
// schedule counts them (webhooks/backoff.ts), so a FAILED delivery sent again gets this one attempt,
// not another 24 hours of retries. A delivery being attempted at this moment (PENDING under a live
// lease) is left to that attempt: clearing its lease would let a second dispatcher send it at once.
// The endpoint is locked FOR SHARE, so a deleteWebhook running now either comes first (nothing is
// updated) or waits and then fails this delivery with the rest (deleteWebhookEndpoint.ts).
// The time is read once, in that CTE (now(): the transaction's start), and the CASEs compare
// columns only: Citus refuses a function inside a CASE of an UPDATE (webhook_deliveries is a
// reference table there); it computes the CTE once and sends its result to every copy.
import { Prisma } from '../generated/prisma/client';
import type { Db } from './client';
import { DELIVERY_COLUMNS, type DeliveryRow } from './webhookRows';

/** The delivery as it now is, or null when its endpoint is deleted (or the delivery does not exist). */
export async function redeliverWebhook(db: Db, deliveryId: string): Promise<DeliveryRow | null> {
  const rows = await db.$queryRaw<DeliveryRow[]>`
    WITH endpoint AS (
      SELECT e.id, now() AS now FROM webhook_endpoints e
        JOIN webhook_deliveries x ON x.endpoint_id = e.id
       WHERE x.id = ${deliveryId}::uuid AND e.deleted_at IS NULL
         FOR SHARE OF e
    )
    UPDATE webhook_deliveries d
       SET status = 'PENDING',
           -- (SET reads the row before the update: these test its old status and lease)
           next_attempt_at = CASE WHEN d.status = 'PENDING' AND d.lease_until > e.now THEN d.next_attempt_at ELSE e.now END,
           lease_until = CASE WHEN d.status = 'PENDING' AND d.lease_until > e.now THEN d.lease_until END
      FROM endpoint e
     WHERE d.id = ${deliveryId}::uuid AND d.endpoint_id = e.id
    RETURNING ${Prisma.raw(DELIVERY_COLUMNS)}`;
  return rows[0] ?? null;
}
