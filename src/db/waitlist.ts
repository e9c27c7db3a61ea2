// Waitlists: a holder who finds nothing available joins a WAITLIST_FIRST campaign's
// waitlist, and every ticket that comes back is offered to the earliest WAITING entry whose
// quantity the returned tickets cover, as HELD allocations the partner confirms with confirmHold.
//
//   join       tessera_join_waitlist: one live entry per partner and holder, only while nothing is
//              available to the partner; FIFO by seq.
//   offer      tessera_offer_returned: the returned (RETURNED) tickets of a campaign, walked past the
//              WAITING entries in join order, all or nothing per entry; the rest to the pool. Called
//              by whoever returned them, right after (releaseAllocation, leaveWaitlist), and by the
//              sweeper for what it expired or lapsed and for anything a dead caller left behind.
//   settle     tessera_settle_waitlist_entry (a trigger): ACCEPTED once the offer is confirmed,
//              EXPIRED when it lapses, LEFT when declined.
//   leave      tessera_leave_waitlist.
//
// The locks and why each path cannot lose or double a ticket are in those files' headers and in
// docs/CORRECTNESS.md §9.
import type { Db } from './client';
import type { JsonValue } from './json';
import type { WaitlistEntryModel, WaitlistStatus } from '../models';

export type JoinVerdict =
  | 'OK'
  | 'PRIOR'
  | 'ALREADY_ENTERED'
  | 'CAMPAIGN_NOT_FOUND'
  | 'CAMPAIGN_NOT_OPEN'
  | 'INVALID_INPUT'
  | 'HOLDER_LIMIT_REACHED'
  | 'NOT_SOLD_OUT';

export async function joinWaitlist(
  db: Db,
  j: {
    campaignId: string;
    partnerId: string;
    holder: string;
    quantity: number;
    metadata: JsonValue | null;
    idempotencyKey: string | null;
    requestHash: string | null;
  },
): Promise<{ verdict: JoinVerdict; entryId: string | null; priorCampaignId: string | null; priorRequestHash: string | null }> {
  const [row] = await db.$queryRaw<{ verdict: JoinVerdict; entry_id: string | null; prior_campaign_id: string | null; prior_request_hash: string | null }[]>`
    SELECT verdict, entry_id, prior_campaign_id, prior_request_hash
      FROM tessera_join_waitlist(${j.campaignId}::uuid, ${j.partnerId}::uuid, ${j.holder}::text, ${j.quantity}::integer,
                                 ${j.metadata === null ? null : JSON.stringify(j.metadata)}::jsonb, ${j.idempotencyKey}::text, ${j.requestHash}::text)`;
  return { verdict: row!.verdict, entryId: row!.entry_id, priorCampaignId: row!.prior_campaign_id, priorRequestHash: row!.prior_request_hash };
}

export type LeaveVerdict = 'OK' | 'NOT_WAITLISTED' | 'ENTRY_NOT_FOUND';

/** Leaves the entry (`partnerId` null: the admin); an offer's released tickets are offered on at once. */
export async function leaveWaitlist(db: Db, entryId: string, partnerId: string | null): Promise<LeaveVerdict> {
  const [row] = await db.$queryRaw<{ verdict: LeaveVerdict; campaign_id: string | null; released: number | null }[]>`
    SELECT verdict, campaign_id, released FROM tessera_leave_waitlist(${entryId}::uuid, ${partnerId}::uuid)`;
  if (row!.released && row!.campaign_id) await offerReturned(db, row!.campaign_id);
  return row!.verdict;
}

/** Offers the campaign's RETURNED tickets to its waitlist, the rest to the pool; returns how many entries got an offer. */
export async function offerReturned(db: Db, campaignId: string): Promise<number> {
  const [row] = await db.$queryRaw<{ n: number }[]>`SELECT tessera_offer_returned(${campaignId}::uuid) AS n`;
  return row?.n ?? 0;
}

/** The sweeper's pass: every campaign's RETURNED tickets (tessera_offer_all_returned). */
export async function offerAllReturned(db: Db): Promise<number> {
  const [row] = await db.$queryRaw<{ n: number }[]>`SELECT tessera_offer_all_returned() AS n`;
  return row?.n ?? 0;
}

interface EntryRow {
  id: string;
  campaign_id: string;
  partner_id: string;
  holder: string;
  quantity: number;
  status: WaitlistStatus;
  seq: bigint;
  position: bigint | null;
  created_at: Date;
  offered_at: Date | null;
  ended_at: Date | null;
}

const toEntry = (r: EntryRow): WaitlistEntryModel => ({
  id: r.id,
  campaignId: r.campaign_id,
  partnerId: r.partner_id,
  holder: r.holder,
  quantity: r.quantity,
  status: r.status,
  seq: Number(r.seq),
  position: r.position === null ? null : Number(r.position),
  createdAt: r.created_at,
  offeredAt: r.offered_at,
  endedAt: r.ended_at,
});

