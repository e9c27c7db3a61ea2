// THE claim: one statement that passes the campaign gate, takes `quantity` tickets — AVAILABLE
// ones, or ones whose hold has expired — marks them ALLOCATED (a claim) or HELD (a hold) and writes
// their allocations. All or nothing, in one statement (docs/PERFORMANCE.md item 4: one CTE beats
// BEGIN/2 statements/COMMIT by 20-40%), run alone in a Prisma batch transaction (claimTransaction.ts).
// claimTicket, holdTicket and claimTickets all run it; the caller (services/allocation.ts) decides
// what to do with each outcome.
//
// What it locks, in this order (one fixed order everywhere, docs/CORRECTNESS.md §5):
//   1. tessera_claim_gate() (prisma/functions/tessera_claim_gate.sql): advisory locks — the
//      campaign gate (shared), the idempotency key, the holder — and the partner's quota row; then
//      it reads the campaign and counts with a fresh snapshot. Every pick below names the gate's
//      verdict in its WHERE, so no ticket or hold is locked before the gate has passed.
//   2. AVAILABLE ticket rows, FOR UPDATE SKIP LOCKED: concurrent claimers never wait on each other.
//   3. only if that was not enough: expired holds, FOR UPDATE SKIP LOCKED — an expired hold's ticket
//      is claimable from the instant it expires (no sweeper has to run first), and whoever locks the
//      hold first (a claim, or the sweeper) ends it, exactly once.
//
// Why the pick starts at a random pick_order (tessera_random_pick_order gives every ticket one):
//   - every claimer starting at the front of the AVAILABLE index would skip over the same locked
//     rows and, as the pool fills, walk the same run of dead index entries left by earlier claims
//     until a VACUUM (docs/PERFORMANCE.md pitfall 1: 3,000 → 372 claims/s at 99% fill). From a random
//     point the run of dead entries before a live one is ~1/(1-fill) entries, not fill×N;
//   - pick_order is in no other index, so the planner has no alternative to the partial index
//     (pitfall 2) whatever the statistics say (test/plan.test.ts).
//   The `lower` pick wraps around below the start; it runs only for what `upper` did not find.
//
// Why the ticket's status is re-checked on the UPDATE: under READ COMMITTED an UPDATE that waited
// re-checks only its own WHERE against the newest row version (docs/CORRECTNESS.md §1).
//
// `wait` mode is the second look that keeps SOLD_OUT honest (docs/CORRECTNESS.md §3): when SKIP LOCKED
// found too few while tickets still look AVAILABLE, those are locked by claims in flight that may
// roll back. The same statement with a plain FOR UPDATE, from the start of the index (one order for
// every waiter: no deadlock), waits for each and takes what comes back. It never waits on a hold.
import { Prisma } from '../generated/prisma/client';
import { inTransaction, type ClaimClient } from './claimTransaction';
import type { JsonValue } from './json';
import { ALLOCATION_COLUMNS, toAllocation, type AllocationRow } from './allocationRow';
import { COUNT_ALLOCATED } from './countAllocations';
import { ALLOCATION_EVENTS } from './webhookEvents';
import { pickTickets, releasePolicy, takeTickets } from './pickTickets';
import { CAMPAIGN_COLUMNS, campaignOf, type CampaignColumns } from './campaignColumns';
import type { AllocationModel, CampaignModel, TicketModel } from '../models';

export type ClaimVerdict =
  | 'OK'
  | 'PRIOR'
  | 'CAMPAIGN_NOT_FOUND'
  | 'CAMPAIGN_NOT_OPEN'
  | 'HOLDER_LIMIT_REACHED'
  | 'PARTNER_QUOTA_REACHED';

/** What every claim statement is asked, whatever else it takes (claimOne.ts and claimGroup.ts too). */
export interface ClaimRequest {
  campaignId: string;
  partnerId: string;
  holder: string;
  metadata: JsonValue | null;
  idempotencyKey: string | null;
  requestHash: string | null;
}

export interface ClaimTicketParams extends ClaimRequest {
  /** ALLOCATED/ACTIVE for a claim; HELD with expires_at for a hold. */
  kind: 'claim' | 'hold';
  /** How many tickets, all or nothing. */
  quantity: number;
  /** Holds only: how long the hold lasts. */
  ttlSeconds: number | null;
  /** Where the pick starts in pick_order (0 .. 2^31-1); random unless waiting. */
  start: number;
  /** Plain FOR UPDATE instead of SKIP LOCKED: wait for in-flight claims (see above). */
  wait: boolean;
}

/** The gate's verdict, and per new allocation its columns (one row with nulls when none). */
type ClaimedRow = Nullable<AllocationRow> & CampaignColumns & {
  verdict: ClaimVerdict;
  prior_campaign_id: string | null;
  prior_allocation_id: string | null;
  ticket_code: string | null;
  /** Too few taken, but more looked claimable: they are locked by others in flight. */
  contended: boolean | null;
  /** Too few taken, and the campaign is sold out (tessera_sold_out): nothing can come back. */
  sold_out: boolean | null;
  /** Too few taken, and other partners' live allotments still set tickets aside. */
  allotted_elsewhere: boolean | null;
};
type Nullable<T> = { [K in keyof T]: T[K] | null };

