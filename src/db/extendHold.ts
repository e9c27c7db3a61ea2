// extendHold: a HELD allocation's expires_at moved to max(expires_at, now + ttl), never past
// allocated_at + the campaign's max_hold_seconds. Like confirmHold, the check that the hold has not
// expired and the write are one step against the database clock: clock_timestamp() in the WHERE
// clause is evaluated again when the row is re-checked after a wait for its lock, so a hold that
// lapsed meanwhile — or that a claim or the sweeper took over — is never extended.
import { Prisma } from '../generated/prisma/client';
import type { Db } from './client';
import { ALLOCATION_COLUMNS, toAllocation, type AllocationRow } from './allocationRow';
import type { AllocationModel } from '../models';

export type ExtendVerdict = 'OK' | 'HOLD_EXPIRED' | 'HOLD_EXTENSION_LIMIT' | 'NOT_HELD' | 'ALLOCATION_NOT_FOUND';

export async function extendHold(
  db: Db,
  hold: Pick<AllocationModel, 'id' | 'campaignId'>,
  ttlSeconds: number,
): Promise<{ verdict: ExtendVerdict; allocation: AllocationModel | null }> {
  // LEAST ignores a NULL: without a cap the new expiry stands as computed; with one, the microseconds
  // between the WHERE clause's clock and the SET clause's can never take it past the cap.
  const rows = await db.$queryRaw<AllocationRow[]>`
    WITH cap AS (SELECT make_interval(secs => max_hold_seconds) AS longest FROM campaigns WHERE id = ${hold.campaignId}::uuid)
    UPDATE allocations
       SET expires_at = LEAST(GREATEST(expires_at, clock_timestamp() + make_interval(secs => ${ttlSeconds}::integer)),
                              allocated_at + (SELECT longest FROM cap))
     WHERE campaign_id = ${hold.campaignId}::uuid AND id = ${hold.id}::uuid
       AND status = 'HELD' AND expires_at > clock_timestamp()
       AND GREATEST(expires_at, clock_timestamp() + make_interval(secs => ${ttlSeconds}::integer))
           <= COALESCE(allocated_at + (SELECT longest FROM cap), 'infinity')
    RETURNING ${Prisma.raw(ALLOCATION_COLUMNS)}`;
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
export async function campaignMaxHoldSeconds(db: Db, campaignId: string): Promise<number | null> {
  const [row] = await db.$queryRaw<{ max_hold_seconds: number | null }[]>`SELECT max_hold_seconds FROM campaigns WHERE id = ${campaignId}::uuid`;
  return row?.max_hold_seconds ?? null;
}
