import type { Db } from './client';
import type { TicketModel, TicketStatus } from '../models';

export interface TicketKey {
  campaignId: string;
  ticketId: string;
}

/** Tickets by their (campaign_id, id) primary key, in one statement. */
export async function findTickets(db: Db, keys: readonly TicketKey[]): Promise<TicketModel[]> {
  const rows = await db.$queryRaw<{ campaign_id: string; id: bigint; code: string; status: TicketStatus }[]>`
    SELECT t.campaign_id, t.id, t.code, t.status
      FROM unnest(${keys.map((k) => k.campaignId)}::uuid[], ${keys.map((k) => k.ticketId)}::bigint[]) AS k(campaign_id, id)
      JOIN tickets t ON t.campaign_id = k.campaign_id AND t.id = k.id`;
  return rows.map((r) => ({ campaignId: r.campaign_id, id: String(r.id), code: r.code, status: r.status }));
}