/** Entries by id, with their position (the 1-based rank among the campaign's WAITING entries). */
export async function findEntriesByIds(db: Db, ids: readonly string[]): Promise<WaitlistEntryModel[]> {
  const rows = await db.$queryRaw<EntryRow[]>`
    SELECT w.id, w.campaign_id, w.partner_id, w.holder, w.quantity, w.status, w.seq, w.created_at, w.offered_at, w.ended_at,
           CASE WHEN w.status = 'WAITING' THEN
             (SELECT count(*) FROM waitlist_entries x WHERE x.campaign_id = w.campaign_id AND x.status = 'WAITING' AND x.seq <= w.seq)
           END AS position
      FROM waitlist_entries w WHERE w.id = ANY(${ids}::uuid[])`;
  return rows.map(toEntry);
}

/**
 * Up to `limit + 1` of a campaign's entries in join order after `afterSeq` (every status, or one;
 * `partnerId` restricts them to one partner's), each WAITING one with its position: the WAITING
 * entries before the page, counted once, plus a running count within it.
 */
export async function findEntryPage(
  db: Db,
  q: { campaignId: string; partnerId: string | null; status: WaitlistStatus | null; afterSeq: number | null; limit: number },
): Promise<WaitlistEntryModel[]> {
  const after = q.afterSeq ?? 0;
  const rows = await db.$queryRaw<EntryRow[]>`
    WITH page AS (
      SELECT w.id, w.campaign_id, w.partner_id, w.holder, w.quantity, w.status, w.seq, w.created_at, w.offered_at, w.ended_at
        FROM waitlist_entries w
       WHERE w.campaign_id = ${q.campaignId}::uuid AND w.seq > ${after}::bigint
         AND (${q.partnerId}::uuid IS NULL OR w.partner_id = ${q.partnerId}::uuid)
         AND (${q.status}::waitlist_status IS NULL OR w.status = ${q.status}::waitlist_status)
       ORDER BY w.seq
       LIMIT ${q.limit + 1}::integer
    )
    SELECT p.*,
           CASE WHEN p.status = 'WAITING' THEN
             (SELECT count(*) FROM waitlist_entries x WHERE x.campaign_id = ${q.campaignId}::uuid AND x.status = 'WAITING' AND x.seq <= ${after}::bigint)
             + (SELECT count(*) FROM waitlist_entries x
                 WHERE x.campaign_id = ${q.campaignId}::uuid AND x.status = 'WAITING' AND x.seq > ${after}::bigint AND x.seq <= p.seq)
           END AS position
      FROM page p ORDER BY p.seq`;
  return rows.map(toEntry);
}

/** How many entries of the campaign (one partner's, or all; of one status, or all) the pages walk over. */
export async function countEntries(db: Db, campaignId: string, partnerId: string | null, status: WaitlistStatus | null): Promise<number> {
  const [row] = await db.$queryRaw<{ n: bigint }[]>`
    SELECT count(*) AS n FROM waitlist_entries
     WHERE campaign_id = ${campaignId}::uuid AND (${partnerId}::uuid IS NULL OR partner_id = ${partnerId}::uuid)
       AND (${status}::waitlist_status IS NULL OR status = ${status}::waitlist_status)`;
  return Number(row?.n ?? 0);
}

/**
 * waitlistLength (WAITING entries) and offers out (OFFERED entries), per campaign (0 and 0 for one
 * without entries). One grouped query by campaign_id: on Citus each shard counts its own campaigns.
 */
export async function waitlistFigures(db: Db, campaignIds: readonly string[]): Promise<Map<string, { waiting: number; offered: number }>> {
  const rows = await db.$queryRaw<{ campaign_id: string; waiting: bigint; offered: bigint }[]>`
    SELECT w.campaign_id, count(*) FILTER (WHERE w.status = 'WAITING') AS waiting, count(*) FILTER (WHERE w.status = 'OFFERED') AS offered
      FROM waitlist_entries w
     WHERE w.campaign_id = ANY(${[...campaignIds]}::uuid[]) AND w.status IN ('WAITING', 'OFFERED')
     GROUP BY w.campaign_id`;
  const figures = new Map(campaignIds.map((id) => [id, { waiting: 0, offered: 0 }]));
  for (const r of rows) figures.set(r.campaign_id, { waiting: Number(r.waiting), offered: Number(r.offered) });
  return figures;
}

/** The allocations offered to each entry, in sequence order (any status they have reached since). */
export async function findOfferAllocationIds(db: Db, entries: readonly { campaignId: string; id: string }[]): Promise<Map<string, string[]>> {
  const rows = await db.$queryRaw<{ entry_id: string; id: string }[]>`
    SELECT a.waitlist_entry_id AS entry_id, a.id FROM allocations a
     WHERE a.campaign_id = ANY(${[...new Set(entries.map((e) => e.campaignId))]}::uuid[])
       AND a.waitlist_entry_id = ANY(${entries.map((e) => e.id)}::uuid[])
     ORDER BY a.sequence`;
  const offers = new Map<string, string[]>();
  for (const r of rows) offers.set(r.entry_id, [...(offers.get(r.entry_id) ?? []), r.id]);
  return offers;
}
