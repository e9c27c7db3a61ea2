// purgeTestData: every test campaign made before a given time, with all that is its own, deleted;
// and test endpoints' deliveries made before it. No live row can be touched: every statement names
// one test campaign (its id, a version 8 one, checked here and by the campaigns row's `test`), or
// test endpoints only — a test endpoint receives test campaigns' events only.
//
// All or nothing: one transaction. A purge that stops part-way (a statement timeout, a lost
// connection, a deadlock) leaves every campaign untouched and the call's error says so; a retry
// starts from the same state. Inside it, every campaign's gate is taken exclusive first, in id
// order (claims in flight finish first, later ones find the campaign gone; two purges queue behind
// each other; a deadlock with the sweeper, which takes several campaigns' gates shared, rolls the
// purge back whole and the service runs it again), then each campaign's rows go, children before parents: the
// outbox, ballots, waitlists, allotments, quotas, allocations, tickets, counters, then the campaign
// (its allocation sequence goes with it: tessera_campaign_sequence). The audit log keeps its rows:
// it is history.
//
// The transaction has its own statement timeout, PURGE_TIMEOUT_MS: a campaign of a million tickets
// (generateTickets' and createTestCopy's cap) takes seconds to delete, past the few seconds the
// server's statement_timeout allows a claim (db/sessionSettings.ts). set_config(…, true) is
// SET LOCAL: it ends with the transaction, so behind a transaction pooler too the connection goes
// back with the server's settings. Each campaign's gate is a lock held to the end: a purge of many
// thousands of campaigns needs as many entries in the lock table (max_locks_per_transaction).
import type { Pool, PoolClient } from 'pg';
import { isTestCampaignId } from '../testMode';
import { inPoolTransaction } from './poolTransaction';

export interface Purged {
  campaigns: number;
  tickets: number;
  allocations: number;
  webhookDeliveries: number;
}

/** The longest one statement of a purge may run: deleting a million tickets takes seconds; this bounds a stuck one. */
export const PURGE_TIMEOUT_MS = 10 * 60_000;

/** A campaign's tables, children before parents; its campaigns row goes after them. */
const CAMPAIGN_TABLES = [
  'webhook_events',
  'ballot_ranks',
  'ballot_entries',
  'ballots',
  'waitlist_entries',
  'allotments',
  'partner_quota_credits',
  'partner_quotas',
  'allocations',
  'tickets',
  'campaign_counters',
  'partner_counters',
  'minute_counters',
  'refusal_counters',
] as const;

export async function purgeTestData(pool: Pool, before: Date): Promise<Purged> {
  return inPoolTransaction(pool, async (client) => {
    await client.query(`SELECT set_config('statement_timeout', $1, true)`, [String(PURGE_TIMEOUT_MS)]);
    const { rows } = await client.query<{ id: string }>('SELECT id::text FROM campaigns WHERE test AND created_at < $1::timestamptz ORDER BY id', [before]);
    for (const { id } of rows) {
      if (!isTestCampaignId(id)) throw new Error(`campaign ${id} is marked test but its id is live's: refusing to purge it`);
    }
    // Every gate first, as campaignGate.ts takes one: on the server Tessera talks to, then through
    // the function Citus delegates to the campaign's node.
    for (const { id } of rows) {
      await client.query("SELECT tessera_lock('campaign', $1::uuid::text)", [id]);
      await client.query('SELECT tessera_lock_campaign_gate($1::uuid)', [id]);
    }
    const purged: Purged = { campaigns: 0, tickets: 0, allocations: 0, webhookDeliveries: 0 };
    for (const { id } of rows) {
      const counts = await purgeCampaign(client, id);
      purged.campaigns += counts.campaign;
      purged.tickets += counts.tickets;
      purged.allocations += counts.allocations;
    }
    const deliveries = await client.query(
      'DELETE FROM webhook_deliveries d USING webhook_endpoints e WHERE d.endpoint_id = e.id AND e.test AND d.created_at < $1::timestamptz',
      [before],
    );
    purged.webhookDeliveries = deliveries.rowCount ?? 0;
    return purged;
  });
}

/** One campaign's rows and the campaign, under its gate (taken by the caller); how many of each went. */
async function purgeCampaign(client: PoolClient, id: string): Promise<{ campaign: number; tickets: number; allocations: number }> {
  const deleted: Partial<Record<(typeof CAMPAIGN_TABLES)[number], number>> = {};
  for (const table of CAMPAIGN_TABLES) {
    deleted[table] = (await client.query(`DELETE FROM ${table} WHERE campaign_id = $1::uuid`, [id])).rowCount ?? 0;
  }
  const campaign = (await client.query('DELETE FROM campaigns WHERE id = $1::uuid AND test', [id])).rowCount ?? 0;
  return { campaign, tickets: deleted.tickets ?? 0, allocations: deleted.allocations ?? 0 };
}
