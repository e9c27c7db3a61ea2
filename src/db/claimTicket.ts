// THE claim: one statement that passes the campaign gate, takes one AVAILABLE ticket, marks it
// ALLOCATED and writes its allocation — all or nothing, in one round trip (PERFORMANCE.md item 4:
// one CTE beats BEGIN/2 statements/COMMIT by 20-40%). The caller (services/allocation.ts) owns the
// transaction — `prisma.$transaction([claimTicket(...)])` — and decides what to do with each outcome.
//
// What it locks, in this order (a fixed order, CORRECTNESS.md 5):
//   1. tessera_claim_gate() (migration 20261129000000_core): advisory locks only — the campaign
//      gate (shared), the idempotency key, the holder — then reads campaign and counts with a fresh
//      snapshot. The pick below names the gate's verdict in its WHERE, so no ticket row is ever
//      locked before the gate has passed.
//   2. one ticket row, FOR UPDATE SKIP LOCKED: concurrent claimers never wait on each other's rows.
//
// Why the pick starts at a random pick_order (the migration gives every ticket a random one):
//   - every claimer starting at the front of the AVAILABLE index would skip over the same locked
//     rows and, as the pool fills, walk the same run of dead index entries left by earlier claims
//     until a VACUUM (PERFORMANCE.md pitfall 1: 3,000 → 372 claims/s at 99% fill). From a random
//     point the run of dead entries before a live one is ~1/(1-fill) entries, not fill×N;
//   - pick_order is in no other index, so the planner has no alternative to the partial index
//     (pitfall 2) whatever the statistics say.
//   The second COALESCE branch wraps around below the start; it runs only when the first is empty.
//
// Why `AND t.status = 'AVAILABLE'` is repeated on the UPDATE: under READ COMMITTED an UPDATE that
// waited re-checks only its own WHERE against the newest row version (CORRECTNESS.md 1).
//
// `wait` mode is the second look that keeps SOLD_OUT honest (CORRECTNESS.md 3): when SKIP LOCKED
// found nothing while tickets still look AVAILABLE, those are locked by claims in flight that may
// roll back. The same statement with a plain FOR UPDATE waits for each of them and takes one
// that comes back; empty then means sold out. It never waits while holding another ticket.
import { Prisma } from '../generated/prisma/client';
import type { Db } from './client';
import type { JsonValue } from './json';
import { ALLOCATION_COLUMNS, toAllocation, type AllocationRow } from './allocationRow';
import type { AllocationModel, CampaignModel, CampaignStatus, TicketModel } from '../models';

export type ClaimVerdict = 'OK' | 'PRIOR' | 'CAMPAIGN_NOT_FOUND' | 'CAMPAIGN_NOT_OPEN' | 'HOLDER_LIMIT_REACHED';

export interface ClaimTicketParams {
  campaignId: string;
  partnerId: string;
  holder: string;
  metadata: JsonValue | null;
  idempotencyKey: string | null;
  requestHash: string | null;
  /** Where the pick starts in pick_order (0 .. 2^31-1); random unless waiting. */
  start: number;
  /** Plain FOR UPDATE instead of SKIP LOCKED: wait for in-flight claims (see above). */
  wait: boolean;
}

/** The gate's verdict, and the new allocation's columns (all null when nothing was allocated). */
type ClaimedRow = Nullable<AllocationRow> & {
  verdict: ClaimVerdict;
  prior_campaign_id: string | null;
  prior_allocation_id: string | null;
  ticket_code: string | null;
  /** The campaign's row, so the response's `campaign { … }` costs no second query. */
  campaign_name: string | null;
  campaign_status: CampaignStatus | null;
  campaign_opens_at: Date | null;
  campaign_closes_at: Date | null;
  campaign_per_holder_limit: number | null;
  campaign_created_at: Date | null;
  /** Nothing allocated but tickets still look AVAILABLE: they are locked by claims in flight. */
  contended: boolean | null;
};
type Nullable<T> = { [K in keyof T]: T[K] | null };

export type ClaimOutcome =
  | { kind: 'CLAIMED'; allocation: AllocationModel; ticket: TicketModel; campaign: CampaignModel }
  | { kind: 'PRIOR'; campaignId: string; allocationId: string }
  | { kind: 'CONTENDED' }
  | { kind: 'SOLD_OUT' }
  | { kind: 'CAMPAIGN_NOT_FOUND' | 'CAMPAIGN_NOT_OPEN' | 'HOLDER_LIMIT_REACHED' };

/** The statement, not yet sent: run it with `prisma.$transaction([...])`, read it with readClaim. */
export function claimTicket(db: Db, p: ClaimTicketParams): ClaimStatement {
  return db.$queryRaw<ClaimedRow[]>(claimSql(p));
}

/** The SQL text and parameters (exported for test/plan.test.ts, which EXPLAINs it). */
export function claimSql(p: ClaimTicketParams): Prisma.Sql {
  return p.wait ? claimWaiting(p) : claimSkipLocked(p);
}
export type ClaimStatement = Prisma.PrismaPromise<ClaimedRow[]>;

