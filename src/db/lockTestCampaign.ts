// The first step of a rehearsal control (resetTestCampaign, advanceTestClock), in the control's own
// transaction: the campaign's gate taken exclusive, its row locked, and — for a partner's test key —
// whether anyone else has rows in it.
//
// Why in that order: claims, holds, waitlist joins and ballot entries all pass the gate shared
// (tessera_claim_gate, tessera_join_waitlist, tessera_enter_ballot), so once this transaction holds
// it exclusive none of them can commit until it ends, and the next statement (READ COMMITTED: a
// fresh snapshot) sees every one that committed before. The check and the reset or clock move that
// follows it therefore see the same rows: another partner's claim cannot slip in between. Every
// statement names the campaign: on Citus each runs on the node holding its shards.
//
// What counts as someone else's: any allocation (live, held or ended — a reset deletes them all, a
// clock move expires holds), waitlist entry or ballot entry whose partner is not the caller; an
// operator's own claims (made under the operator's partner id) count too. Allotments and quotas do
// not: they are the operator's set-up, which a reset sets aside anew.
import type { PoolClient } from 'pg';

export type TestCampaignLock =
  | { verdict: 'OK'; testClockSeconds: number }
  | { verdict: 'NOT_FOUND' }
  /** The caller is a partner and another partner (or an operator) has rows in the campaign. */
  | { verdict: 'SHARED' };

/** The tables whose rows belong to one partner each and are a rehearsal's activity. */
const PARTNER_ROWS = ['allocations', 'waitlist_entries', 'ballot_entries'] as const;

/**
 * Locks the test campaign for a rehearsal control; `partnerId` is the calling partner's (null for an
 * operator, who may act whoever's rows are there). Must run inside the caller's transaction.
 */
export async function lockTestCampaign(client: PoolClient, campaignId: string, partnerId: string | null): Promise<TestCampaignLock> {
  // The gate, as campaignGate.ts takes it: on the server Tessera talks to, then through the function
  // Citus delegates to the campaign's node.
  await client.query("SELECT tessera_lock('campaign', $1::uuid::text)", [campaignId]);
  await client.query('SELECT tessera_lock_campaign_gate($1::uuid)', [campaignId]);
  const { rows } = await client.query<{ seconds: number }>('SELECT test_clock_seconds::int AS seconds FROM campaigns WHERE id = $1::uuid AND test FOR UPDATE', [campaignId]);
  if (rows.length === 0) return { verdict: 'NOT_FOUND' };
  if (partnerId !== null) {
    for (const table of PARTNER_ROWS) {
      const { rows: found } = await client.query(`SELECT 1 FROM ${table} WHERE campaign_id = $1::uuid AND partner_id <> $2::uuid LIMIT 1`, [campaignId, partnerId]);
      if (found.length > 0) return { verdict: 'SHARED' };
    }
  }
  return { verdict: 'OK', testClockSeconds: rows[0]!.seconds };
}
