// confirmHold: HELD -> ACTIVE, in one write that re-checks the hold's expiry against the database
// clock (a hold is a lease: the check and the write must be one step, or an expired lease could be
// confirmed after its ticket went to someone else). The gate (with quantity 0: a confirmation adds
// no live allocation) makes it refuse a campaign that is not open, linearizably with close.
import { Prisma } from '../generated/prisma/client';
import type { Db } from './client';
import { ALLOCATION_COLUMNS, toAllocation, type AllocationRow } from './allocationRow';
import type { ClaimVerdict } from './claimTicket';
import type { AllocationModel } from '../models';

export async function confirmHold(
  db: Db,
  held: Pick<AllocationModel, 'id' | 'campaignId' | 'partnerId' | 'holder'>,
): Promise<{ verdict: ClaimVerdict; allocation: AllocationModel | null }> {
  const rows = await db.$queryRaw<(AllocationRow & { verdict: ClaimVerdict })[]>`
    WITH gate AS MATERIALIZED (
      SELECT verdict FROM tessera_claim_gate(${held.campaignId}::uuid, ${held.partnerId}::uuid, ${held.holder}::text, NULL, 0, 0)
    ),
    confirmed AS (
      UPDATE allocations a
         SET status = 'ACTIVE', confirmed_at = clock_timestamp(), expires_at = NULL
       WHERE a.campaign_id = ${held.campaignId}::uuid AND a.id = ${held.id}::uuid
         AND a.status = 'HELD' AND a.expires_at > clock_timestamp()
         AND (SELECT verdict FROM gate) = 'OK'
      RETURNING a.*
    ),
    ticket AS (
      UPDATE tickets t SET status = 'ALLOCATED'
        FROM confirmed c
       WHERE t.campaign_id = c.campaign_id AND t.id = c.ticket_id AND t.status = 'HELD'
      RETURNING t.id
    )
    SELECT g.verdict, c.* FROM gate g
      LEFT JOIN (SELECT ${Prisma.raw(ALLOCATION_COLUMNS)} FROM confirmed) c ON true`;
  const row = rows[0]!;
  return { verdict: row.verdict, allocation: row.id ? toAllocation(row) : null };
}
