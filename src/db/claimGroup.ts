// THE claim, first look, for claimTicket requests that wait together on one PostgreSQL: one
// statement that serves a group of them — two or more, for any campaigns — each judged on its own.
// A claim that goes alone is one call of tessera_claim_one instead, and on Citus a group is of one
// campaign and one call of tessera_claim_campaign_group (both in claimOne.ts). The per-statement
// costs (a round trip, the executor's start, a commit) are paid once per group rather than once per
// claim. services/claimBatcher.ts decides what goes into a group.
//
// What it locks, in one order for every claim statement (docs/CORRECTNESS.md §5), before anything is
// read: the campaign gates (shared), then the idempotency keys, then the holders of campaigns with a
// per-holder limit — each class in key order (`locked`) — then the partners' quota rows in
// (campaign, partner) order (`quota_locked`). Two groups, or a group and a single claim, therefore
// take their locks in the same order and cannot wait for each other in a cycle. The gate
// (prisma/functions/tessera_claim_gate.sql) then runs per request: it takes the same locks again
// (re-entrant within the transaction) and reads with a snapshot taken after them.
//
// Then, per campaign, as many AVAILABLE tickets as requests passed its gate, FOR UPDATE SKIP LOCKED
// from a random point of the pick order (wrapping round below it only for what is missing: the
// UNION ALL stops once LIMIT is reached), re-checked in the UPDATE (docs/CORRECTNESS.md §1), and
// one allocation per request. A partner with tickets ALLOTTED to it in the campaign takes nothing
// here: it draws on its allotment first, in the second look. Expired holds are not taken here: a request left without a ticket
// comes back SHORT, and the single claim's second look (claimTicket.ts) takes over expired holds,
// waits for tickets in flight and decides between SOLD_OUT and ALL_HELD.
//
// The counters (stats, partner report, timeline, quota) move in this statement, for the rows it
// inserts: every allocation is inserted by a claim statement, and each counts its own rows here —
// cheaper than a statement trigger with transition tables, which measured 0.24 ms of a 1.1 ms
// claim (docs/BENCHMARKS.md). Changes to existing allocations are counted by the UPDATE trigger
// (prisma/functions/tessera_count_allocations.sql).
//
// Rows are found by their keys (= ANY(ARRAY(…)) on both columns of the primary key) — the picked
// tickets where the pick found them (ctid) — never by a join the planner could turn into a scan of a
// campaign, and never in a way that depends on the table's statistics (a load leaves none).
import { inTransaction, type ClaimClient } from './claimTransaction';
import type { AllocationModel, CampaignModel, TicketModel } from '../models';
import { campaignOf } from './campaignColumns';
import { COUNT_ALLOCATED } from './countAllocations';
import { ALLOCATION_EVENTS } from './webhookEvents';
import type { ClaimRequest } from './claimTicket';

export interface GroupRequest extends ClaimRequest {
  /** 1 + the earlier requests in the group with this campaign, partner and holder. */
  holderRank: number;
  /** 1 + the earlier requests in the group with this campaign and partner. */
  partnerRank: number;
  /** Where this campaign's pick starts in pick_order (one per campaign: the first request's is used). */
  start: number;
}

