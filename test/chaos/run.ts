// `npm run chaos`: every fault scenario at full size, a verdict line each, and the results table in
// docs/RELIABILITY.md. Uses DATABASE_URL's server for the scenarios when set; PostgreSQL restarts
// (scenario c) always happen on an embedded PostgreSQL this run owns, so c never needs to be skipped.
import 'dotenv/config';
import { readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startEmbeddedPostgres } from '../../src/db/embedded';
import { SCENARIO_GROUPS, SCENARIOS, verdictLine, type ScenarioResult, type Size } from './scenarios';

const ROOT = path.resolve(__dirname, '../..');

async function main(): Promise<void> {
  const size: Size = process.argv.includes('--quick') ? 'quick' : 'full';
  // --only=a,c or a group's name (--only=failover runs the failover drill, j to m).
  const only = process.argv
    .find((a) => a.startsWith('--only='))
    ?.slice('--only='.length)
    .split(',')
    .flatMap((name) => SCENARIO_GROUPS[name] ?? [name]);
  const restartable = await startEmbeddedPostgres({
    dir: path.join(ROOT, '.tessera/chaos-pgdata'),
    port: Number(process.env.TESSERA_CHAOS_EMBEDDED_PORT ?? 54349),
  });
  const pgUrl = process.env.DATABASE_URL || restartable.url;
  console.log(`chaos (${size}) on ${process.env.DATABASE_URL ? 'DATABASE_URL' : 'an embedded PostgreSQL'}; PostgreSQL restarts on an embedded one\n`);
  const results: ScenarioResult[] = [];
  try {
    for (const scenario of SCENARIOS) {
      const id = String.fromCharCode(97 + SCENARIOS.indexOf(scenario));
      if (only && !only.includes(id)) continue;
      const result = await scenario({ pgUrl, restartable, size });
      results.push(result);
      console.log(verdictLine(result));
    }
  } finally {
    await restartable.stop();
  }
  const run = results.filter((r) => !r.skipped);
  const claims = run.reduce((n, r) => n + r.claims, 0);
  const violations = run.reduce((n, r) => n + r.violations.length, 0);
  console.log(`\n${violations === 0 ? 'PASS' : 'FAIL'}: ${claims} claims over ${run.length} scenarios, ${violations} invariant violations`);
  if (size === 'full' && !only) writeReliability(results, claims, violations);
  if (size === 'full' && results.some((r) => r.failover)) writeFailover(results, process.argv.slice(2).length ? ` -- ${process.argv.slice(2).join(' ')}` : '');
  process.exit(violations === 0 ? 0 : 1);
}

function writeReliability(results: ScenarioResult[], claims: number, violations: number): void {
  const file = path.join(ROOT, 'docs/RELIABILITY.md');
  const rows = results.map((r) =>
    r.skipped
      ? `| ${r.id} | ${r.name} | skipped: ${r.skipped} | | | | | | |`
      : `| ${r.id} | ${r.name} | ${r.claims} | ${r.ok} / ${r.refused} / ${r.unknown} | ${r.retries} | ${r.stored} / ${r.total} | ${r.available} | ${r.violations.length} | ${r.seconds} |`,
  );
  const notes = results.filter((r) => r.notes.length).map((r) => `- **${r.id}.** ${r.notes.join('; ')}`);
  const table = [
    `Last run: ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC, \`npm run chaos\`, ${os.cpus().length} cores (${os.cpus()[0]?.model.trim()}), ` +
      `Node ${process.version}, PostgreSQL ${process.env.DATABASE_URL ? 'from DATABASE_URL' : 'embedded'} (c: embedded). ` +
      `**${claims} claims, ${violations} invariant violations.**`,
    '',
    '| | scenario | claims | first pass ok / refused / unknown | retries by key | allocated / tickets | available at end | violations | seconds |',
    '|---|---|---|---|---|---|---|---|---|',
    ...rows,
    '',
    ...notes,
  ].join('\n');
  const doc = readFileSync(file, 'utf8');
  const begin = '<!-- chaos:begin -->';
  const end = '<!-- chaos:end -->';
  const updated = doc.replace(new RegExp(`${begin}[\\s\\S]*${end}`), `${begin}\n${table}\n${end}`);
  writeFileSync(file, updated);
  console.log(`results written to docs/RELIABILITY.md`);
}

/** The failover drill's tables (issue 19): what each fault keeps and costs, one table per scenario. */
function writeFailover(results: ScenarioResult[], command: string): void {
  const file = path.join(ROOT, 'docs/RELIABILITY.md');
  const drills = results.filter((r) => r.failover);
  const ms = (v: number | null) => (v === null ? 'never' : `${v} ms`);
  const blocks = drills.map((r) => {
    const f = r.failover!;
    return [
      `**${r.id}.** ${r.name}`,
      '',
      '| replication | claims | acknowledged | lost | duplicated | unknown resolved | other errors | promoted after | acknowledged again after | of which after the promotion | longest with none acknowledged | violations | seconds |',
      '|---|---|---|---|---|---|---|---|---|---|---|---|---|',
      `| ${f.replication} | ${f.claims} | ${f.acknowledged} | ${f.lost} | ${f.duplicated} | ${f.unknownResolved} / ${f.unknown} | ${f.otherErrors} | ${f.promoteMs} ms | ${ms(f.recoverMs)} | ${ms(f.afterPromotionMs)} | ${ms(f.pauseMs)} | ${r.violations.length} | ${r.seconds} |`,
      '',
      ...r.notes.filter((n) => !n.startsWith('Patroni promoted')).map((n) => `- ${n}`), // that one is the table's row
      ...r.violations.slice(0, 3).map((v) => `- **violation:** ${v}`),
    ].join('\n');
  });
  const table = [
    `Last run: ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC, \`npm run chaos${command}\`, ${os.cpus().length} cores, Node ${process.version}; ` +
      `${drills[0]?.failover?.setup ?? ''}; two Tessera instances.`,
    '',
    blocks.join('\n\n'),
  ].join('\n');
  const begin = '<!-- failover:begin -->';
  const end = '<!-- failover:end -->';
  const doc = readFileSync(file, 'utf8');
  if (!doc.includes(begin)) throw new Error(`docs/RELIABILITY.md has no ${begin} marker`);
  writeFileSync(file, doc.replace(new RegExp(`${begin}[\\s\\S]*${end}`), () => `${begin}\n${table}\n${end}`));
  console.log('failover tables written to docs/RELIABILITY.md');
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? (error.stack ?? error.message) : error);
  process.exit(1);
});
