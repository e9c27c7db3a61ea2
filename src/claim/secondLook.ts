// The second look: one call of tessera_claim_tickets, alone in its transaction (transaction.ts). It
// passes the campaign gate, takes `quantity` tickets — the claimer's allotted ones, AVAILABLE ones,
// those of lapsed allotments, or ones whose hold has expired — marks them ALLOCATED (a claim) or
// HELD (a hold) and records their allocations, all or nothing. A claimTicket that the first look
// could not decide, every holdTicket and every claimTickets run it; the service (service.ts) decides
// what to do with each outcome. The function's header says what it locks, in which order, and why
// the pick starts at a random point.
//
// `wait` mode keeps SOLD_OUT honest: when SKIP LOCKED found too few while tickets still look
// AVAILABLE, those are locked by claims in flight that may roll back. The same function with a plain
// FOR UPDATE, from the start of the index (one order for every waiter: no deadlock), waits for each
// and takes what comes back. It never waits on a hold.
import { toAllocation, type AllocationRow } from '../db/allocationRow';
import { campaignOf, type CampaignColumns } from '../db/campaignColumns';
import { keyEverywhere, type ClaimRequest } from './firstLook';
import { inTransaction, type ClaimClient, type KeyCheck } from './transaction';
import type { AllocationModel, CampaignModel, TicketModel } from '../models';
import type { Span } from '../tracing';

export type ClaimVerdict =
  | 'OK'
  | 'PRIOR'
  | 'CAMPAIGN_NOT_FOUND'
  | 'CAMPAIGN_NOT_OPEN'
  | 'HOLDER_LIMIT_REACHED'
  | 'PARTNER_QUOTA_REACHED';

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
 * Runs the statement in its transaction (transaction.ts; `keys`: see KeyCheck there). Its text
 * depends only on the kind and the wait mode; everything else is a parameter.
 */
export function claimTicket(prisma: ClaimClient, p: ClaimTicketParams, keys: KeyCheck = 'in-gate', trace?: Span): Promise<ClaimedRow[]> {
  return inTransaction<ClaimedRow>(prisma, claimStatement(p, keys), { keys, campaignId: p.campaignId, partnerId: p.partnerId, idempotencyKey: p.idempotencyKey }, trace);
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

/** The statement as PostgreSQL receives it: text with $n parameters, and their values (the bench's pgbench script is made from it). */
export function claimStatement(p: ClaimTicketParams, keys: KeyCheck = 'in-gate'): { name: string; text: string; values: unknown[] } {
  return {
    name: p.wait ? 'claimTicket (waiting)' : 'claimTicket',
    text: `SELECT * FROM tessera_claim_tickets($1::uuid, $2::uuid, $3::text, $4::jsonb, $5::text, $6::text, $7::integer, $8::integer, $9::integer, $10::boolean, $11::boolean)`,
    values: [
      p.campaignId,
      p.partnerId,
      p.holder,
      p.metadata === null ? null : JSON.stringify(p.metadata),
      p.idempotencyKey,
      p.requestHash,
      p.quantity,
      p.kind === 'hold' ? p.ttlSeconds : null,
      p.start,
      p.wait,
      keyEverywhere({ keyCheck: keys }),
    ],
  };
}
