// Returns an allocation's ticket to the pool: the allocation becomes RELEASED and its ticket
// AVAILABLE, in one statement. Locks the allocation row, then the ticket row — the order every
// statement that touches an existing allocation uses. A claim never waits on either.
import { Prisma } from '../generated/prisma/client';
import type { Db } from './client';
import { ALLOCATION_COLUMNS, toAllocation, type AllocationRow } from './allocationRow';
import type { AllocationModel } from '../models';

/**
 * Releases a live (ACTIVE or HELD) allocation. `partnerId` restricts it to that partner's own
 * allocations (null for the admin). Returns null when nothing live matched.
 */
export async function releaseAllocation(
  db: Db,
  allocationId: string,
  partnerId: string | null,
): Promise<AllocationModel | null> {
  const rows = await db.$queryRaw<AllocationRow[]>`
    WITH released AS (
      UPDATE allocations
         SET status = 'RELEASED', released_at = clock_timestamp(), expires_at = NULL
       WHERE id = ${allocationId}::uuid
         AND status IN ('ACTIVE', 'HELD')
         AND (${partnerId}::uuid IS NULL OR partner_id = ${partnerId}::uuid)
      RETURNING ${Prisma.raw(ALLOCATION_COLUMNS)}
    ),
    returned AS (
      UPDATE tickets t
         SET status = 'AVAILABLE'
        FROM released r
       WHERE t.campaign_id = r.campaign_id AND t.id = r.ticket_id
      RETURNING t.id
    )
    SELECT r.* FROM released r`;
  return rows[0] ? toAllocation(rows[0]) : null;
}
