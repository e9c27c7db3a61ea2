// The allocations row as raw SQL returns it, and its mapping to the model.
import type { JsonValue } from './json';
import type { AllocationModel, AllocationStatus } from '../models';

/**
 * Columns every statement that returns allocations selects, in this order. A hold past its
 * expires_at reads as EXPIRED even before the sweeper (or a claim taking its ticket) has written
 * that: the database's clock decides, the same clock confirmHold checks.
 */
export const ALLOCATION_COLUMNS = `id, campaign_id, ticket_id, partner_id, holder, metadata, idempotency_key, request_hash,
  CASE WHEN status = 'HELD' AND expires_at <= clock_timestamp() THEN 'EXPIRED'::allocation_status ELSE status END AS status,
  sequence, allocated_at, expires_at, released_at, confirmed_at, request_index`;

export interface AllocationRow {
  id: string;
  campaign_id: string;
  ticket_id: bigint;
  partner_id: string;
  holder: string;
  metadata: JsonValue | null;
  idempotency_key: string | null;
  request_hash: string | null;
  status: AllocationStatus;
  sequence: bigint;
  allocated_at: Date;
  expires_at: Date | null;
  released_at: Date | null;
  confirmed_at: Date | null;
  request_index: number;
}

export function toAllocation(row: AllocationRow): AllocationModel {
  return {
    id: row.id,
    campaignId: row.campaign_id,
    ticketId: String(row.ticket_id),
    partnerId: row.partner_id,
    holder: row.holder,
    metadata: row.metadata,
    idempotencyKey: row.idempotency_key,
    status: row.status,
    sequence: Number(row.sequence),
    allocatedAt: row.allocated_at,
    expiresAt: row.expires_at,
    releasedAt: row.released_at,
    confirmedAt: row.confirmed_at,
  };
}
