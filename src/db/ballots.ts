// Ballot drops: entries, the draw, and the pass-on after it. The rules live in the
// database functions, one per step, each with its locks in its header:
//
//   enter      tessera_enter_ballot: one entry per partner and holder, while open and before
//              entriesCloseAt and the draw.
//   withdraw   tessera_withdraw_ballot_entry: ENTERED -> WITHDRAWN, before the draw.
//   draw       tessera_draw_ballot: ranks every ENTERED entry by sha256("<seed>:<id>"), walks the
//              ranking (tessera_ballot_walk) and writes the winners' HELD allocations, once.
//   pass-on    tessera_pass_on_ballot: tickets no winner holds any more go to LOST entries in rank
//              order (the sweeper, every interval).
//   settle     tessera_settle_ballot_entry (a trigger): a winner's hold that lapses or is released
//              makes the entry LAPSED.
import type { Db } from './client';
import type { PrismaClient } from '../generated/prisma/client';
import type { JsonValue } from './json';
import type { BallotEntryModel, BallotEntryStatus, BallotModel } from '../models';

export type EnterVerdict =
  | 'OK'
  | 'PRIOR'
  | 'ALREADY_ENTERED'
  | 'CAMPAIGN_NOT_FOUND'
  | 'CAMPAIGN_NOT_OPEN'
  | 'ENTRIES_CLOSED'
  | 'INVALID_INPUT';

export async function enterBallot(
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
): Promise<{ verdict: EnterVerdict; entryId: string | null; priorCampaignId: string | null; priorRequestHash: string | null }> {
  const [row] = await db.$queryRaw<{ verdict: EnterVerdict; entry_id: string | null; prior_campaign_id: string | null; prior_request_hash: string | null }[]>`
    SELECT verdict, entry_id, prior_campaign_id, prior_request_hash
      FROM tessera_enter_ballot(${j.campaignId}::uuid, ${j.partnerId}::uuid, ${j.holder}::text, ${j.quantity}::integer,
                                ${j.metadata === null ? null : JSON.stringify(j.metadata)}::jsonb, ${j.idempotencyKey}::text, ${j.requestHash}::text)`;
  return { verdict: row!.verdict, entryId: row!.entry_id, priorCampaignId: row!.prior_campaign_id, priorRequestHash: row!.prior_request_hash };
}

export type WithdrawVerdict = 'OK' | 'ENTRY_NOT_FOUND' | 'ENTRIES_CLOSED';

/** Withdraws the entry (`partnerId` null: the admin). */
export async function withdrawBallotEntry(db: Db, entryId: string, partnerId: string | null): Promise<{ verdict: WithdrawVerdict; campaignId: string | null }> {
  const [row] = await db.$queryRaw<{ verdict: WithdrawVerdict; campaign_id: string | null }[]>`
    SELECT verdict, campaign_id FROM tessera_withdraw_ballot_entry(${entryId}::uuid, ${partnerId}::uuid)`;
  return { verdict: row!.verdict, campaignId: row!.campaign_id };
}

export type DrawVerdict = 'OK' | 'DRAWN' | 'CAMPAIGN_NOT_FOUND' | 'NOT_A_BALLOT' | 'CAMPAIGN_NOT_OPEN' | 'SEED_MISMATCH';

/**
 * Draws the campaign's ballot with its (unsealed) seed, in one transaction with its own time budget:
 * a million entries take seconds, more than the server's statement timeout allows a claim.
 */
export async function drawBallot(db: PrismaClient, campaignId: string, seed: string, timeoutMs: number): Promise<DrawVerdict> {
  const [, , [row]] = await db.$transaction(
    [
      db.$executeRaw`SELECT set_config('statement_timeout', ${String(timeoutMs)}, true)`,
      // The ranking's sort of a million entries stays in memory.
      db.$executeRaw`SELECT set_config('work_mem', '256MB', true)`,
      db.$queryRaw<{ verdict: DrawVerdict }[]>`SELECT tessera_draw_ballot(${campaignId}::uuid, ${seed}::text) AS verdict`,
    ],
    { timeout: timeoutMs },
  );
  return row!.verdict;
}

/** The sweeper's pass: every drawn ballot's free tickets to its LOST entries; returns how many entries won. */
export async function passOnBallots(db: Db): Promise<number> {
  const [row] = await db.$queryRaw<{ n: number }[]>`SELECT tessera_pass_on_ballots() AS n`;
  return row?.n ?? 0;
}

/** One campaign's pass-on now (tests, and whoever must not wait for the sweeper). */
export async function passOnBallot(db: Db, campaignId: string): Promise<number> {
  const [row] = await db.$queryRaw<{ n: number }[]>`SELECT tessera_pass_on_ballot(${campaignId}::uuid) AS n`;
  return row?.n ?? 0;
}

interface BallotRow {
  campaign_id: string;
  seed_commitment: string;
  sealed_seed: string;
  seed: string | null;
  entries_digest: string | null;
  entry_count: number | null;
  live_entries: bigint;
  tickets: number | null;
  winners: number | null;
  partner_limits: BallotModel['partnerLimits'];
  drawn_at: Date | null;
}