/** The statement's text, built once; `$1`…`$9` are the requests' columns, as arrays. */
export const CLAIM_GROUP_SQL = `
WITH input AS MATERIALIZED (
  SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::jsonb[], $5::text[], $6::text[], $7::integer[], $8::integer[], $9::integer[])
         WITH ORDINALITY AS r(campaign_id, partner_id, holder, metadata, idempotency_key, request_hash, holder_rank, partner_rank, start, ord)
),
locked AS MATERIALIZED (
  SELECT count(CASE WHEN l.class = 1 THEN pg_advisory_xact_lock_shared(l.class, l.k)::text
                    ELSE pg_advisory_xact_lock(l.class, l.k)::text END) AS n
    FROM (SELECT DISTINCT class, k FROM (
            SELECT 1 AS class, hashtext(i.campaign_id::text) AS k FROM input i
            UNION ALL
            SELECT 2, hashtext(i.partner_id::text || ':' || i.idempotency_key) FROM input i WHERE i.idempotency_key IS NOT NULL
            UNION ALL
            SELECT 3, hashtext(i.campaign_id::text || ':' || i.partner_id::text || ':' || i.holder)
              FROM input i JOIN campaigns c ON c.id = i.campaign_id WHERE c.per_holder_limit IS NOT NULL
          ) x ORDER BY class, k) l
),
quota_locked AS MATERIALIZED (
  SELECT count(*) AS n FROM (
    SELECT 1 FROM partner_quotas q
     WHERE q.campaign_id = ANY(ARRAY(SELECT campaign_id FROM input)) AND q.partner_id = ANY(ARRAY(SELECT partner_id FROM input))
       AND (SELECT n FROM locked) >= 0
     ORDER BY q.campaign_id, q.partner_id
       FOR UPDATE) s
),
gates AS MATERIALIZED (
  SELECT i.*, g.verdict
    FROM input i,
         LATERAL tessera_claim_gate(i.campaign_id, i.partner_id, i.holder, i.idempotency_key, i.holder_rank, i.partner_rank) g
   WHERE (SELECT n FROM quota_locked) >= 0
   ORDER BY i.ord
),
passed AS MATERIALIZED (
  SELECT g.*, row_number() OVER (PARTITION BY g.campaign_id ORDER BY g.ord) AS slot FROM gates g
   WHERE g.verdict = 'OK'
     -- a partner with tickets ALLOTTED to it draws on them first, in the second look
     AND NOT EXISTS (SELECT 1 FROM tickets t WHERE t.campaign_id = g.campaign_id AND t.status = 'ALLOTTED' AND t.allotted_to = g.partner_id)
),
wanted AS MATERIALIZED (
  SELECT p.campaign_id, count(*)::integer AS n, (array_agg(p.start ORDER BY p.ord))[1] AS start FROM passed p GROUP BY p.campaign_id
),
picked AS MATERIALIZED (
  SELECT w.campaign_id, t.id, t.tid, row_number() OVER (PARTITION BY w.campaign_id) AS slot
    FROM wanted w,
         LATERAL (SELECT u.id, u.tid FROM (SELECT a.id, a.tid FROM (SELECT t1.id, t1.ctid AS tid FROM tickets t1
                                                        WHERE t1.campaign_id = w.campaign_id AND t1.status = 'AVAILABLE' AND t1.pick_order >= w.start
                                                        ORDER BY t1.pick_order LIMIT w.n FOR UPDATE SKIP LOCKED) a
                                    UNION ALL
                                    SELECT b.id, b.tid FROM (SELECT t2.id, t2.ctid AS tid FROM tickets t2
                                                        WHERE t2.campaign_id = w.campaign_id AND t2.status = 'AVAILABLE' AND t2.pick_order < w.start
                                                        ORDER BY t2.pick_order LIMIT w.n FOR UPDATE SKIP LOCKED) b) u
                   LIMIT w.n) t
),
-- The picked rows where they are (ctid: a row this statement has locked cannot move), then checked
-- by primary key and status. A scan by index here went wrong on a table never analyzed, right after
-- a load: the planner took an index on campaign_id alone and walked the campaign (20,000 tickets
-- read for 3; test/plan.test.ts). The status re-check is written IS NOT DISTINCT FROM (the same
-- test: status is never NULL) so that the AVAILABLE partial index does not qualify either.
taken AS (
  UPDATE tickets t SET status = 'ALLOCATED'
   WHERE t.ctid = ANY(ARRAY(SELECT tid FROM picked))
     AND t.campaign_id = ANY(ARRAY(SELECT DISTINCT campaign_id FROM picked))
     AND t.id = ANY(ARRAY(SELECT id FROM picked))
     AND t.status IS NOT DISTINCT FROM 'AVAILABLE'
  RETURNING t.campaign_id, t.id, t.code
),
allocated AS (
  INSERT INTO allocations (campaign_id, ticket_id, partner_id, holder, metadata, idempotency_key,
                           request_hash, status)
  -- (sequence and allocated_at: the row trigger tessera_number_allocation gives them to each row as
  -- it is inserted, in this ORDER BY's order)
  SELECT k.campaign_id, k.id, p.partner_id, p.holder, p.metadata, p.idempotency_key, p.request_hash, 'ACTIVE'
    FROM taken k
    JOIN picked pk ON pk.campaign_id = k.campaign_id AND pk.id = k.id
    JOIN passed p ON p.campaign_id = pk.campaign_id AND p.slot = pk.slot
   ORDER BY p.ord
  RETURNING id, campaign_id, ticket_id, partner_id, status, sequence, allocated_at, expires_at
),
${COUNT_ALLOCATED},
${ALLOCATION_EVENTS}
SELECT g.ord, g.verdict, a.id, a.sequence, a.allocated_at, k.id AS ticket_id, k.code AS ticket_code,
       cp.name AS campaign_name, cp.status AS campaign_status, cp.opens_at AS campaign_opens_at,
       cp.closes_at AS campaign_closes_at, cp.per_holder_limit AS campaign_per_holder_limit,
       cp.created_at AS campaign_created_at
  FROM gates g
  LEFT JOIN passed p ON p.ord = g.ord
  LEFT JOIN picked pk ON pk.campaign_id = p.campaign_id AND pk.slot = p.slot
  LEFT JOIN allocated a ON a.campaign_id = pk.campaign_id AND a.ticket_id = pk.id
  LEFT JOIN taken k ON k.campaign_id = a.campaign_id AND k.id = a.ticket_id
  LEFT JOIN campaigns cp ON a.id IS NOT NULL AND cp.id = g.campaign_id
 ORDER BY g.ord`;

