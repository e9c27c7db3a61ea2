// advanceTestClock (issue 31): a test campaign's clock moved forward by `seconds`, so that a partner
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
// clock. Under the campaign's gate, exclusive: no claim or hold of the campaign runs meanwhile.
import { Prisma } from '../generated/prisma/client';
import { isTestCampaignId } from '../testMode';
import { lockCampaignGate, type Batchable } from './campaignGate';

/**
 * Moves the test campaign's clock by `seconds`; false when there is no such test campaign. A live
 * campaign's id is refused before anything runs (testMode.ts: the id says the mode, for good).
 */
export async function advanceTestClock(db: Batchable, campaignId: string, seconds: number): Promise<boolean> {
  if (!isTestCampaignId(campaignId)) return false;
  // `column` moved back by `seconds`, in UTC: the same instant as timestamptz arithmetic for a shift
  // of seconds, and made of IMMUTABLE functions, which Citus requires of an UPDATE's expressions
  // (timestamptz - interval is STABLE: it reads the time zone for shifts of days and months).
  const back = (column: string) => Prisma.sql`((${Prisma.raw(column)} AT TIME ZONE 'UTC') - make_interval(secs => ${seconds}::integer)) AT TIME ZONE 'UTC'`;
  const [, , moved] = await db.$transaction([
    ...lockCampaignGate(db, campaignId),
    db.$executeRaw`
      UPDATE campaigns
         SET opens_at = ${back('opens_at')}, closes_at = ${back('closes_at')}, entries_close_at = ${back('entries_close_at')},
             test_clock_seconds = test_clock_seconds + ${seconds}::integer
       WHERE id = ${campaignId}::uuid AND test`,
    db.$executeRaw`
      UPDATE allocations SET expires_at = ${back('expires_at')}
       WHERE campaign_id = ${campaignId}::uuid AND status = 'HELD' AND expires_at IS NOT NULL`,
    db.$executeRaw`
      UPDATE allotments SET lapses_at = ${back('lapses_at')}
       WHERE campaign_id = ${campaignId}::uuid AND lapsed_at IS NULL AND lapses_at IS NOT NULL`,
  ]);
  return moved === 1;
}
