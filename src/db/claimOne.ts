// THE claim, first look, for a claimTicket request that arrives alone: the group statement
// (claimGroup.ts) cut down to one request — the same gate, the same pick, the same counting — without
// the group's unnesting, lock ordering and pairing, which are most of its cost when there is one
// request to serve (a group of one cost 1.5–1.9 ms of PostgreSQL's CPU against 0.7–1.0 ms for this
// statement, one client, 2026-12-01). One request takes its locks in the gate's own order (campaign
// gate, key, holder, quota row), the order the group statement takes them in too.
//
// AVAILABLE tickets only, FOR UPDATE SKIP LOCKED from a random point of the pick order, wrapping
// round below it only if nothing was found above (the UNION ALL stops at its LIMIT). A partner with
// tickets ALLOTTED to it in the campaign takes nothing here (one probe of an index that is empty in a
// campaign without allotments): it draws on its allotment first, in the second look. Nothing found
// means SHORT: the single claim's second look (claimTicket.ts) takes over expired holds, waits for
// tickets in flight, and decides between SOLD_OUT and ALL_HELD.
import { inTransaction, type ClaimClient } from './claimTransaction';
import { COUNT_ALLOCATED } from './countAllocations';
import { ALLOCATION_EVENTS } from './webhookEvents';
import { claimedFrom, type FirstLook, type GroupRequest, type GroupRow } from './claimGroup';

export const CLAIM_ONE_SQL = `
WITH gate AS MATERIALIZED (
  SELECT verdict, prior_campaign_id, prior_allocation_id
    FROM tessera_claim_gate($1::uuid, $2::uuid, $3::text, $5::text, 1, 1)
),
-- A partner with tickets set aside by an allotment draws on them first: the second look does that.
own_allotted AS MATERIALIZED (
  SELECT EXISTS (SELECT 1 FROM tickets t WHERE t.campaign_id = $1::uuid AND t.status = 'ALLOTTED' AND t.allotted_to = $2::uuid) AS found
),
picked AS MATERIALIZED (
  SELECT u.id FROM (
    SELECT a.id FROM (SELECT t.id FROM tickets t
                       WHERE t.campaign_id = $1::uuid AND t.status = 'AVAILABLE' AND t.pick_order >= $7::integer
                         AND (SELECT verdict FROM gate) = 'OK' AND NOT (SELECT found FROM own_allotted)
                       ORDER BY t.pick_order LIMIT 1 FOR UPDATE SKIP LOCKED) a
    UNION ALL
    SELECT b.id FROM (SELECT t.id FROM tickets t
                       WHERE t.campaign_id = $1::uuid AND t.status = 'AVAILABLE' AND t.pick_order < $7::integer
                         AND (SELECT verdict FROM gate) = 'OK' AND NOT (SELECT found FROM own_allotted)
                       ORDER BY t.pick_order LIMIT 1 FOR UPDATE SKIP LOCKED) b
  ) u LIMIT 1
),
taken AS (
  UPDATE tickets t SET status = 'ALLOCATED'
   WHERE t.campaign_id = $1::uuid AND t.id = (SELECT id FROM picked) AND t.status = 'AVAILABLE'
  RETURNING t.campaign_id, t.id, t.code
),
allocated AS (
  INSERT INTO allocations (campaign_id, ticket_id, partner_id, holder, metadata, idempotency_key,
                           request_hash, status, sequence, allocated_at)
  SELECT k.campaign_id, k.id, $2::uuid, $3::text, $4::jsonb, $5::text, $6::text, 'ACTIVE',
         tessera_next_sequence($1::uuid), clock_timestamp()
    FROM taken k
  RETURNING id, campaign_id, ticket_id, partner_id, status, sequence, allocated_at, expires_at
),
${COUNT_ALLOCATED},
${ALLOCATION_EVENTS}
SELECT 1 AS ord, g.verdict, g.prior_campaign_id, g.prior_allocation_id,
       a.id, a.sequence, a.allocated_at, k.id AS ticket_id, k.code AS ticket_code,
       cp.name AS campaign_name, cp.status AS campaign_status, cp.opens_at AS campaign_opens_at,
       cp.closes_at AS campaign_closes_at, cp.per_holder_limit AS campaign_per_holder_limit,
       cp.created_at AS campaign_created_at
  FROM gate g
  LEFT JOIN allocated a ON true
  LEFT JOIN taken k ON true
  LEFT JOIN campaigns cp ON a.id IS NOT NULL AND cp.id = $1::uuid`;

export type OneRow = GroupRow & { prior_campaign_id: string | null; prior_allocation_id: string | null };

/** Runs the statement — its function, tessera_claim_one (claimFunctions.ts) — in its transaction (claimTransaction.ts). */
export async function claimOne(prisma: ClaimClient, r: GroupRequest): Promise<OneRow> {
  const rows = await inTransaction<OneRow>(prisma, {
    text: 'SELECT * FROM tessera_claim_one($1::uuid, $2::uuid, $3::text, $4::jsonb, $5::text, $6::text, $7::integer)',
    values: [r.campaignId, r.partnerId, r.holder, r.metadata === null ? null : JSON.stringify(r.metadata), r.idempotencyKey, r.requestHash, r.start],
  });
  if (rows.length !== 1) throw new Error(`the claim statement returned ${rows.length} rows`);
  return rows[0]!;
}

/** What the first look decided for a request that went alone. */
export function readOne(row: OneRow, request: GroupRequest): FirstLook {
  if (row.id !== null) return claimedFrom(row, request);
  switch (row.verdict) {
    case 'PRIOR':
      return { kind: 'PRIOR', campaignId: row.prior_campaign_id!, allocationId: row.prior_allocation_id! };
    case 'CAMPAIGN_NOT_FOUND':
    case 'CAMPAIGN_NOT_OPEN':
    case 'HOLDER_LIMIT_REACHED':
    case 'PARTNER_QUOTA_REACHED':
      return { kind: 'FINAL', verdict: row.verdict };
    default:
      return { kind: 'UNDECIDED' }; // passed the gate, no AVAILABLE ticket: the second look decides
  }
}
