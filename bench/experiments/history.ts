// History: hot and spread claims before and after the database gains HISTORY_ALLOCATIONS allocations
// of closed campaigns (writeHistory), two runs of each side. It writes ten million rows into the
// bench's database, so it runs after every other experiment.
// Bar, hot and spread: with the history ÷ before ≥ 0.90×.
import type { Client } from 'pg';
import { OPERATOR_PARTNER_ID } from '../../src/auth';
import type { LoadResult } from '../harness';
import { claimRunOn, vacuum, type Experiment } from './context';
import { fmt, meanRate, ratio, type Report } from './report';
import { HISTORY_ALLOCATIONS, HISTORY_CAMPAIGNS } from './settings';

export const history: Experiment = {
  name: 'history',
  summary: `hot and spread claims before and after ${fmt(HISTORY_ALLOCATIONS)} allocations of closed campaigns are written`,
  async run(ctx, report: Report) {
    const { sql } = ctx;
    const { pool, cool } = await ctx.pools();
    const historyRuns = async (label: string) => {
      const out = { hot: [] as LoadResult[], spread: [] as LoadResult[] };
      for (let round = 1; round <= 2; round += 1) {
        await vacuum(sql);
        out.hot.push(await claimRunOn(ctx, report, [pool], `hot, 64 connections, ${label}, round ${round}`));
        await vacuum(sql);
        out.spread.push(await claimRunOn(ctx, report, cool, `spread, 64 connections, ${label}, round ${round}`));
      }
      return out;
    };
    const empty = await historyRuns('before the history');
    const written = await writeHistory(sql);
    report.record(
      `history: ${fmt(written.allocations)} allocations of ${HISTORY_CAMPAIGNS} closed campaigns written, then VACUUM ANALYZE`,
      `${(written.writeMs / 1000).toFixed(1)} s + ${(written.vacuumMs / 1000).toFixed(1)} s`,
    );
    const withHistory = await historyRuns(`with ${fmt(written.allocations)} allocations of closed campaigns`);
    for (const name of ['hot', 'spread'] as const) {
      report.record(
        `claimTicket ${name}, 64 connections: with the history ÷ before (means of 2 runs)`,
        `${fmt(meanRate(withHistory[name]))} / ${fmt(meanRate(empty[name]))}/s = ${ratio(meanRate(withHistory[name]), meanRate(empty[name]))}`,
      );
    }
    for (const name of ['hot', 'spread'] as const) {
      report.atLeast(`claimTicket ${name} with ${fmt(HISTORY_ALLOCATIONS)} historical allocations ÷ before`, meanRate(withHistory[name]) / meanRate(empty[name]), 0.9);
    }
  },
};

/**
 * Months of drops, as they would have left the database: HISTORY_CAMPAIGNS closed campaigns holding
 * HISTORY_ALLOCATIONS tickets between them, every one ALLOCATED with its ACTIVE allocation, and
 * their counters; then VACUUM ANALYZE, which autovacuum would have run over those months. Written in
 * bulk by SQL, a few campaigns a statement, with the triggers off (session_replication_role =
 * replica: the foreign keys' checks, the counters' and numbering triggers), so the counters and the
 * allocations' sequence are written here as the triggers would; the campaigns themselves are
 * created with their triggers (each gets its sequence).
 */
async function writeHistory(sql: Client): Promise<{ allocations: number; writeMs: number; vacuumMs: number }> {
  const perCampaign = Math.floor(HISTORY_ALLOCATIONS / HISTORY_CAMPAIGNS);
  const started = performance.now();
  const ids = (
    await sql.query<{ id: string }>(
      `INSERT INTO campaigns (name, status, opened_at, closed_at)
       SELECT 'history ' || g, 'CLOSED', now() - interval '90 days', now() - interval '89 days' FROM generate_series(1, $1::int) g
       RETURNING id`,
      [HISTORY_CAMPAIGNS],
    )
  ).rows.map((r) => r.id);
  await sql.query('SET session_replication_role = replica');
  try {
    for (let i = 0; i < ids.length; i += 10) {
      const batch = ids.slice(i, i + 10);
      await sql.query(
        `INSERT INTO tickets (campaign_id, code, status, pick_order)
         SELECT c.id, 'H' || lpad(g::text, 9, '0'), 'ALLOCATED', g FROM unnest($1::uuid[]) AS c(id), generate_series(1, $2::int) g`,
        [batch, perCampaign],
      );
      await sql.query(
        `INSERT INTO allocations (campaign_id, ticket_id, partner_id, holder, status, sequence, allocated_at)
         SELECT t.campaign_id, t.id, $2, 'history-' || (t.pick_order % 50000), 'ACTIVE', t.pick_order,
                now() - interval '90 days' + t.pick_order * interval '1 millisecond'
           FROM tickets t WHERE t.campaign_id = ANY($1::uuid[])`,
        [batch, OPERATOR_PARTNER_ID],
      );
      await sql.query(
        `INSERT INTO campaign_counters (campaign_id, slot, total, allocated) SELECT id, 0, $2, $2 FROM unnest($1::uuid[]) AS c(id)`,
        [batch, perCampaign],
      );
      await sql.query(
        `INSERT INTO partner_counters (campaign_id, partner_id, slot, active) SELECT id, $3, 0, $2 FROM unnest($1::uuid[]) AS c(id)`,
        [batch, perCampaign, OPERATOR_PARTNER_ID],
      );
    }
  } finally {
    await sql.query('RESET session_replication_role');
  }
  const written = performance.now();
  await sql.query('VACUUM ANALYZE');
  return { allocations: perCampaign * ids.length, writeMs: written - started, vacuumMs: performance.now() - written };
}
