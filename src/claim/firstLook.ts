// The first look of claimTicket requests: the gate, one AVAILABLE ticket, its allocation — the
// claim almost every request is answered by. A request that goes alone is one call of
// tessera_claim_one; requests that wait together (batcher.ts) are one call for the group,
// tessera_claim_group, or tessera_claim_campaign_group where the dialect groups per campaign (Citus:
// the call runs whole on the campaign's node). Either call runs alone in its transaction
// (transaction.ts), and answers each request as if it were alone after the group's earlier ones.
//
// What the first look cannot decide — the gate passed but no AVAILABLE ticket was free, or the
// partner draws on an allotment — comes back UNDECIDED, and the second look (secondLook.ts) answers
// it.
import type { AllocationModel, CampaignModel, TicketModel } from '../models';
import { campaignOf, type CampaignColumns } from '../db/campaignColumns';
import type { JsonValue } from '../db/json';
import type { Dialect } from '../db/dialect';
import { groupInTransaction, inTransaction, type ClaimClient } from './transaction';

/** What every claim asks for, whatever else it takes (the second look's requests too). */
export interface ClaimRequest {
  campaignId: string;
  partnerId: string;
  holder: string;
  metadata: JsonValue | null;
  idempotencyKey: string | null;
  /** The request's fingerprint, kept with a keyed allocation: a replay must carry the same. */
  requestHash: string | null;
}

/** A first-look request, with where its pick starts in the campaign's pick order (one start per campaign in a group). */
export interface FirstLookRequest extends ClaimRequest {
  start: number;
}

/** What the first look decided for one request. */
export type FirstLook =
  | { kind: 'CLAIMED'; allocation: AllocationModel; ticket: TicketModel; campaign: CampaignModel }
  | { kind: 'FINAL'; verdict: 'CAMPAIGN_NOT_FOUND' | 'CAMPAIGN_NOT_OPEN' | 'HOLDER_LIMIT_REACHED' | 'PARTNER_QUOTA_REACHED' }
  /** This partner's idempotency key already has its allocation (a replay). */
  | { kind: 'PRIOR'; campaignId: string; allocationId: string }
  /** Passed the gate without a ticket: the second look answers it. */
  | { kind: 'UNDECIDED' };

/** A row of tessera_claim_one (and of the group functions, one per request, `ord` from 1). */
type FirstLookRow = CampaignColumns & {
  ord: number | string;
  verdict: string;
  prior_campaign_id: string | null;
  prior_allocation_id: string | null;
  id: string | null;
  sequence: string | null;
  allocated_at: Date | null;
  ticket_id: string | null;
  ticket_code: string | null;
};

const json = (metadata: JsonValue | null) => (metadata === null ? null : JSON.stringify(metadata));

/** Whether the gate looks for a key's earlier claim in all the partner's campaigns (else the coordinator did, first). */
export const keyEverywhere = (dialect: Pick<Dialect, 'keyCheck'>): boolean => dialect.keyCheck === 'in-gate';

/** One request alone: tessera_claim_one in its transaction. */
export async function firstLookAlone(prisma: ClaimClient, dialect: Dialect, r: FirstLookRequest): Promise<FirstLook> {
  const rows = await inTransaction<FirstLookRow>(
    prisma,
    {
      name: 'claimOne',
      text: 'SELECT * FROM tessera_claim_one($1::uuid, $2::uuid, $3::text, $4::jsonb, $5::text, $6::text, $7::integer, $8::boolean)',
      values: [r.campaignId, r.partnerId, r.holder, json(r.metadata), r.idempotencyKey, r.requestHash, r.start, keyEverywhere(dialect)],
    },
    { keys: dialect.keyCheck, campaignId: r.campaignId, partnerId: r.partnerId, idempotencyKey: r.idempotencyKey },
  );
  if (rows.length !== 1) throw new Error(`the first look returned ${rows.length} rows`);
  return readRow(rows[0]!, r);
}

/**
 * Requests that go together: one call for all of them (of one campaign where the dialect groups
 * per campaign), in their transaction; one answer per request, in order.
 */
export async function firstLookTogether(prisma: ClaimClient, dialect: Dialect, requests: readonly FirstLookRequest[]): Promise<FirstLook[]> {
  const campaignId = requests[0]!.campaignId;
  let rows: FirstLookRow[];
  if (dialect.claimGroups === 'campaign') {
    if (requests.some((r) => r.campaignId !== campaignId)) throw new Error('a campaign group holds requests of one campaign');
    rows = await groupInTransaction<FirstLookRow, FirstLookRequest>(
      prisma,
      campaignId,
      requests,
      (some) => ({
        name: 'claimCampaignGroup',
        text: 'SELECT * FROM tessera_claim_campaign_group($1::uuid, $2::uuid[], $3::text[], $4::jsonb[], $5::text[], $6::text[], $7::integer, $8::boolean)',
        values: [
          campaignId,
          some.map((r) => r.partnerId),
          some.map((r) => r.holder),
          some.map((r) => json(r.metadata)),
          some.map((r) => r.idempotencyKey),
          some.map((r) => r.requestHash),
          requests[0]!.start,
          keyEverywhere(dialect),
        ],
      }),
      dialect.keyCheck,
    );
  } else {
    rows = await inTransaction<FirstLookRow>(prisma, {
      name: 'claimGroup',
      text: 'SELECT * FROM tessera_claim_group($1::uuid[], $2::uuid[], $3::text[], $4::jsonb[], $5::text[], $6::text[], $7::integer[], $8::boolean)',
      values: [
        requests.map((r) => r.campaignId),
        requests.map((r) => r.partnerId),
        requests.map((r) => r.holder),
        requests.map((r) => json(r.metadata)),
        requests.map((r) => r.idempotencyKey),
        requests.map((r) => r.requestHash),
        requests.map((r) => r.start),
        keyEverywhere(dialect),
      ],
    });
  }
  if (rows.length !== requests.length || rows.some((row, i) => Number(row.ord) !== i + 1)) throw new Error('the group claim returned rows out of order');
  return rows.map((row, i) => readRow(row, requests[i]!));
}

/** One request's answer from its row. */
function readRow(row: FirstLookRow, request: FirstLookRequest): FirstLook {
  if (row.id !== null) return claimed(row, request);
  switch (row.verdict) {
    case 'PRIOR':
      return { kind: 'PRIOR', campaignId: row.prior_campaign_id!, allocationId: row.prior_allocation_id! };
    case 'CAMPAIGN_NOT_FOUND':
    case 'CAMPAIGN_NOT_OPEN':
    case 'HOLDER_LIMIT_REACHED':
    case 'PARTNER_QUOTA_REACHED':
      return { kind: 'FINAL', verdict: row.verdict };
    default:
      return { kind: 'UNDECIDED' };
  }
}

/** The allocation, ticket and campaign of a row that claimed one. */
function claimed(row: FirstLookRow, request: FirstLookRequest): FirstLook {
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