export type ClaimOutcome =
  | { kind: 'CLAIMED'; allocations: AllocationModel[]; tickets: TicketModel[]; campaign: CampaignModel }
  | { kind: 'PRIOR'; campaignId: string; allocationId: string }
  /**
   * Nothing taken. `contended`: ask again (waiting); `allotted`: other partners' allotments hold
   * tickets back (ALL_ALLOTTED); `soldOut`: the campaign is sold out, nothing can come back
   * (SOLD_OUT) — else tickets may come back (ALL_HELD).
   */
  | { kind: 'SHORT'; contended: boolean; soldOut: boolean; allotted: boolean }
  | { kind: 'CAMPAIGN_NOT_FOUND' | 'CAMPAIGN_NOT_OPEN' | 'HOLDER_LIMIT_REACHED' | 'PARTNER_QUOTA_REACHED' };

/**
 * Runs the statement in its transaction (claimTransaction.ts). Its text depends only on the kind and
 * the wait mode; everything else is a parameter.
 */
export function claimTicket(prisma: ClaimClient, p: ClaimTicketParams): Promise<ClaimedRow[]> {
  return inTransaction<ClaimedRow>(prisma, claimStatement(p));
}

export function readClaim(rows: ClaimedRow[], campaignId: string): ClaimOutcome {
  const row = rows[0];
  if (!row) throw new Error('claim statement returned no row');
  switch (row.verdict) {
    case 'OK': {
      if (row.id === null) return { kind: 'SHORT', contended: row.contended === true, soldOut: row.sold_out === true, allotted: row.allotted_elsewhere === true };
      const allocations = rows.map((r) => toAllocation(r as AllocationRow));
      const tickets = rows.map((r, i) => ({
        campaignId,
        id: allocations[i]!.ticketId,
        code: r.ticket_code!,
        status: r.status === 'HELD' ? ('HELD' as const) : ('ALLOCATED' as const),
      }));
      return { kind: 'CLAIMED', allocations, tickets, campaign: campaignOf(campaignId, row) };
    }
    case 'PRIOR':
      return { kind: 'PRIOR', campaignId: row.prior_campaign_id!, allocationId: row.prior_allocation_id! };
    default:
      return { kind: row.verdict };
  }
}

