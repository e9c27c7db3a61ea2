// extendHold: a HELD allocation's expires_at moved to max(expires_at, now + ttl), never past the
// hold's cap — allocated_at + the campaign's max_hold_seconds, and for a waitlist offer's or a ballot
// win's hold allocated_at + its window if that is earlier — through tessera_extend_hold
// (prisma/functions/: the row locked and checked against the database clock, then written). If
// nothing was extended, the allocation is read afresh to say why.
import { Prisma } from '../generated/prisma/client';
import type { Db } from './client';
import { ALLOCATION_COLUMNS, toAllocation, type AllocationRow } from './allocationRow';
import type { AllocationModel } from '../models';
import { inStatement, type Span } from '../tracing';

export type ExtendVerdict = 'OK' | 'HOLD_EXPIRED' | 'HOLD_EXTENSION_LIMIT' | 'NOT_HELD' | 'ALLOCATION_NOT_FOUND';

export async function extendHold(
  db: Db,
  hold: Pick<AllocationModel, 'id' | 'campaignId'>,
  ttlSeconds: number,
): Promise<{ verdict: ExtendVerdict; allocation: AllocationModel | null }> {
  // The function alone in its statement (see its header), the row's columns read from what it returns.
  const rows = await db.$queryRaw<AllocationRow[]>`
    SELECT ${Prisma.raw(ALLOCATION_COLUMNS)} FROM tessera_extend_hold(${hold.campaignId}::uuid, ${hold.id}::uuid, ${ttlSeconds}::integer)`;
  if (rows[0]) return { verdict: 'OK', allocation: toAllocation(rows[0]) };
  // Why not: read afresh (a new snapshot sees what the update waited for).
  const [now] = await db.$queryRaw<{ status: string; expired: boolean }[]>`
    SELECT status::text, expires_at <= clock_timestamp() AS expired FROM allocations
     WHERE campaign_id = ${hold.campaignId}::uuid AND id = ${hold.id}::uuid`;
  if (!now) return { verdict: 'ALLOCATION_NOT_FOUND', allocation: null };
  if (now.status === 'EXPIRED' || (now.status === 'HELD' && now.expired)) return { verdict: 'HOLD_EXPIRED', allocation: null };
  if (now.status === 'HELD') return { verdict: 'HOLD_EXTENSION_LIMIT', allocation: null };
  return { verdict: 'NOT_HELD', allocation: null };
}

/** The campaign's max_hold_seconds (null: no cap, or no such campaign — the claim statement answers that). */
export async function campaignMaxHoldSeconds(db: Db, campaignId: string, trace?: Span): Promise<number | null> {
  const [row] = await inStatement(trace, 'campaignMaxHoldSeconds', () => db.$queryRaw<{ max_hold_seconds: number | null }[]>`SELECT max_hold_seconds FROM campaigns WHERE id = ${campaignId}::uuid`.then((found) => found));
  return row?.max_hold_seconds ?? null;
}
