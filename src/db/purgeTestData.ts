// purgeTestData (issue 31): every test campaign made before a given time, with all that is its own,
// deleted; and test endpoints' deliveries made before it. No live row can be touched: every
// statement names one test campaign (its id, a version 8 one, checked here and by the campaigns
// row's `test`), or test endpoints only — a test endpoint receives test campaigns' events only.
//
// A campaign at a time, each in a transaction of its own under its gate (exclusive: its claims in
// flight finish first, later ones find it gone), children before parents: the outbox, ballots,
// waitlists, allotments, quotas, allocations, tickets, counters, then the campaign (its allocation
// sequence goes with it: tessera_campaign_sequence). The audit log keeps its rows: it is history.
import { isTestCampaignId } from '../testMode';
import { lockCampaignGate, type Batchable } from './campaignGate';
import { retryDeadlocks } from './pgErrors';

export interface Purged {
  campaigns: number;
  tickets: number;
  allocations: number;
  webhookDeliveries: number;
}

/** Campaigns taken per round. */
const ROUND = 100;

export async function purgeTestData(db: Batchable, before: Date): Promise<Purged> {
  const purged: Purged = { campaigns: 0, tickets: 0, allocations: 0, webhookDeliveries: 0 };
  for (;;) {
    const round = await db.$queryRaw<{ id: string }[]>`
      SELECT id::text FROM campaigns WHERE test AND created_at < ${before}::timestamptz ORDER BY created_at, id LIMIT ${ROUND}::integer`;
    for (const { id } of round) {
      if (!isTestCampaignId(id)) throw new Error(`campaign ${id} is marked test but its id is live's: refusing to purge it`);
      const counts = await retryDeadlocks(() => purgeCampaign(db, id));
      purged.campaigns += counts.campaign;
      purged.tickets += counts.tickets;
      purged.allocations += counts.allocations;
    }
    if (round.length < ROUND) break;
  }
  purged.webhookDeliveries = await db.$executeRaw`
    DELETE FROM webhook_deliveries d USING webhook_endpoints e
     WHERE d.endpoint_id = e.id AND e.test AND d.created_at < ${before}::timestamptz`;
  return purged;
}

async function purgeCampaign(db: Batchable, id: string): Promise<{ campaign: number; tickets: number; allocations: number }> {
  const results = (await db.$transaction([
    ...lockCampaignGate(db, id),
    db.$executeRaw`DELETE FROM webhook_events WHERE campaign_id = ${id}::uuid`,
    db.$executeRaw`DELETE FROM ballot_ranks WHERE campaign_id = ${id}::uuid`,
    db.$executeRaw`DELETE FROM ballot_entries WHERE campaign_id = ${id}::uuid`,
    db.$executeRaw`DELETE FROM ballots WHERE campaign_id = ${id}::uuid`,
    db.$executeRaw`DELETE FROM waitlist_entries WHERE campaign_id = ${id}::uuid`,
    db.$executeRaw`DELETE FROM allotments WHERE campaign_id = ${id}::uuid`,
    db.$executeRaw`DELETE FROM partner_quota_credits WHERE campaign_id = ${id}::uuid`,
    db.$executeRaw`DELETE FROM partner_quotas WHERE campaign_id = ${id}::uuid`,
    db.$executeRaw`DELETE FROM allocations WHERE campaign_id = ${id}::uuid`,
    db.$executeRaw`DELETE FROM tickets WHERE campaign_id = ${id}::uuid`,
    db.$executeRaw`DELETE FROM campaign_counters WHERE campaign_id = ${id}::uuid`,
    db.$executeRaw`DELETE FROM partner_counters WHERE campaign_id = ${id}::uuid`,
    db.$executeRaw`DELETE FROM minute_counters WHERE campaign_id = ${id}::uuid`,
    db.$executeRaw`DELETE FROM refusal_counters WHERE campaign_id = ${id}::uuid`,
    db.$executeRaw`DELETE FROM campaigns WHERE id = ${id}::uuid AND test`,
  ])) as number[];
  const [allocations, tickets] = results.slice(10, 12);
  return { campaign: results.at(-1)!, tickets: tickets!, allocations: allocations! };
}
