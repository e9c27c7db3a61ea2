// closeCampaign, linearizable: once it has returned, no further claim commits.
//
// It takes the campaign gate EXCLUSIVE (claims take it SHARED in tessera_claim_gate): it waits for
// the claims already in flight to commit, and new claims queue behind it in the lock manager, so it
// is not starved by a storm (CORRECTNESS.md 4). When it commits, the queued claims read CLOSED with
// a fresh snapshot and are refused. The lock is held until COMMIT, so the two statements run as
// one transaction (a Prisma batch $transaction: BEGIN, lock, update, COMMIT).
import type { Prisma } from '../generated/prisma/client';
import type { Db } from './client';

type Batchable = Pick<Db, '$queryRaw' | '$executeRaw'> & {
  $transaction<P extends Prisma.PrismaPromise<unknown>[]>(statements: [...P]): Promise<unknown[]>;
};

/** Returns true when the campaign exists (and is now CLOSED), false when it does not. */
export async function closeCampaign(db: Batchable, campaignId: string): Promise<boolean> {
  const [, closed] = await db.$transaction([
    db.$executeRaw`SELECT pg_advisory_xact_lock(1, hashtext(${campaignId}::uuid::text))`,
    db.$executeRaw`
      UPDATE campaigns
         SET status = 'CLOSED', closed_at = COALESCE(closed_at, clock_timestamp())
       WHERE id = ${campaignId}::uuid`,
  ]);
  return closed === 1;
}