/** The SQL text and parameters (exported for test/plan.test.ts, which EXPLAINs it). */
export function claimSql(p: ClaimTicketParams): Prisma.Sql {
  const metadata = p.metadata === null ? null : JSON.stringify(p.metadata);
  const allocationStatus = Prisma.raw(p.kind === 'hold' ? `'HELD'` : `'ACTIVE'`);
  const expiresAt = p.kind === 'hold' ? Prisma.sql`clock_timestamp() + make_interval(secs => ${p.ttlSeconds}::integer)` : Prisma.sql`NULL`;
  const c = Prisma.sql`${p.campaignId}::uuid`;
  const n = Prisma.sql`${p.quantity}::integer`;
  return Prisma.sql`
    WITH gate AS MATERIALIZED (
      SELECT verdict, prior_campaign_id, prior_allocation_id
        FROM tessera_claim_gate(${c}, ${p.partnerId}::uuid, ${p.holder}::text, ${p.idempotencyKey}::text, ${n}, ${n})
    ),
    ${pickTickets({ campaign: c, partner: Prisma.sql`${p.partnerId}::uuid`, start: p.start, count: n, lock: p.wait ? 'FOR UPDATE' : 'FOR UPDATE SKIP LOCKED', when: Prisma.sql`(SELECT verdict FROM gate) = 'OK'` })},
    complete AS MATERIALIZED (SELECT count(*) = ${n} AS ok FROM chosen),
    ${takeTickets({ campaign: c, when: Prisma.sql`(SELECT ok FROM complete)`, status: p.kind === 'hold' ? 'HELD' : 'ALLOCATED' })},
    allocated AS (
      INSERT INTO allocations (campaign_id, ticket_id, partner_id, holder, metadata, idempotency_key,
                               request_hash, status, sequence, allocated_at, expires_at, request_index, from_allotment)
      -- sequence and allocated_at side by side, so that their orders agree as closely as two
      -- concurrent transactions allow.
      SELECT k.campaign_id, k.id, ${p.partnerId}::uuid, ${p.holder}::text, ${metadata}::jsonb,
             ${p.idempotencyKey}::text, ${p.requestHash}::text, ${allocationStatus},
             tessera_next_sequence(k.campaign_id), clock_timestamp(), ${expiresAt},
             (row_number() OVER (ORDER BY k.id) - 1)::integer, ch.drawn
        FROM taken k JOIN chosen ch ON ch.id = k.id
      RETURNING ${Prisma.raw(ALLOCATION_COLUMNS)}
    ),
    ${Prisma.raw(COUNT_ALLOCATED)},
    ${Prisma.raw(ALLOCATION_EVENTS)}
    SELECT g.verdict, g.prior_campaign_id, g.prior_allocation_id, a.*, k.code AS ticket_code,
           ${CAMPAIGN_COLUMNS},
           -- Only when nothing was taken (lazily: these sub-selects run only in that case).
           CASE WHEN g.verdict = 'OK' AND a.id IS NULL THEN
             ${p.wait ? Prisma.sql`false` : Prisma.sql`(
               (SELECT count(*) FROM (SELECT 1 FROM tickets x
                  WHERE x.campaign_id = ${c} AND x.status = 'AVAILABLE'
                  ORDER BY x.pick_order LIMIT ${n}) s)
             -- this partner's allotted tickets, and those of allotments that have lapsed
             + (SELECT count(*) FROM (SELECT 1 FROM tickets x
                  WHERE x.campaign_id = ${c} AND x.status = 'ALLOTTED'
                    AND (x.allotted_to = ${p.partnerId}::uuid
                         OR x.allotted_to = ANY(ARRAY(SELECT l.partner_id FROM allotments l
                                                       WHERE l.campaign_id = ${c} AND l.lapses_at <= clock_timestamp())))
                    AND (${releasePolicy(c)} <> 'WAITLIST_FIRST'
                         OR x.allotted_to = ANY(ARRAY(SELECT l.partner_id FROM allotments l
                                                       WHERE l.campaign_id = ${c} AND l.partner_id = ${p.partnerId}::uuid
                                                         AND (l.lapses_at IS NULL OR l.lapses_at > clock_timestamp()))))
                  ORDER BY x.pick_order LIMIT ${n}) s)
             + (SELECT count(*) FROM (SELECT 1 FROM allocations y
                  WHERE y.campaign_id = ${c} AND y.status = 'HELD' AND y.expires_at <= clock_timestamp() AND ${releasePolicy(c)} = 'POOL'
                  ORDER BY y.expires_at LIMIT ${n}) s)
             ) >= ${n}`}
           END AS contended,
           -- SOLD_OUT exactly when the campaign is sold out by the one definition the stats, soldOutAt
           -- and CAMPAIGN_SOLD_OUT use (tessera_sold_out): nothing available, allotted or held that
           -- could come back — asked of the ticket counters, O(1). A campaign without tickets is not
           -- sold out (it may be loaded while open) but has nothing to take or to come back either:
           -- SOLD_OUT too.
           CASE WHEN g.verdict = 'OK' AND a.id IS NULL THEN
             ${p.wait ? Prisma.sql`NULL::boolean` : Prisma.sql`(SELECT COALESCE(sum(x.total), 0) = 0
                       OR tessera_sold_out(sum(x.total)::bigint, sum(x.allocated)::bigint, sum(x.held)::bigint, sum(x.void)::bigint, ${releasePolicy(c)}::text)
                  FROM campaign_counters x WHERE x.campaign_id = ${c})`}
           END AS sold_out,
           CASE WHEN g.verdict = 'OK' AND a.id IS NULL THEN
             EXISTS (SELECT 1 FROM tickets x
                      WHERE x.campaign_id = ${c} AND x.status = 'ALLOTTED' AND x.allotted_to <> ${p.partnerId}::uuid
                        AND x.allotted_to = ANY(ARRAY(SELECT l.partner_id FROM allotments l
                                                       WHERE l.campaign_id = ${c} AND (l.lapses_at IS NULL OR l.lapses_at > clock_timestamp()))))
             -- another partner's expired hold drawn from its live allotment goes back to that
             -- allotment (counted as allotted, not held: see tessera_campaign_counts)
             OR (${releasePolicy(c)} <> 'VOID'
                 AND EXISTS (SELECT 1 FROM allocations y
                              WHERE y.campaign_id = ${c} AND y.status = 'HELD' AND y.expires_at <= clock_timestamp()
                                AND y.from_allotment AND y.partner_id <> ${p.partnerId}::uuid
                                AND y.partner_id = ANY(ARRAY(SELECT l.partner_id FROM allotments l
                                                              WHERE l.campaign_id = ${c} AND (l.lapses_at IS NULL OR l.lapses_at > clock_timestamp())))))
           END AS allotted_elsewhere
      FROM gate g
      LEFT JOIN allocated a ON true
      LEFT JOIN taken k ON k.id = a.ticket_id
      LEFT JOIN campaigns cp ON a.id IS NOT NULL AND cp.id = ${c}`;
}

/** The statement as PostgreSQL receives it: text with $n parameters, and their values (the bench's pgbench script is made from it). */
export function claimStatement(p: ClaimTicketParams): { text: string; values: unknown[] } {
  const sql = claimSql(p);
  return { text: sql.text, values: sql.values };
}
