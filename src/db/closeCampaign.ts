// closeCampaign, linearizable: once it has returned, no further claim commits.
//
// It takes the campaign gate EXCLUSIVE (claims take it SHARED in tessera_claim_gate): it waits for
// the claims already in flight to commit, and new claims queue behind it in the lock manager, so it
// is not starved by a storm (CORRECTNESS.md 4). When it commits, the queued claims read CLOSED with
// a fresh snapshot and are refused. Must run inside the caller's transaction: the lock is held
// until COMMIT.
import type { Db } from './client';
import type { CampaignStatus } from '../models';

export interface ClosedCampaign {
  previous: CampaignStatus;
}

/** Returns the status before the close, or null when the campaign does not exist. */
export async function closeCampaign(db: Db, campaignId: string): Promise<ClosedCampaign | null> {
  await db.$executeRaw`SELECT pg_advisory_xact_lock(1, hashtext(${campaignId}::uuid::text))`;
  const rows = await db.$queryRaw<{ previous: CampaignStatus }[]>`
    UPDATE campaigns c
       SET status = 'CLOSED', closed_at = COALESCE(c.closed_at, clock_timestamp())
      FROM (SELECT id, status FROM campaigns WHERE id = ${campaignId}::uuid FOR UPDATE) old
     WHERE c.id = old.id
    RETURNING old.status AS previous`;
  return rows[0] ?? null;
}
