// The soak's table, printed window by window, and its results file.
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { codeVersion } from '../harness';
import { RESULTS_DIR } from '../results';
import { fmt } from './numbers';
import { args, CAMPAIGNS, CONNECTIONS, TICKETS, WINDOW_S, WINDOWS } from './settings';
import type { Check } from './verdict';
import type { Row } from './windows';

export const HEADER = ['window', 's', 'req/s', 'claims/s', 'p50 ms', 'p99 ms', 'claim p99 ms', 'RSS MB mean / max', 'V8 heap MB', 'PG conns server / all', 'load 1 min', 'CPU cores client / server / PG / others', 'CPU ms/req server / PG', 'PG checkpoints', 'maintenance', 'answers other than success'];
const codesText = (codes: Map<string, number>) =>
  codes.size
    ? [...codes]
        .sort((a, b) => b[1] - a[1])
        .map(([c, n]) => `${c} ${n}`)
        .join(', ')
    : '—';
/** "VACUUM ANALYZE allocations, minute_counters; ANALYZE tickets" */
function maintenanceText(done: string[] | undefined): string {
  if (!done?.length) return '—';
  const byWhat = new Map<string, string[]>();
  for (const d of done) {
    const at = d.lastIndexOf(' ');
    byWhat.set(d.slice(0, at), [...(byWhat.get(d.slice(0, at)) ?? []), d.slice(at + 1)]);
  }
  return [...byWhat].map(([what, tables]) => `${what} ${tables.join(', ')}`).join('; ');
}
export function cells(r: Row): string[] {
  const f1 = (n: number) => (Number.isFinite(n) ? n.toFixed(1) : '?');
  const f0 = (n: number) => (Number.isFinite(n) ? fmt(n) : '?');
  return [
    `${r.index}${r.warmup ? ' (warm-up)' : ''}`,
    `${r.endS - WINDOW_S}–${r.endS}`,
    f0(r.rps),
    f0(r.claimsPerS),
    f0(r.p50),
    f0(r.p99),
    f0(r.claimP99),
    `${f0(r.rssMb)} / ${f0(r.rssMaxMb)}`,
    f0(r.heapMb),
    `${f0(r.pgServer)} / ${f0(r.pgAll)}`,
    f1(r.load1),
    r.cpu ? [r.cpu.client, r.cpu.server, r.cpu.database, r.cpu.others].map((n) => (Number.isFinite(n) ? n.toFixed(2) : '?')).join(' / ') : '?',
    r.cpu && r.rps > 0 ? `${((r.cpu.server * 1000) / r.rps).toFixed(2)} / ${((r.cpu.database * 1000) / r.rps).toFixed(2)}` : '?',
    f0(r.checkpoints),
    maintenanceText(r.maintenance),
    codesText(r.codes),
  ];
}
const WIDTHS = [13, 9, 7, 9, 7, 7, 13, 18, 11, 22, 11, 38, 23, 15, 30, 0];
let printedHeader = false;
export function printRow(r: Row): void {
  if (!printedHeader) {
    console.log(HEADER.map((h, i) => h.padEnd(WIDTHS[i]!)).join(' '));
    printedHeader = true;
  }
  console.log(
    cells(r)
      .map((c, i) => c.padEnd(WIDTHS[i]!))
      .join(' '),
  );
}
export function printTableFooter(): void {
  console.log('');
}

/** What the results file says beside the table. */
export interface SoakRun {
  rows: Row[];
  checks: Check[];
  /** The trend checks' note, the machine's, and how the tables were maintained. */
  note: string;
  machine: string;
  maintenance: string;
  passed: boolean;
  version: string;
  where: string;
  requests: number;
}

/**
 * Writes the run to bench/results/soak.json (its figures, window by window, as data) and soak.md
 * (the table and the checks, to read); docs/RELIABILITY.md cites them.
 */
export function writeResults(o: SoakRun): void {
  const given = args.join(' ');
  const command = `npm run soak${given ? ` -- ${given}` : ''}`;
  const code = codeVersion();
  const cpu = os.cpus()[0]?.model.trim() ?? 'unknown CPU';
  const recordedAt = new Date().toISOString();
  const claims = o.rows.reduce((a, r) => a + r.claimsPerS * WINDOW_S, 0);
  const markdown = [
    '# soak',
    '',
    'One Tessera process serving mixed claims, holds and reads for minutes, window by window. Written by `npm run soak` (bench/soak.ts); see docs/RELIABILITY.md, "Soak", for what it checks and why.',
    '',
    `Recorded ${recordedAt.slice(0, 16).replace('T', ' ')} UTC — \`${command}\` — ${WINDOWS} × ${WINDOW_S} s windows, ${CONNECTIONS} connections, ` +
      `${CAMPAIGNS} campaigns × ${fmt(TICKETS)} tickets — code at ${code} — nproc ${os.cpus().length} (${cpu}), ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}, ` +
      `PostgreSQL ${o.version} (${o.where}), load generator on the same machine. ` +
      `**${o.passed ? 'PASS' : 'FAIL'}**: ${fmt(o.requests)} requests, ${fmt(claims)} tickets claimed by claimTicket.`,
    '',
    `| ${HEADER.join(' | ')} |`,
    `|${HEADER.map(() => '---').join('|')}|`,
    ...o.rows.map((r) => `| ${cells(r).join(' | ')} |`),
    '',
    `${o.machine} ${o.note}. PostgreSQL: ${o.maintenance}.`,
    '',
    ...o.checks.map((c) => `- ${c.pass ? 'ok' : '**FAIL**'} — ${c.what}: ${c.figures}`),
    '',
  ].join('\n');
  const data = {
    experiment: 'soak',
    recordedAt,
    command,
    code,
    passed: o.passed,
    requests: o.requests,
    claims,
    setup: { windows: WINDOWS, windowSeconds: WINDOW_S, connections: CONNECTIONS, campaigns: CAMPAIGNS, ticketsPerCampaign: TICKETS },
    machine: { nproc: os.cpus().length, cpu, node: process.version, postgres: o.version, where: o.where, note: o.machine },
    note: o.note,
    maintenance: o.maintenance,
    windows: o.rows.map(({ codes, ...row }) => ({ ...row, codes: Object.fromEntries(codes) })),
    checks: o.checks,
  };
  mkdirSync(RESULTS_DIR, { recursive: true });
  writeFileSync(path.join(RESULTS_DIR, 'soak.json'), `${JSON.stringify(data, null, 2)}\n`);
  writeFileSync(path.join(RESULTS_DIR, 'soak.md'), markdown);
  console.log('results written to bench/results/soak.md and soak.json');
}
