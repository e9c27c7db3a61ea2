// Loading at COPY speed: generateTickets of a million; loadTickets, 10,000 random codes a call, one
// call at a time; and `npx tessera load` of a million-code CSV (its defaults: 10,000 a call, two
// calls in flight) — each into a campaign of its own; then what a load past autovacuum's threshold
// adds to itself (db/loadTickets.ts, analyzeIfStale). Bars: generateTickets ≥ 200,000 rows/s, the
// CLI ≥ 150,000 codes/s (full runs only).
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { ADMIN_KEY, gql, ROOT } from '../harness';
import type { Experiment } from './context';
import { fmt, ms, type Report } from './report';
import { BIG, quick } from './settings';

const execFileAsync = promisify(execFile);

export const loads: Experiment = {
  name: 'loads',
  summary: 'generateTickets, loadTickets and `npx tessera load` of a million tickets; ANALYZE after a load',
  async run(ctx, report: Report) {
    const { server, sql } = ctx;
    const big = await ctx.newCampaign('one million');
    ctx.big = big;
    let t0 = performance.now();
    await gql(server.url, ADMIN_KEY, `mutation { generateTickets(campaignId: "${big}", count: ${BIG}) { loaded } }`);
    const generated = BIG / ((performance.now() - t0) / 1000);
    report.record(`load ${fmt(BIG)} tickets with generateTickets`, `${fmt(generated)} rows/s  (bar: 200,000)`);
    const loaded = await ctx.newCampaign('loaded');
    const batches = quick ? 10 : 100;
    const randomCodes = (n: number, prefix: string) => Array.from({ length: n }, () => `${prefix}${randomBytes(6).toString('hex').toUpperCase()}`);
    t0 = performance.now();
    for (let b = 0; b < batches; b += 1) {
      await gql(server.url, ADMIN_KEY, 'mutation($id: ID!, $codes: [String!]!) { loadTickets(campaignId: $id, codes: $codes) { loaded } }', { id: loaded, codes: randomCodes(10_000, `L${b}-`) });
    }
    report.record(`load ${fmt(batches * 10_000)} random codes with loadTickets (10,000 a call, one call at a time)`, `${fmt((batches * 10_000) / ((performance.now() - t0) / 1000))} rows/s`);
    const csv = path.join(os.tmpdir(), `tessera-bench-codes-${process.pid}.csv`);
    writeFileSync(csv, `code\n${randomCodes(BIG, 'SEAT-').join('\n')}\n`);
    let cli: number | undefined;
    try {
      const fromCsv = await ctx.newCampaign('from a CSV');
      t0 = performance.now();
      await execFileAsync(process.execPath, [path.join(ROOT, 'bin/tessera.js'), 'load', '--campaign', fromCsv, '--file', csv, '--url', server.url.replace(/\/graphql$/, ''), '--key', ADMIN_KEY]);
      const seconds = (performance.now() - t0) / 1000;
      const stored = (await sql.query('SELECT count(*)::int AS n FROM tickets WHERE campaign_id = $1', [fromCsv])).rows[0].n as number;
      if (stored !== BIG) ctx.failures.push(`npx tessera load of ${fmt(BIG)} codes stored ${fmt(stored)}`);
      cli = BIG / seconds;
      report.record(`load a ${fmt(BIG)}-code CSV with npx tessera load (its defaults: 10,000 a call, 2 in flight; the CLI's process included)`, `${fmt(cli)} codes/s  (bar: 150,000)`);
    } finally {
      rmSync(csv, { force: true });
    }
    const ticketRows = (await sql.query('SELECT count(*)::int AS n FROM tickets')).rows[0].n as number;
    t0 = performance.now();
    await sql.query('ANALYZE tickets');
    report.record(`ANALYZE tickets of ${fmt(ticketRows)} rows (what a load past the threshold adds to itself)`, ms(performance.now() - t0));

    if (!quick) {
      const perSecondBar = (what: string, value: number | undefined, target: number) =>
        report.bar({ what, figure: value === undefined ? 'not measured' : `${fmt(value)}/s`, target: `≥ ${fmt(target)}/s`, pass: value !== undefined && value >= target });
      perSecondBar(`generateTickets of ${fmt(BIG)}, rows`, generated, 200_000);
      perSecondBar(`npx tessera load of a ${fmt(BIG)}-code CSV, codes`, cli, 150_000);
    }
  },
};
