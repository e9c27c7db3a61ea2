// Flat claim cost as the pool fills: the 1,000,000-ticket campaign of the loads experiment (made
// here when loads did not run), filled in bulk between steps to 0, 50, 90 and 99% — the dead index
// entries of docs/PERFORMANCE.md pitfall 1 all there: no VACUUM between these steps, on purpose.
// Each step: FILL_RUNS runs of FILL_CLAIMS claims at 16 connections, a small share of what is left
// even at 99% (a 4-second run there took most of the last 1% and ended near 99.8% fill: a moving
// target); the step's p50 the mean of its runs' (autocannon gives each in whole milliseconds).
// Bar: p50 at 99% fill ÷ p50 at 0% ≤ 1.25×.
import type { Client } from 'pg';
import { OPERATOR_PARTNER_ID } from '../../src/auth';
import { ADMIN_KEY, gql, httpLoad, type LoadResult } from '../harness';
import { CLAIM, CLAIMED, vacuum, verify, type Experiment } from './context';
import { fmt, ms, ratio, x, type Report } from './report';
import { BIG, FILL_CLAIMS, FILL_RUNS } from './settings';

export const fill: Experiment = {
  name: 'fill',
  summary: 'claim latency at 0, 50, 90 and 99% fill of a 1,000,000-ticket pool, no VACUUM after the bulk fill',
  async run(ctx, report: Report) {
    const { sql } = ctx;
    if (!ctx.big) {
      ctx.big = await ctx.newCampaign('one million');
      await gql(ctx.server.url, ADMIN_KEY, `mutation { generateTickets(campaignId: "${ctx.big}", count: ${BIG}) { loaded } }`);
    }
    const big = ctx.big;
    await vacuum(sql, { analyze: true });
    await ctx.open(big);
    const p50s: Record<number, number> = {};
    for (const share of [0, 0.5, 0.9, 0.99]) {
      await fillTo(sql, big, share, BIG);
      const runs: LoadResult[] = [];
      for (let i = 0; i < FILL_RUNS; i += 1) {
        const run = ctx.nextRun();
        const r = await httpLoad({ url: ctx.server.url, key: ctx.partnerKey, body: CLAIM(big, run), connections: 16, seconds: 0 /* ignored: amount */, amount: FILL_CLAIMS, okPattern: CLAIMED });
        await verify(ctx, r, run, [big], 16, `claims at ${share * 100}% fill`);
        runs.push(r);
      }
      p50s[share] = runs.reduce((sum, r) => sum + r.p50, 0) / runs.length;
      report.record(
        `claimTicket at ${share * 100}% fill of ${fmt(BIG)}, 16 connections, ${FILL_RUNS} × ${fmt(FILL_CLAIMS)} claims (no VACUUM after the bulk fill)`,
        `p50 ${ms(p50s[share]!)} (${runs.map((r) => r.p50).join(' / ')})  p99 ${ms(Math.max(...runs.map((r) => r.p99)))}`,
      );
    }
    report.record('p50 at 99% fill / p50 at 0% fill', ratio(p50s[0.99]!, p50s[0]!));
    report.bar({ what: 'p50 at 99% fill ÷ p50 at 0% fill', figure: x(p50s[0.99]! / p50s[0]!), target: '≤ 1.25×', pass: p50s[0.99]! / p50s[0]! <= 1.25 });
  },
};

/**
 * Allocates tickets in bulk (as the operator) until `share` of `total` are allocated, recorded as
 * every claim records them (tessera_record_allocations), so the reads afterwards see the counters of
 * a real fill.
 */
async function fillTo(sql: Client, campaignId: string, share: number, total: number): Promise<void> {
  const target = Math.floor(share * total);
  const current = (await sql.query('SELECT count(*)::int AS n FROM allocations WHERE campaign_id = $1', [campaignId])).rows[0].n as number;
  if (target <= current) return;
  await sql.query(
    `WITH picked AS MATERIALIZED (SELECT id FROM tickets WHERE campaign_id = $1 AND status = 'AVAILABLE' ORDER BY random() LIMIT $2),
          claimed AS (UPDATE tickets t SET status = 'ALLOCATED' FROM picked p
                       WHERE t.campaign_id = $1 AND t.id = p.id AND t.status = 'AVAILABLE' RETURNING t.id)
     SELECT count(*) FROM tessera_record_allocations($1, 'ACTIVE', NULL, tickets, array_fill($3::uuid, ARRAY[cardinality(tickets)]),
                                                     array_fill('bulk-fill'::text, ARRAY[cardinality(tickets)]), NULL, NULL, NULL,
                                                     array_fill(0, ARRAY[cardinality(tickets)]), NULL, NULL, NULL, true)
       FROM (SELECT ARRAY(SELECT id FROM claimed) AS tickets) c`,
    [campaignId, target - current, OPERATOR_PARTNER_ID],
  );
}
