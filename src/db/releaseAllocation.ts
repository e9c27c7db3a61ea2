// Returns an allocation's ticket, through tessera_release_allocation (prisma/functions/: what the
// ticket becomes, the gate and lock order, soldOutAt, and why it is a function); a RETURNED ticket
// is then offered to the waitlist (db/waitlist.ts).
import { Prisma } from '../generated/prisma/client';
import type { Db } from './client';
import { ALLOCATION_COLUMNS, toAllocation, type AllocationRow } from './allocationRow';
import type { AllocationModel } from '../models';
import { offerReturned } from './waitlist';

/**
 * Releases a live (ACTIVE or HELD) allocation. `partnerId` restricts it to that partner's own
 * allocations (null for the admin). Returns null when nothing live matched.
 */
export async function releaseAllocation(db: Db, allocationId: string, partnerId: string | null): Promise<AllocationModel | null> {
  // The function alone in its statement (see its header), the row's columns read from what it returns.
  const rows = await db.$queryRaw<(AllocationRow & { offer_due: boolean })[]>`
    SELECT ${Prisma.raw(ALLOCATION_COLUMNS)}, offer_due
      FROM (SELECT (f.released).*, f.offer_due FROM tessera_release_allocation(${allocationId}::uuid, ${partnerId}::uuid) f) x`;
  const row = rows[0];
  if (!row) return null;
  // WAITLIST_FIRST: the ticket is RETURNED, counted as held and taken by no claim; offered now, in
  // the next statement (the sweeper does it within a second if this process dies first).
  if (row.offer_due) await offerReturned(db, row.campaign_id);
  return toAllocation(row);
}
