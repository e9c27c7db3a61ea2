// What "no live row changed" is checked against (issue 31, test mode): every live row, as a digest
// per table — rows of live campaigns (their id is not version 8) in every table with a campaign_id,
// counters summed over their slots (the sweeper folds slots), and partners, live campaigns, live
// webhook endpoints and their deliveries. Left out: what runs on by itself while a test runs — a
// delivery's attempts (an endpoint that refuses is retried) and the sweeper's stock announcements
// (*_announced_at). The outbox is drained first: a live event still in it would become deliveries
// mid-comparison; and refused claims are counted in memory and written every refusalFlushMs (the
// servers of these tests flush every 50 ms): a pause lets the last ones land first.
import type { Pool } from 'pg';
import { sleep, until } from './time';

/** The refusal counters' flush interval the test servers of test mode use. */
export const REFUSAL_FLUSH_MS = 50;

export async function liveSnapshot(sql: Pool): Promise<Record<string, string>> {
  await sleep(REFUSAL_FLUSH_MS * 6);
  await until(async () => (await sql.query('SELECT count(*)::int AS n FROM webhook_events')).rows[0].n === 0, { message: 'the outbox to drain' });
  const live = "substring(campaign_id::text, 15, 1) <> '8'";
  const queries: Record<string, string> = {
    campaign_counters: `SELECT campaign_id, sum(total), sum(allocated), sum(held), sum(void) FROM campaign_counters WHERE ${live} GROUP BY campaign_id`,
    partner_counters: `SELECT campaign_id, partner_id, sum(active), sum(held) FROM partner_counters WHERE ${live} GROUP BY campaign_id, partner_id`,
    minute_counters: `SELECT campaign_id, minute, sum(active) FROM minute_counters WHERE ${live} GROUP BY campaign_id, minute`,
    campaigns: "SELECT to_jsonb(c) - 'sold_out_announced_at' - 'low_stock_announced_at' FROM campaigns c WHERE substring(id::text, 15, 1) <> '8'",
    partners: 'SELECT * FROM partners',
    webhook_endpoints: 'SELECT * FROM webhook_endpoints WHERE NOT test',
    webhook_deliveries: 'SELECT d.id, d.endpoint_id, d.event_id, d.event, d.allocation_id, d.body FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id WHERE NOT e.test',
  };
  const { rows: tables } = await sql.query<{ table_name: string }>(
    "SELECT table_name FROM information_schema.columns WHERE table_schema = current_schema() AND column_name = 'campaign_id' ORDER BY table_name",
  );
  for (const { table_name: t } of tables) queries[t] ??= `SELECT * FROM ${t} WHERE ${live}`;
  const digest: Record<string, string> = {};
  for (const [name, query] of Object.entries(queries)) {
    digest[name] = (await sql.query(`SELECT count(*)::int || ':' || coalesce(md5(string_agg(r::text, '|' ORDER BY r::text)), '') AS d FROM (${query}) r`)).rows[0].d;
  }
  return digest;
}
