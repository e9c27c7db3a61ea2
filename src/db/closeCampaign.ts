// closeCampaign, linearizable: once it has returned, no further claim commits. It takes the
// campaign gate exclusive (db/campaignGate.ts) in the same transaction as the status change: it
// waits for the claims already in flight, new claims queue behind it, and when it commits they read
// CLOSED with a fresh snapshot and are refused. Prisma's batch $transaction: BEGIN, lock, update, COMMIT.
import { Prisma } from '../generated/prisma/client';
import { lockCampaignGate, type Batchable } from './campaignGate';
import { ENDPOINTS_LISTENING } from './webhookEvents';

/** Returns true when the campaign exists (and is now CLOSED), false when it does not. */
export async function closeCampaign(db: Batchable, campaignId: string): Promise<boolean> {
  // Under the exclusive gate, closes of one campaign run one after the other, and this statement's
  // snapshot sees any earlier close: CAMPAIGN_CLOSED (webhookEvents.ts) is appended once, by the
  // close that changed the status; a CLOSED campaign keeps its closed_at. closed_at is this
  // statement's start, after the gate was taken: later than every claim that committed before it
  // (statement_timestamp(), not clock_timestamp(): Citus refuses a VOLATILE function in an UPDATE
  // of a reference table, and anything but an IMMUTABLE one in its COALESCE or CASE).
  const [, , closed] = await db.$transaction([
    ...lockCampaignGate(db, campaignId),
    db.$queryRaw<{ closed: boolean }[]>`
      WITH previous AS (SELECT id, status FROM campaigns WHERE id = ${campaignId}::uuid),
      closed AS (
        UPDATE campaigns c
           SET status = 'CLOSED', closed_at = statement_timestamp()
          FROM previous p
         WHERE c.id = p.id AND p.status <> 'CLOSED'
        RETURNING c.id
      ),
      evented AS (
        INSERT INTO webhook_events (type, campaign_id, data)
        SELECT 'CAMPAIGN_CLOSED', x.id, tessera_campaign_event_data(x.id, 'CLOSED') FROM closed x
         WHERE ${Prisma.raw(ENDPOINTS_LISTENING)}
      )
      SELECT EXISTS (SELECT 1 FROM previous) AS closed`,
  ]);
  return (closed as { closed: boolean }[])[0]?.closed === true;
}
