// Returns an allocation's ticket: the allocation becomes RELEASED and its ticket AVAILABLE — or
// ALLOTTED again when it was drawn from the partner's live allotment, VOID under the campaign's
// VOID release policy, RETURNED under WAITLIST_FIRST (tessera_returned_ticket decides) — in one
// statement; a RETURNED ticket is then offered to the waitlist (db/waitlist.ts). Releasing a hold of
// a waitlist offer declines it: its entry is LEFT (tessera_settle_waitlist_entry).
//
// It takes the campaign gate shared (as everything that changes which allocations are live does),
// then the allocation row, then the ticket row — the order every statement that touches an existing
// allocation uses. A claim never waits on either.
//
// If the campaign is sold out at that moment, the release records when it sold out (soldOutAt)
// before it ends the sell-out: it is the last moment anyone can still tell. A hold that has expired
// is over already: it is not released, and is answered as it is (EXPIRED).
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
  const rows = await db.$queryRaw<(AllocationRow & { offer_due: boolean })[]>`
    WITH target AS MATERIALIZED (
      SELECT a.campaign_id FROM allocations a
       WHERE a.id = ${allocationId}::uuid
         AND (a.status = 'ACTIVE' OR (a.status = 'HELD' AND a.expires_at > clock_timestamp()))
         AND (${partnerId}::uuid IS NULL OR a.partner_id = ${partnerId}::uuid)
    ),
    gate AS MATERIALIZED (
      SELECT t.campaign_id FROM target t,
             LATERAL (SELECT pg_advisory_xact_lock_shared(1, hashtext(t.campaign_id::text))) l,
             LATERAL (SELECT tessera_record_sold_out(t.campaign_id)) s
    ),
    released AS (
      UPDATE allocations a
         SET status = 'RELEASED', released_at = clock_timestamp(), expires_at = NULL
        FROM gate g
       WHERE a.campaign_id = g.campaign_id AND a.id = ${allocationId}::uuid
         AND (a.status = 'ACTIVE' OR (a.status = 'HELD' AND a.expires_at > clock_timestamp()))
      RETURNING a.*
    ),
    destined AS (
      SELECT r.campaign_id, r.ticket_id, r.partner_id, tessera_returned_ticket(r.campaign_id, r.partner_id, r.from_allotment) AS status
        FROM released r
    ),
    returned AS (
      UPDATE tickets t
         SET status = d.status, allotted_to = CASE WHEN d.status = 'ALLOTTED' THEN d.partner_id END
        FROM destined d
       WHERE t.campaign_id = d.campaign_id AND t.id = d.ticket_id
      RETURNING t.id, t.status
    )
    SELECT ${Prisma.raw(ALLOCATION_COLUMNS)}, EXISTS (SELECT 1 FROM returned WHERE status = 'RETURNED') AS offer_due
      FROM released`;
  const row = rows[0];
  if (!row) return null;
  // WAITLIST_FIRST: the ticket is RETURNED, counted as held and taken by no claim; offered now, in
  // the next statement (the sweeper does it within a second if this process dies first).
  if (row.offer_due) await offerReturned(db, row.campaign_id);
  return toAllocation(row);
}
