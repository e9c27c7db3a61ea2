// createWebhook's insert, within the per-owner limit. Two creates for one owner at once must not both
// see 19 endpoints and both insert: a transaction-scoped advisory lock per owner (a partner, or the
// operator for endpoints with no partner) puts them one after the other, and the count and the insert
// are one statement taken after the lock, so each sees the other's committed row.
import { Prisma } from '../generated/prisma/client';
import type { WebhookEvent } from '../generated/graphql';
import type { Batchable } from './campaignGate';
import { ENDPOINT_COLUMNS, type EndpointRow } from './webhookRows';

/**
 * The statement that takes an owner's lock (tessera_lock's endpoint_owner) in a batch transaction: its endpoints of one mode (test
 * or live) are counted, made and deleted (offboardPartner.ts) one transaction at a time.
 */
export const lockEndpointOwner = (db: Batchable, partnerId: string | null, test: boolean) =>
  db.$executeRaw`SELECT tessera_lock('endpoint_owner', COALESCE(${partnerId}::uuid::text, 'operator') || ${test ? ' test' : ''}::text)`;

/**
 * The new endpoint, or null when its owner already has `limit` endpoints in its mode (deleted ones
 * not counted): test endpoints have a limit of their own.
 */
export async function createWebhookEndpoint(
  db: Batchable,
  e: { partnerId: string | null; test: boolean; url: string; events: readonly WebhookEvent[]; secretSealed: string; limit: number },
): Promise<EndpointRow | null> {
  const [, rows] = await db.$transaction([
    lockEndpointOwner(db, e.partnerId, e.test),
    db.$queryRaw<EndpointRow[]>`
      INSERT INTO webhook_endpoints (partner_id, test, url, events, secret_sealed)
      SELECT ${e.partnerId}::uuid, ${e.test}::boolean, ${e.url}::text, ${e.events}::text[], ${e.secretSealed}::text
       WHERE (SELECT count(*) FROM webhook_endpoints
               WHERE partner_id IS NOT DISTINCT FROM ${e.partnerId}::uuid AND test = ${e.test}::boolean AND deleted_at IS NULL) < ${e.limit}::integer
      RETURNING ${Prisma.raw(ENDPOINT_COLUMNS)}`,
  ]);
  return (rows as EndpointRow[])[0] ?? null;
}
