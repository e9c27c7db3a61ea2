import type { Db } from './client';
import type { TicketModel, TicketStatus } from '../models';

export interface TicketKey {
  campaignId: string;
  ticketId: string;
}

/**
 * Tickets by their (campaign_id, id) primary key, in one statement. A ticket whose hold has
 * expired reads as AVAILABLE — it is claimable from that instant — or, under the VOID release
 * policy, as VOID, even before the sweeper has written so. Under WAITLIST_FIRST it reads as HELD
 * until the sweeper has offered it, and so does a RETURNED ticket (on its way to the waitlist).
 */
export async function findTickets(db: Db, keys: readonly TicketKey[]): Promise<TicketModel[]> {
  const rows = await db.$queryRaw<{ campaign_id: string; id: bigint; code: string; status: TicketStatus }[]>`
    SELECT t.campaign_id, t.id, t.code,
           CASE WHEN t.status = 'HELD' AND NOT EXISTS (
                  SELECT 1 FROM allocations a
                   WHERE a.campaign_id = t.campaign_id AND a.ticket_id = t.id
                     AND a.status = 'HELD' AND a.expires_at > clock_timestamp())
                THEN CASE (SELECT cp.release_policy FROM campaigns cp WHERE cp.id = t.campaign_id)
                          WHEN 'VOID' THEN 'VOID'::ticket_status
                          WHEN 'WAITLIST_FIRST' THEN 'HELD'::ticket_status
                          ELSE 'AVAILABLE'::ticket_status END
                WHEN t.status = 'RETURNED' THEN 'HELD'::ticket_status
                ELSE t.status END AS status
      FROM unnest(${keys.map((k) => k.campaignId)}::uuid[], ${keys.map((k) => k.ticketId)}::bigint[]) AS k(campaign_id, id)
      JOIN tickets t ON t.campaign_id = k.campaign_id AND t.id = k.id`;
  return rows.map((r) => ({ campaignId: r.campaign_id, id: String(r.id), code: r.code, status: r.status }));
}
