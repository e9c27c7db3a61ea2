// advanceTestClock: a test campaign's clock moved forward by `seconds`, so that a partner
// rehearsing sees a hold expire, an allotment lapse, a waitlist offer run out or the window open in
// a second rather than in ten minutes.
//
// The clock is moved by moving the campaign's deadlines back by as much: every statement that asks
// "has it passed?" compares a deadline with the database's clock, and a deadline `seconds` earlier
// passes exactly when the campaign's clock `seconds` later would. So nothing on the claim path
// knows of test clocks (no offset to add, no column to read). What moves: the window (opens_at,
// closes_at, entries_close_at), live holds' expires_at (a waitlist offer and a ballot winner's hold
// are holds), and allotments' lapses_at. What does not: the record of when things happened
// (allocated_at, created_at…) — so a hold's cap, allocatedAt + maxHoldSeconds, stays on the real
// clock. One transaction under the campaign's gate (exclusive: no claim or hold of the campaign runs
// meanwhile), taken by lockTestCampaign.ts, which also refuses a partner's test key when another
// partner has rows in the campaign — checked under that lock, so no one else's hold or entry can
// arrive between the check and the move.
import type { Pool } from 'pg';
import { isTestCampaignId } from '../testMode';
import { lockTestCampaign } from './lockTestCampaign';
import { inPoolTransaction } from './poolTransaction';

// `column` moved back by $2 seconds, in UTC: the same instant as timestamptz arithmetic for a shift
// of seconds, and made of IMMUTABLE functions, which Citus requires of an UPDATE's expressions
// (timestamptz - interval is STABLE: it reads the time zone for shifts of days and months).
const back = (column: string) => `((${column} AT TIME ZONE 'UTC') - make_interval(secs => $2::integer)) AT TIME ZONE 'UTC'`;

/**
 * Moves the test campaign's clock by `seconds`. `partnerId`: the calling partner's (null for an
 * operator); SHARED, with nothing moved, when another partner has rows in it. NOT_FOUND when there
 * is no such test campaign; a live campaign's id is refused before anything runs (testMode.ts: the
 * id says the mode, for good).
 */
export async function advanceTestClock(pool: Pool, campaignId: string, partnerId: string | null, seconds: number): Promise<'OK' | 'NOT_FOUND' | 'SHARED'> {
  if (!isTestCampaignId(campaignId)) return 'NOT_FOUND';
  return inPoolTransaction(pool, async (client) => {
    const lock = await lockTestCampaign(client, campaignId, partnerId);
    if (lock.verdict !== 'OK') return lock.verdict;
    const q = (text: string) => client.query(text, [campaignId, seconds]);
    await q(`
      UPDATE campaigns
         SET opens_at = ${back('opens_at')}, closes_at = ${back('closes_at')}, entries_close_at = ${back('entries_close_at')},
             test_clock_seconds = test_clock_seconds + $2::integer
       WHERE id = $1::uuid AND test`);
    await q(`UPDATE allocations SET expires_at = ${back('expires_at')} WHERE campaign_id = $1::uuid AND status = 'HELD' AND expires_at IS NOT NULL`);
    await q(`UPDATE allotments SET lapses_at = ${back('lapses_at')} WHERE campaign_id = $1::uuid AND lapsed_at IS NULL AND lapses_at IS NOT NULL`);
    return 'OK';
  });
}
