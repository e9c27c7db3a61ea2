// closeCampaign, linearizable: once it has returned, no further claim commits. It takes the
// campaign gate exclusive (db/campaignGate.ts) in the same transaction as the status change: it
// waits for the claims already in flight, new claims queue behind it, and when it commits they read
// CLOSED with a fresh snapshot and are refused. Prisma's batch $transaction: BEGIN, lock, update, COMMIT.
import { lockCampaignGate, type Batchable } from './campaignGate';

/** Returns true when the campaign exists (and is now CLOSED), false when it does not. */
export async function closeCampaign(db: Batchable, campaignId: string): Promise<boolean> {
  const [, closed] = await db.$transaction([
    lockCampaignGate(db, campaignId),
    db.$executeRaw`
      UPDATE campaigns
         SET status = 'CLOSED', closed_at = COALESCE(closed_at, clock_timestamp())
       WHERE id = ${campaignId}::uuid`,
  ]);
  return closed === 1;
}
