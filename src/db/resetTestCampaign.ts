// resetTestCampaign: a test campaign back to where it was just after it opened — every
// allocation, hold, waitlist and ballot entry, pending event and counter of its activity gone, every
// ticket available again (its live allotments set aside anew), its clock back to the real one, and
// (a ballot) a fresh seed, since the old one may have been revealed. What stays: the campaign, its
// tickets and codes, settings, quotas and allotments, and its allocation sequence — fencing tokens
// keep rising, so a number a partner saw before the reset is never issued again. Webhook deliveries
// already made stay too: they are history.
//
// One transaction under the campaign's gate (exclusive: claims in flight finish first, later ones
// see the reset campaign), taken by lockTestCampaign.ts, which also refuses a partner's test key
// when another partner has rows in the campaign — checked under that lock, so what is checked is
// what is deleted. Every statement names the campaign; what is written is read first (the
// tickets to set aside), as Citus requires of a distributed table's UPDATE. The counters are
// rewritten last, whatever the deletes' triggers did: a campaign counter row with the tickets, and
// none of the rest.
import type { Pool } from 'pg';
import { isTestCampaignId } from '../testMode';
import { lockTestCampaign } from './lockTestCampaign';
import { inPoolTransaction } from './poolTransaction';

/** A ballot's new seed, committed and sealed (services/campaigns.ts makes it). */
export interface NewSeed {
  commitment: string;
  sealed: string;
}

/**
 * Resets the test campaign. `partnerId`: the calling partner's (null for an operator); SHARED, with
 * nothing changed, when another partner has rows in it. NOT_FOUND when there is no such test campaign.
 */
export async function resetTestCampaign(pool: Pool, campaignId: string, partnerId: string | null, seed: NewSeed | null): Promise<'OK' | 'NOT_FOUND' | 'SHARED'> {
  if (!isTestCampaignId(campaignId)) return 'NOT_FOUND';
  return inPoolTransaction(pool, async (client) => {
    const q = (text: string, values: unknown[] = [campaignId]) => client.query(text, values);
    const lock = await lockTestCampaign(client, campaignId, partnerId);
    if (lock.verdict !== 'OK') return lock.verdict;
    const seconds = lock.testClockSeconds;
    // Its clock back to the real one: the deadlines advanceTestClock moved back, forward again.
    const forward = (column: string) => `((${column} AT TIME ZONE 'UTC') + make_interval(secs => $2::integer)) AT TIME ZONE 'UTC'`;
    await q(
      `UPDATE campaigns
          SET status = CASE WHEN status = 'DRAFT' THEN 'DRAFT'::campaign_status ELSE 'OPEN'::campaign_status END,
              closed_at = NULL, sold_out_at = NULL, sold_out_announced_at = NULL, low_stock_announced_at = NULL,
              opens_at = ${forward('opens_at')}, closes_at = ${forward('closes_at')}, entries_close_at = ${forward('entries_close_at')},
              test_clock_seconds = 0
        WHERE id = $1::uuid AND test`,
      [campaignId, seconds],
    );
    for (const table of ['webhook_events', 'ballot_ranks', 'ballot_entries', 'waitlist_entries', 'partner_quota_credits', 'allocations']) {
      await q(`DELETE FROM ${table} WHERE campaign_id = $1::uuid`);
    }
    if (seed) {
      await q(
        `UPDATE ballots SET seed_commitment = $2, sealed_seed = $3, seed = NULL, entries_digest = NULL, entry_count = NULL, tickets = NULL,
                            winners = NULL, partner_limits = NULL, drawn_at = NULL, pass_on_pool = NULL
          WHERE campaign_id = $1::uuid`,
        [campaignId, seed.commitment, seed.sealed],
      );
    }
    await q(`UPDATE tickets SET status = 'AVAILABLE', allotted_to = NULL WHERE campaign_id = $1::uuid AND (status <> 'AVAILABLE' OR allotted_to IS NOT NULL)`);
    await q(`UPDATE allotments SET lapses_at = ${forward('lapses_at')}, lapsed_at = NULL, returned = NULL WHERE campaign_id = $1::uuid`, [campaignId, seconds]);
    const { rows: allotments } = await q('SELECT partner_id, size FROM allotments WHERE campaign_id = $1::uuid AND size > 0 ORDER BY partner_id');
    for (const { partner_id: partner, size } of allotments as { partner_id: string; size: number }[]) {
      const { rows: picked } = await q(
        `SELECT id FROM tickets WHERE campaign_id = $1::uuid AND status = 'AVAILABLE' ORDER BY pick_order LIMIT $2::integer`,
        [campaignId, size],
      );
      await q(`UPDATE tickets SET status = 'ALLOTTED', allotted_to = $2::uuid WHERE campaign_id = $1::uuid AND id = ANY($3::bigint[])`, [
        campaignId,
        partner,
        picked.map((t) => t.id as string),
      ]);
    }
    await q('UPDATE partner_quotas SET live = 0 WHERE campaign_id = $1::uuid');
    for (const table of ['partner_counters', 'minute_counters', 'refusal_counters', 'campaign_counters']) {
      await q(`DELETE FROM ${table} WHERE campaign_id = $1::uuid`);
    }
    const { rows: counted } = await q('SELECT count(*)::bigint AS total FROM tickets WHERE campaign_id = $1::uuid');
    await q('INSERT INTO campaign_counters (campaign_id, slot, total) VALUES ($1::uuid, 0, $2::bigint)', [campaignId, counted[0].total]);
    return 'OK';
  });
}
