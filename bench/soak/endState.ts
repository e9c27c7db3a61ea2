// The end state, once the workers have stopped and every hold has lapsed, against the database.
import type { Client } from 'pg';
import { gql } from '../harness';
import { fmt } from './numbers';
import type { Check } from './verdict';
import { acknowledged, loadedPerCampaign, unknownKeys } from './windows';

/**
 * Nothing lost, nothing given twice, every count agreeing, once the workers have stopped and every
 * hold has lapsed.
 */
export async function checkDatabase(sql: Client, url: string, key: string): Promise<Check[]> {
  const checks: Check[] = [];
  const twice = (
    await sql.query(
      `SELECT count(*)::int AS n FROM (SELECT campaign_id, ticket_id FROM allocations WHERE status IN ('ACTIVE', 'HELD')
        GROUP BY 1, 2 HAVING count(*) > 1) d`,
    )
  ).rows[0].n as number;
  checks.push({ what: 'tickets with two live allocations', figures: String(twice), pass: twice === 0 });

  const stored = new Map<string, { code: string; status: string; key: string | null }>();
  for (const r of (
    await sql.query<{ id: string; code: string; status: string; idempotency_key: string | null }>(
      'SELECT a.id, t.code, a.status::text AS status, a.idempotency_key FROM allocations a JOIN tickets t ON t.campaign_id = a.campaign_id AND t.id = a.ticket_id',
    )
  ).rows) {
    stored.set(r.id, { code: r.code, status: r.status, key: r.idempotency_key });
  }
  let missing = 0;
  let wrong = 0;
  const examples: string[] = [];
  for (const [id, a] of acknowledged) {
    const s = stored.get(id);
    if (!s) {
      missing += 1;
      if (examples.length < 3) examples.push(`${id} not stored`);
    } else if (s.code !== a.code || (a.expect !== 'ANY' && s.status !== a.expect)) {
      wrong += 1;
      if (examples.length < 3) examples.push(`${id} stored ${s.status} ${s.code}, answered ${a.expect} ${a.code}`);
    }
  }
  let unexplained = 0;
  for (const [id, s] of stored) {
    if (!acknowledged.has(id) && !(s.key && unknownKeys.has(s.key))) {
      unexplained += 1;
      if (examples.length < 6) examples.push(`${id} stored but never answered`);
    }
  }
  checks.push({
    what: 'acknowledged allocations',
    figures:
      `${fmt(acknowledged.size)} answered, ${fmt(stored.size)} stored: ${missing} missing, ${wrong} with another ticket or state than the last answer implies, ` +
      `${unexplained} stored without an answer (${unknownKeys.size} outcomes unknown)${examples.length ? ` — ${examples.join('; ')}` : ''}`,
    pass: missing === 0 && wrong === 0 && unexplained === 0,
  });

  const perCampaign = (
    await sql.query<{ campaign_id: string; total: number; allocated: number; held: number; available: number; active: number; held_allocations: number }>(
      `SELECT t.campaign_id, count(*)::int AS total,
              count(*) FILTER (WHERE t.status = 'ALLOCATED')::int AS allocated,
              count(*) FILTER (WHERE t.status = 'HELD')::int AS held,
              count(*) FILTER (WHERE t.status = 'AVAILABLE')::int AS available,
              (SELECT count(*) FROM allocations a WHERE a.campaign_id = t.campaign_id AND a.status = 'ACTIVE')::int AS active,
              (SELECT count(*) FROM allocations a WHERE a.campaign_id = t.campaign_id AND a.status = 'HELD')::int AS held_allocations
         FROM tickets t GROUP BY t.campaign_id`,
    )
  ).rows;
  const problems: string[] = [];
  let allocatedTotal = 0;
  for (const c of perCampaign) {
    const loaded = loadedPerCampaign.get(c.campaign_id);
    const api = (await gql(url, key, 'query($id: ID!) { campaign(id: $id) { stats { total allocated held available } } }', { id: c.campaign_id })).campaign.stats;
    allocatedTotal += c.allocated;
    if (c.total !== loaded || c.allocated + c.held + c.available !== loaded) problems.push(`${c.campaign_id}: tickets ${c.allocated} + ${c.held} + ${c.available} ≠ ${loaded} loaded`);
    if (c.allocated !== c.active || c.held !== c.held_allocations) problems.push(`${c.campaign_id}: ${c.allocated} ALLOCATED tickets / ${c.active} ACTIVE allocations, ${c.held} HELD tickets / ${c.held_allocations} HELD allocations`);
    if (api.total !== c.total || api.allocated !== c.allocated || api.held !== c.held || api.available !== c.available) {
      problems.push(`${c.campaign_id}: stats ${JSON.stringify(api)} ≠ tables ${c.allocated}/${c.held}/${c.available}`);
    }
  }
  if (perCampaign.length !== loadedPerCampaign.size) problems.push(`${perCampaign.length} campaigns have tickets, ${loadedPerCampaign.size} were loaded`);
  const loadedTotal = [...loadedPerCampaign.values()].reduce((a, b) => a + b, 0);
  checks.push({
    what: 'allocated + held + available = loaded',
    figures: problems.length
      ? problems.join('; ')
      : `every campaign, in the tables and in the API's stats: ${fmt(allocatedTotal)} allocated + 0 held + ${fmt(loadedTotal - allocatedTotal)} available = ${fmt(loadedTotal)} loaded (${((100 * allocatedTotal) / loadedTotal).toFixed(1)}% filled)`,
    pass: problems.length === 0,
  });

  const idle = (await sql.query("SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND state LIKE 'idle in transaction%'")).rows[0].n as number;
  checks.push({ what: 'sessions idle in a transaction', figures: String(idle), pass: idle === 0 });
  return checks;
}
