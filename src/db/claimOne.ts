// THE claim, first look, for a claimTicket request that arrives alone: one call of the function
// tessera_claim_one (prisma/functions/tessera_claim_one.sql: the gate, the pick from a random start,
// the allocation, its counters and event), alone in its transaction (claimTransaction.ts). Its
// statements each name the campaign, so on Citus the call runs whole on the node holding the
// campaign (src/db/distribute.ts). Nothing found means the row comes back OK without an allocation:
// the single claim's second look (claimTicket.ts) decides then.
//
// On Citus, requests of one campaign that wait together go as one call of
// tessera_claim_campaign_group (claimCampaignGroup below): the same first look for each, in one
// transaction on the campaign's node. (On one PostgreSQL a group of any campaigns is one statement:
// claimGroup.ts.)
import { groupInTransaction, inTransaction, type ClaimClient, type KeyCheck } from './claimTransaction';
import { claimedFrom, type FirstLook, type GroupRequest, type GroupRow } from './claimGroup';

export type OneRow = GroupRow & { prior_campaign_id: string | null; prior_allocation_id: string | null };

/** Calls tessera_claim_one in its transaction (claimTransaction.ts; `keys`: see KeyCheck there). */
export async function claimOne(prisma: ClaimClient, r: GroupRequest, keys: KeyCheck = 'in-gate'): Promise<OneRow> {
  const rows = await inTransaction<OneRow>(
    prisma,
    {
      name: 'claimOne',
      text: 'SELECT * FROM tessera_claim_one($1::uuid, $2::uuid, $3::text, $4::jsonb, $5::text, $6::text, $7::integer)',
      values: [r.campaignId, r.partnerId, r.holder, r.metadata === null ? null : JSON.stringify(r.metadata), r.idempotencyKey, r.requestHash, r.start],
    },
    { keys, campaignId: r.campaignId, partnerId: r.partnerId, idempotencyKey: r.idempotencyKey },
  );
  if (rows.length !== 1) throw new Error(`the claim statement returned ${rows.length} rows`);
  return rows[0]!;
}

/** Calls tessera_claim_campaign_group for requests of one campaign, in their transaction (claimTransaction.ts); one row per request, in order. */
export async function claimCampaignGroup(prisma: ClaimClient, requests: readonly GroupRequest[], keys: KeyCheck): Promise<OneRow[]> {
  const campaignId = requests[0]!.campaignId;
  if (requests.some((r) => r.campaignId !== campaignId)) throw new Error('a campaign group holds requests of one campaign');
  const rows = await groupInTransaction<OneRow, GroupRequest>(
    prisma,
    campaignId,
    requests,
    (some) => ({
      name: 'claimCampaignGroup',
      text: 'SELECT * FROM tessera_claim_campaign_group($1::uuid, $2::uuid[], $3::text[], $4::jsonb[], $5::text[], $6::text[], $7::integer)',
      values: [
        campaignId,
        some.map((r) => r.partnerId),
        some.map((r) => r.holder),
        some.map((r) => (r.metadata === null ? null : JSON.stringify(r.metadata))),
        some.map((r) => r.idempotencyKey),
        some.map((r) => r.requestHash),
        requests[0]!.start,
      ],
    }),
    keys,
  );
  if (rows.length !== requests.length || rows.some((row, i) => Number(row.ord) !== i + 1)) throw new Error('the campaign group claim returned rows out of order');
  return rows;
}

/** What the first look decided for a request that went alone (or in a campaign group: each request is judged as if alone, after the earlier ones). */
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
