// Group claims: the single claims for one campaign that arrive together, served by ONE statement —
// one gate call per request, one pick of as many tickets as passed the gate, one insert of their
// allocations, each with its own holder, metadata and idempotency key. The per-statement costs (a
// round trip, the executor start, Prisma's ~300 µs per query) are paid once per batch instead of
// once per claim. services/claimBatcher.ts decides what goes into a batch; it dedupes idempotency
// keys first (two requests with one key never share a batch).
//
// Every guarantee is the single claim's, request by request:
//   - the gate runs per request, with the same locks (re-entrant within the statement's
//     transaction); the k-th request of one holder in the batch is checked with quantity k (and
//     of one partner, for its quota, with k), so the batch's requests count each other;
//   - tickets are picked FOR UPDATE SKIP LOCKED from a random start exactly as in claimTicket.ts,
//     re-checked in the UPDATE, and expired holds are taken over after AVAILABLE tickets;
//   - what this statement cannot decide alone it does not decide: a request left without a ticket
//     (the pool may be contended — SOLD_OUT needs the single claim's second look), a holder or quota
//     refusal that an earlier request of the batch may have caused without getting a ticket, and a
//     replay, come back as SHORT/undecided and are answered by the single claim.
import { Prisma } from '../generated/prisma/client';
import type { Db } from './client';
import type { JsonValue } from './json';
import { ALLOCATION_COLUMNS, toAllocation, type AllocationRow } from './allocationRow';
import type { ClaimVerdict } from './claimTicket';
import type { AllocationModel, CampaignModel, CampaignStatus, TicketModel } from '../models';

export interface BatchRequest {
  partnerId: string;
  holder: string;
  metadata: JsonValue | null;
  idempotencyKey: string | null;
  requestHash: string | null;
  /** 1 + the earlier requests in the batch with this partner and holder. */
  holderRank: number;
  /** 1 + the earlier requests in the batch with this partner. */
  partnerRank: number;
}

export type BatchOutcome =
  | { kind: 'CLAIMED'; allocation: AllocationModel; ticket: TicketModel; campaign: CampaignModel }
  | { kind: 'FINAL'; verdict: 'CAMPAIGN_NOT_FOUND' | 'CAMPAIGN_NOT_OPEN' | 'HOLDER_LIMIT_REACHED' | 'PARTNER_QUOTA_REACHED' }
  /** Not decided here: the single claim answers it. */
  | { kind: 'UNDECIDED' };

type Row = { [K in keyof AllocationRow]: AllocationRow[K] | null } & {
  ord: bigint;
  verdict: ClaimVerdict;
  ticket_code: string | null;
  campaign_name: string | null;
  campaign_status: CampaignStatus | null;
  campaign_opens_at: Date | null;
  campaign_closes_at: Date | null;
  campaign_per_holder_limit: number | null;
  campaign_created_at: Date | null;
};