export function readClaim(rows: ClaimedRow[], campaignId: string): ClaimOutcome {
  const row = rows[0];
  if (!row) throw new Error('claim statement returned no row');
  switch (row.verdict) {
    case 'OK':
      if (row.id !== null) {
        const allocation = toAllocation(row as AllocationRow);
        const ticket: TicketModel = { campaignId, id: allocation.ticketId, code: row.ticket_code!, status: 'ALLOCATED' };
        const campaign: CampaignModel = {
          id: campaignId,
          name: row.campaign_name!,
          status: row.campaign_status!,
          opensAt: row.campaign_opens_at,
          closesAt: row.campaign_closes_at,
          perHolderLimit: row.campaign_per_holder_limit,
          createdAt: row.campaign_created_at!,
        };
        return { kind: 'CLAIMED', allocation, ticket, campaign };
      }
      return row.contended ? { kind: 'CONTENDED' } : { kind: 'SOLD_OUT' };
    case 'PRIOR':
      return { kind: 'PRIOR', campaignId: row.prior_campaign_id!, allocationId: row.prior_allocation_id! };
    default:
      return { kind: row.verdict };
  }
}

// The SKIP LOCKED pick and the waiting pick share everything else in the statement.
function claimSkipLocked(p: ClaimTicketParams): Prisma.Sql {
  const pick = Prisma.sql`COALESCE(
      (SELECT a.id FROM tickets a
        WHERE a.campaign_id = ${p.campaignId}::uuid AND a.status = 'AVAILABLE'
          AND a.pick_order >= ${p.start}::integer
          AND (SELECT verdict FROM gate) = 'OK'
        ORDER BY a.pick_order LIMIT 1
        FOR UPDATE SKIP LOCKED),
      (SELECT b.id FROM tickets b
        WHERE b.campaign_id = ${p.campaignId}::uuid AND b.status = 'AVAILABLE'
          AND b.pick_order < ${p.start}::integer
          AND (SELECT verdict FROM gate) = 'OK'
        ORDER BY b.pick_order LIMIT 1
        FOR UPDATE SKIP LOCKED))`;
  // Runs only when the pick found nothing, i.e. near sold out — where a sequential scan of every
  // campaign's tickets would hurt most. Written as an ordered LIMIT 1 (not EXISTS, whose ORDER BY
  // the planner drops) so the partial index stays the only cheap plan.
  const contended = Prisma.sql`(SELECT x.pick_order FROM tickets x
      WHERE x.campaign_id = ${p.campaignId}::uuid AND x.status = 'AVAILABLE'
      ORDER BY x.pick_order LIMIT 1) IS NOT NULL`;
  return claimStatement(p, pick, contended);
}

function claimWaiting(p: ClaimTicketParams): Prisma.Sql {
  const pick = Prisma.sql`(SELECT a.id FROM tickets a
      WHERE a.campaign_id = ${p.campaignId}::uuid AND a.status = 'AVAILABLE'
        AND (SELECT verdict FROM gate) = 'OK'
      ORDER BY a.pick_order LIMIT 1
      FOR UPDATE)`;
  return claimStatement(p, pick, Prisma.sql`false`);
}

function claimStatement(p: ClaimTicketParams, pick: Prisma.Sql, contended: Prisma.Sql): Prisma.Sql {
  const metadata = p.metadata === null ? null : JSON.stringify(p.metadata);
  return Prisma.sql`
    WITH gate AS MATERIALIZED (
      SELECT verdict, prior_campaign_id, prior_allocation_id
        FROM tessera_claim_gate(${p.campaignId}::uuid, ${p.partnerId}::uuid, ${p.holder}::text,
                                ${p.idempotencyKey}::text, 1)
    ),
    claimed AS (
      UPDATE tickets t
         SET status = 'ALLOCATED'
       WHERE t.campaign_id = ${p.campaignId}::uuid
         AND t.id = ${pick}
         AND t.status = 'AVAILABLE'
      RETURNING t.campaign_id, t.id, t.code
    ),
    allocated AS (
      INSERT INTO allocations (campaign_id, ticket_id, partner_id, holder, metadata,
                               idempotency_key, request_hash, status, sequence, allocated_at)
      -- sequence and allocated_at side by side, so that their orders agree as closely as two
      -- concurrent transactions allow.
      SELECT c.campaign_id, c.id, ${p.partnerId}::uuid, ${p.holder}::text, ${metadata}::jsonb,
             ${p.idempotencyKey}::text, ${p.requestHash}::text, 'ACTIVE',
             nextval('allocation_sequence'), clock_timestamp()
        FROM claimed c
      RETURNING ${Prisma.raw(ALLOCATION_COLUMNS)}
    )
    SELECT g.verdict, g.prior_campaign_id, g.prior_allocation_id, a.*, c.code AS ticket_code,
           cp.name AS campaign_name, cp.status AS campaign_status, cp.opens_at AS campaign_opens_at,
           cp.closes_at AS campaign_closes_at, cp.per_holder_limit AS campaign_per_holder_limit,
           cp.created_at AS campaign_created_at,
           CASE WHEN g.verdict = 'OK' AND a.id IS NULL THEN ${contended} END AS contended
      FROM gate g
      LEFT JOIN allocated a ON true
      LEFT JOIN claimed c ON true
      LEFT JOIN campaigns cp ON a.id IS NOT NULL AND cp.id = ${p.campaignId}::uuid`;
}