/** The ballots of these campaigns (none for a campaign not opened, or not a ballot), with the sealed seed. */
export async function findBallots(db: Db, campaignIds: readonly string[]): Promise<Map<string, BallotModel & { sealedSeed: string }>> {
  const rows = await db.$queryRaw<BallotRow[]>`
    SELECT b.campaign_id, b.seed_commitment, b.sealed_seed, b.seed, b.entries_digest, b.entry_count, b.tickets, b.winners,
           b.partner_limits, b.drawn_at,
           CASE WHEN b.drawn_at IS NULL THEN
             (SELECT count(*) FROM ballot_entries e WHERE e.campaign_id = b.campaign_id AND e.status = 'ENTERED')
           ELSE 0 END AS live_entries
      FROM ballots b WHERE b.campaign_id = ANY(${campaignIds}::uuid[])`;
  return new Map(
    rows.map((r) => [
      r.campaign_id,
      {
        campaignId: r.campaign_id,
        seedCommitment: r.seed_commitment,
        sealedSeed: r.sealed_seed,
        seed: r.seed,
        entriesDigest: r.entries_digest,
        entryCount: r.drawn_at ? (r.entry_count ?? 0) : Number(r.live_entries),
        winners: r.winners ?? 0,
        tickets: r.tickets,
        partnerLimits: r.partner_limits,
        drawnAt: r.drawn_at,
      },
    ]),
  );
}

interface EntryRow {
  id: string;
  campaign_id: string;
  partner_id: string;
  holder: string;
  quantity: number;
  status: BallotEntryStatus;
  seq: bigint;
  rank: number | null;
  won_in_draw: boolean | null;
  created_at: Date;
}

const toEntry = (r: EntryRow): BallotEntryModel => ({
  id: r.id,
  campaignId: r.campaign_id,
  partnerId: r.partner_id,
  holder: r.holder,
  quantity: r.quantity,
  status: r.status,
  seq: Number(r.seq),
  rank: r.rank,
  wonInDraw: r.won_in_draw,
  createdAt: r.created_at,
});

export async function findBallotEntriesByIds(db: Db, ids: readonly string[]): Promise<BallotEntryModel[]> {
  const rows = await db.$queryRaw<EntryRow[]>`
    SELECT id, campaign_id, partner_id, holder, quantity, status, seq, rank, won_in_draw, created_at
      FROM ballot_entries WHERE id = ANY(${ids}::uuid[])`;
  return rows.map(toEntry);
}

/**
 * Up to `limit + 1` of a campaign's entries (`partnerId` restricts them to one partner's): before
 * the draw in entry order after `after` (a seq); after it in rank order after `after` (a rank),
 * through the ranking (ballot_ranks) — entries withdrawn before the draw are not in it.
 */
export async function findBallotEntryPage(
  db: Db,
  q: { campaignId: string; partnerId: string | null; byRank: boolean; after: number | null; limit: number },
): Promise<BallotEntryModel[]> {
  const after = q.after ?? 0;
  const rows = q.byRank
    ? await db.$queryRaw<EntryRow[]>`
        SELECT e.id, e.campaign_id, e.partner_id, e.holder, e.quantity, e.status, e.seq, e.rank, e.won_in_draw, e.created_at
          FROM ballot_ranks r JOIN ballot_entries e ON e.campaign_id = r.campaign_id AND e.id = r.entry_id
         WHERE r.campaign_id = ${q.campaignId}::uuid AND r.rank > ${after}::integer
           AND (${q.partnerId}::uuid IS NULL OR e.partner_id = ${q.partnerId}::uuid)
         ORDER BY r.rank
         LIMIT ${q.limit + 1}::integer`
    : await db.$queryRaw<EntryRow[]>`
        SELECT id, campaign_id, partner_id, holder, quantity, status, seq, rank, won_in_draw, created_at
          FROM ballot_entries
         WHERE campaign_id = ${q.campaignId}::uuid AND seq > ${after}::bigint
           AND (${q.partnerId}::uuid IS NULL OR partner_id = ${q.partnerId}::uuid)
         ORDER BY seq
         LIMIT ${q.limit + 1}::integer`;
  return rows.map(toEntry);
}

/** How many entries the pages walk over: the drawn ones after the draw, every one before. */
export async function countBallotEntries(db: Db, campaignId: string, partnerId: string | null, drawn: boolean): Promise<number> {
  const [row] = drawn
    ? await db.$queryRaw<{ n: bigint }[]>`
        SELECT count(*) AS n FROM ballot_ranks r JOIN ballot_entries e ON e.campaign_id = r.campaign_id AND e.id = r.entry_id
         WHERE r.campaign_id = ${campaignId}::uuid AND (${partnerId}::uuid IS NULL OR e.partner_id = ${partnerId}::uuid)`
    : await db.$queryRaw<{ n: bigint }[]>`
        SELECT count(*) AS n FROM ballot_entries
         WHERE campaign_id = ${campaignId}::uuid AND (${partnerId}::uuid IS NULL OR partner_id = ${partnerId}::uuid)`;
  return Number(row?.n ?? 0);
}

/** The allocations each entry won, in sequence order (any status they have reached since). */
export async function findWonAllocationIds(db: Db, entries: readonly { campaignId: string; id: string }[]): Promise<Map<string, string[]>> {
  const rows = await db.$queryRaw<{ entry_id: string; id: string }[]>`
    SELECT a.ballot_entry_id AS entry_id, a.id FROM allocations a
     WHERE a.campaign_id = ANY(${[...new Set(entries.map((e) => e.campaignId))]}::uuid[])
       AND a.ballot_entry_id = ANY(${entries.map((e) => e.id)}::uuid[])
     ORDER BY a.sequence`;
  const won = new Map<string, string[]>();
  for (const r of rows) won.set(r.entry_id, [...(won.get(r.entry_id) ?? []), r.id]);
  return won;
}
