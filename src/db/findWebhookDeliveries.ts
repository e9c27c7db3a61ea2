// An endpoint's deliveries, newest first, by keyset on (created_at, id) — the index
// webhook_deliveries_endpoint_id_created_at_id_idx, read in its own order. The cursor carries
// created_at as PostgreSQL prints it (microseconds kept). The optional parts of the condition are
// left out of the statement when unused rather than written `$1 IS NULL OR …`: every statement runs
// with a generic plan (db/client.ts), which cannot make an index condition of such an OR.
import { Prisma } from '../generated/prisma/client';
import type { Db } from './client';
import type { DeliveryStatus } from '../generated/graphql';
import { DELIVERY_COLUMNS, type DeliveryRow } from './webhookRows';

export interface DeliveryCursor {
  createdAt: string;
  id: string;
}

export async function findWebhookDeliveryPage(
  db: Db,
  q: { endpointId: string; status: DeliveryStatus | null; after: DeliveryCursor | null; limit: number },
): Promise<(DeliveryRow & { created_at_text: string })[]> {
  const status = q.status === null ? Prisma.empty : Prisma.sql`AND d.status = ${q.status}::webhook_delivery_status`;
  const after = q.after === null ? Prisma.empty : Prisma.sql`AND (d.created_at, d.id) < (${q.after.createdAt}::timestamptz, ${q.after.id}::uuid)`;
  return db.$queryRaw<(DeliveryRow & { created_at_text: string })[]>`
    SELECT ${Prisma.raw(DELIVERY_COLUMNS)}, d.created_at::text AS created_at_text
      FROM webhook_deliveries d
     WHERE d.endpoint_id = ${q.endpointId}::uuid ${status} ${after}
     ORDER BY d.created_at DESC, d.id DESC
     LIMIT ${q.limit + 1}::integer`;
}

export async function countWebhookDeliveries(db: Db, endpointId: string, status: DeliveryStatus | null): Promise<number> {
  const rows = await db.$queryRaw<{ n: number }[]>`
    SELECT count(*)::integer AS n FROM webhook_deliveries d
     WHERE d.endpoint_id = ${endpointId}::uuid ${status === null ? Prisma.empty : Prisma.sql`AND d.status = ${status}::webhook_delivery_status`}`;
  return rows[0]?.n ?? 0;
}