export interface GroupRow {
  ord: string;
  verdict: string;
  id: string | null;
  sequence: string | null;
  allocated_at: Date | null;
  ticket_id: string | null;
  ticket_code: string | null;
  campaign_name: string | null;
  campaign_status: 'DRAFT' | 'OPEN' | 'CLOSED' | null;
  campaign_opens_at: Date | null;
  campaign_closes_at: Date | null;
  campaign_per_holder_limit: number | null;
  campaign_created_at: Date | null;
}

/** The statement's parameters for these requests. */
export function claimGroupValues(requests: readonly GroupRequest[]): unknown[] {
  return [
    requests.map((r) => r.campaignId),
    requests.map((r) => r.partnerId),
    requests.map((r) => r.holder),
    requests.map((r) => (r.metadata === null ? null : JSON.stringify(r.metadata))),
    requests.map((r) => r.idempotencyKey),
    requests.map((r) => r.requestHash),
    requests.map((r) => r.holderRank),
    requests.map((r) => r.partnerRank),
    requests.map((r) => r.start),
  ];
}

/** The call of the statement's function, tessera_claim_group (claimFunctions.ts), with claimGroupValues. */
export const CLAIM_GROUP_CALL =
  'SELECT * FROM tessera_claim_group($1::uuid[], $2::uuid[], $3::text[], $4::jsonb[], $5::text[], $6::text[], $7::integer[], $8::integer[], $9::integer[])';

/** Runs the statement — its function, tessera_claim_group (claimFunctions.ts) — in its transaction (claimTransaction.ts): one for the whole group. */
export function claimGroup(prisma: ClaimClient, requests: readonly GroupRequest[]): Promise<GroupRow[]> {
  return inTransaction<GroupRow>(prisma, { name: 'claimGroup', text: CLAIM_GROUP_CALL, values: claimGroupValues(requests) });
}

/** What the first look decided for one request. */
export type FirstLook =
  | { kind: 'CLAIMED'; allocation: AllocationModel; ticket: TicketModel; campaign: CampaignModel }
  | { kind: 'FINAL'; verdict: 'CAMPAIGN_NOT_FOUND' | 'CAMPAIGN_NOT_OPEN' | 'HOLDER_LIMIT_REACHED' | 'PARTNER_QUOTA_REACHED' }
  /** This partner's idempotency key already has its allocation (a replay). */
  | { kind: 'PRIOR'; campaignId: string; allocationId: string }
  /** Not decided here (no AVAILABLE ticket left for it, or a refusal an earlier request of the group may have caused): the second look answers it. */
  | { kind: 'UNDECIDED' };

/** The allocation, ticket and campaign of a row that claimed one. */
export function claimedFrom(row: GroupRow, request: GroupRequest): FirstLook {
  const campaignId = request.campaignId;
  const allocation: AllocationModel = {
    id: row.id!,
    campaignId,
    ticketId: String(row.ticket_id),
    partnerId: request.partnerId,
    holder: request.holder,
    metadata: request.metadata,
    idempotencyKey: request.idempotencyKey,
    status: 'ACTIVE',
    sequence: Number(row.sequence),
    allocatedAt: row.allocated_at!,
    expiresAt: null,
    releasedAt: null,
    confirmedAt: null,
  };
  return {
    kind: 'CLAIMED',
    allocation,
    ticket: { campaignId, id: allocation.ticketId, code: row.ticket_code!, status: 'ALLOCATED' },
    campaign: campaignOf(campaignId, row),
  };
}

/** One answer per request, in request order. */
export function readGroup(rows: readonly GroupRow[], requests: readonly GroupRequest[]): FirstLook[] {
  return requests.map((request, i) => {
    const row = rows[i];
    if (!row || Number(row.ord) !== i + 1) throw new Error('the group claim statement returned rows out of order');
    if (row.id !== null) return claimedFrom(row, request);
    switch (row.verdict) {
      case 'CAMPAIGN_NOT_FOUND':
      case 'CAMPAIGN_NOT_OPEN':
        return { kind: 'FINAL', verdict: row.verdict };
      // A refusal the group's own earlier requests may have caused without getting a ticket is
      // asked again alone; the first of its holder (or partner) in the group is not.
      case 'HOLDER_LIMIT_REACHED':
        return request.holderRank === 1 ? { kind: 'FINAL', verdict: row.verdict } : { kind: 'UNDECIDED' };
      case 'PARTNER_QUOTA_REACHED':
        return request.partnerRank === 1 ? { kind: 'FINAL', verdict: row.verdict } : { kind: 'UNDECIDED' };
      default:
        return { kind: 'UNDECIDED' }; // OK without a ticket, or PRIOR (the second look replays it)
    }
  });
}
