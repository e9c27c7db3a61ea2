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
import { pickTickets, takeTickets } from './pickTickets';
import { CAMPAIGN_COLUMNS, campaignOf, type CampaignColumns } from './campaignColumns';
import type { ClaimVerdict } from './claimTicket';
import type { AllocationModel, CampaignModel, TicketModel } from '../models';

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

type Row = { [K in keyof AllocationRow]: AllocationRow[K] | null } & CampaignColumns & {
  ord: bigint;
  verdict: ClaimVerdict;
  ticket_code: string | null;
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
    ${pickTickets({ campaign: c, start, count: Prisma.sql`(SELECT n FROM wanted)`, lock: 'FOR UPDATE SKIP LOCKED', when: Prisma.sql`true` })},
    ${takeTickets({ campaign: c, when: Prisma.sql`true`, status: 'ALLOCATED' })},
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
           ${CAMPAIGN_COLUMNS}
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
        campaign: campaignOf(allocation.campaignId, row),
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
