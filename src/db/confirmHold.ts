// confirmHold: HELD -> ACTIVE, through tessera_confirm_hold (prisma/functions/: the gate, the lease
// re-checked against the database clock and the write in one step, and why it is a function).
import { Prisma } from '../generated/prisma/client';
import type { Db } from './client';
import { ALLOCATION_COLUMNS, toAllocation, type AllocationRow } from './allocationRow';
import type { ClaimVerdict } from '../claim/secondLook';
import type { AllocationModel } from '../models';

export async function confirmHold(
  db: Db,
  held: Pick<AllocationModel, 'id' | 'campaignId' | 'partnerId' | 'holder'>,
): Promise<{ verdict: ClaimVerdict; allocation: AllocationModel | null }> {
  // The function alone in its statement (see its header), the row's columns read from what it returns.
  const rows = await db.$queryRaw<(AllocationRow & { verdict: ClaimVerdict })[]>`
    SELECT verdict, ${Prisma.raw(ALLOCATION_COLUMNS)}
      FROM (SELECT f.verdict, (f.confirmed).* FROM tessera_confirm_hold(${held.campaignId}::uuid, ${held.id}::uuid, ${held.partnerId}::uuid, ${held.holder}::text) f) x`;
  const row = rows[0]!;
  return { verdict: row.verdict, allocation: row.id ? toAllocation(row) : null };
}