export function claimBatch(db: Db, campaignId: string, requests: BatchRequest[], start: number): Prisma.PrismaPromise<Row[]> {
  const c = Prisma.sql`${campaignId}::uuid`;
  return db.$queryRaw<Row[]>`
    WITH input AS MATERIALIZED (
      SELECT * FROM unnest(${requests.map((r) => r.partnerId)}::uuid[], ${requests.map((r) => r.holder)}::text[],
                           ${requests.map((r) => (r.metadata === null ? null : JSON.stringify(r.metadata)))}::jsonb[],
                           ${requests.map((r) => r.idempotencyKey)}::text[], ${requests.map((r) => r.requestHash)}::text[],
                           ${requests.map((r) => r.holderRank)}::integer[], ${requests.map((r) => r.partnerRank)}::integer[])
             WITH ORDINALITY AS r(partner_id, holder, metadata, idempotency_key, request_hash, holder_rank, partner_rank, ord)
    ),
    gates AS MATERIALIZED (
      SELECT i.*, g.verdict
        FROM input i,
             LATERAL tessera_claim_gate(${c}, i.partner_id, i.holder, i.idempotency_key, i.holder_rank, i.partner_rank) g
    ),
    passed AS MATERIALIZED (
      SELECT g.*, row_number() OVER (ORDER BY g.ord) AS slot FROM gates g WHERE g.verdict = 'OK'
    ),
    wanted AS MATERIALIZED (SELECT count(*)::integer AS n FROM passed),
    upper AS MATERIALIZED (
      SELECT t.id FROM tickets t
       WHERE t.campaign_id = ${c} AND t.status = 'AVAILABLE' AND t.pick_order >= ${start}::integer
       ORDER BY t.pick_order LIMIT (SELECT n FROM wanted)
       FOR UPDATE SKIP LOCKED
    ),
    lower AS MATERIALIZED (
      SELECT t.id FROM tickets t
       WHERE t.campaign_id = ${c} AND t.status = 'AVAILABLE' AND t.pick_order < ${start}::integer
       ORDER BY t.pick_order LIMIT (SELECT n FROM wanted) - (SELECT count(*) FROM upper)
       FOR UPDATE SKIP LOCKED
    ),
    expired AS MATERIALIZED (
      SELECT a.campaign_id, a.id, a.ticket_id FROM allocations a
       WHERE a.campaign_id = ${c} AND a.status = 'HELD' AND a.expires_at <= clock_timestamp()
       ORDER BY a.expires_at, a.id LIMIT (SELECT n FROM wanted) - (SELECT count(*) FROM upper) - (SELECT count(*) FROM lower)
       FOR UPDATE SKIP LOCKED
    ),
    chosen AS MATERIALIZED (
      SELECT id, row_number() OVER () AS slot
        FROM (SELECT id FROM upper UNION ALL SELECT id FROM lower UNION ALL SELECT ticket_id FROM expired) x
    ),
    lapsed AS (
      UPDATE allocations a SET status = 'EXPIRED'
       WHERE a.campaign_id = ${c} AND a.id = ANY(ARRAY(SELECT id FROM expired)) AND a.status = 'HELD'
      RETURNING a.id
    ),
    taken AS (
      UPDATE tickets t
         SET status = 'ALLOCATED'
       WHERE (SELECT count(*) FROM lapsed) = (SELECT count(*) FROM expired)
         AND t.campaign_id = ${c} AND t.id = ANY(ARRAY(SELECT id FROM chosen))
         AND t.status = CASE WHEN t.id = ANY(ARRAY(SELECT ticket_id FROM expired))
                             THEN 'HELD'::ticket_status ELSE 'AVAILABLE'::ticket_status END
      RETURNING t.campaign_id, t.id, t.code
    ),
    allocated AS (
      INSERT INTO allocations (campaign_id, ticket_id, partner_id, holder, metadata, idempotency_key,
                               request_hash, status, sequence, allocated_at)
      SELECT k.campaign_id, k.id, p.partner_id, p.holder, p.metadata, p.idempotency_key, p.request_hash, 'ACTIVE',
             nextval('allocation_sequence'), clock_timestamp()
        FROM taken k JOIN chosen ch ON ch.id = k.id JOIN passed p ON p.slot = ch.slot
       ORDER BY p.ord
      RETURNING ${Prisma.raw(ALLOCATION_COLUMNS)}
    )
    SELECT g.ord, g.verdict, a.*, k.code AS ticket_code,
           cp.name AS campaign_name, cp.status AS campaign_status, cp.opens_at AS campaign_opens_at,
           cp.closes_at AS campaign_closes_at, cp.per_holder_limit AS campaign_per_holder_limit,
           cp.created_at AS campaign_created_at
      FROM gates g
      LEFT JOIN passed p ON p.ord = g.ord
      LEFT JOIN chosen ch ON ch.slot = p.slot
      LEFT JOIN allocated a ON a.ticket_id = ch.id
      LEFT JOIN taken k ON k.id = a.ticket_id
      LEFT JOIN campaigns cp ON a.id IS NOT NULL AND cp.id = ${c}
     ORDER BY g.ord`;
}

/** One outcome per request, in request order. */
export function readBatch(rows: Row[], requests: BatchRequest[]): BatchOutcome[] {
  return requests.map((request, i) => {
    const row = rows[i];
    if (!row || Number(row.ord) !== i + 1) throw new Error('group claim statement returned rows out of order');
    if (row.id !== null) {
      const allocation = toAllocation(row as AllocationRow);
      return {
        kind: 'CLAIMED',
        allocation,
        ticket: { campaignId: allocation.campaignId, id: allocation.ticketId, code: row.ticket_code!, status: 'ALLOCATED' },
        campaign: {
          id: allocation.campaignId,
          name: row.campaign_name!,
          status: row.campaign_status!,
          opensAt: row.campaign_opens_at,
          closesAt: row.campaign_closes_at,
          perHolderLimit: row.campaign_per_holder_limit,
          createdAt: row.campaign_created_at!,
        },
      };
    }
    switch (row.verdict) {
      case 'CAMPAIGN_NOT_FOUND':
      case 'CAMPAIGN_NOT_OPEN':
        return { kind: 'FINAL', verdict: row.verdict };
      case 'HOLDER_LIMIT_REACHED':
        return request.holderRank === 1 ? { kind: 'FINAL', verdict: row.verdict } : { kind: 'UNDECIDED' };
      case 'PARTNER_QUOTA_REACHED':
        return request.partnerRank === 1 ? { kind: 'FINAL', verdict: row.verdict } : { kind: 'UNDECIDED' };
      default:
        return { kind: 'UNDECIDED' }; // OK without a ticket, or PRIOR
    }
  });
}
