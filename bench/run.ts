// `npm run bench`: what a claim costs, measured on this machine next to the baselines that say where
// Tessera stands — the floor (the minimal claim in PostgreSQL alone), the ceilings (answers without
// a database) — and what loads, tracing, webhooks, PgBouncer, a standby, a filling pool and a long
// history do to it. One file per experiment in bench/experiments/ (their list and order:
// experiments/index.ts); this driver starts what they share — the bench's database and one Tessera
// process — runs them in order, prints every figure and each experiment's bars (PASS or MISS), and
// writes each experiment's results to bench/results/<experiment>.json and .md, and every bar to
// bench/results/summary.md (bench/results.ts). docs/BENCHMARKS.md describes each experiment and
// cites those files.
//
//   npm run bench                              every experiment (~19 minutes here)
//   npm run bench -- --only=floor,claims       those, the ones they need first, and integrity
//   npm run bench -- --help                    the experiments, what each measures, what it needs
//   npm run bench -- --quick                   shorter runs, smaller pools (a smoke test; no results written)
//   npm run bench -- --no-pgbench              the floor and the statements through pg even when pgbench is installed
//   npm run bench -- --citus                   only the comparison with a Citus cluster (bench/citus.ts)
//
// Uses DATABASE_URL's server when set (databases `tessera_bench`, `tessera_bench_sql` and
// `tessera_tracing_ab` are dropped and created there), else an embedded PostgreSQL in
// .tessera/bench-pgdata. A MISS is a measurement, not a failure; the bench fails (exit 1) when a
// ticket was lost or given twice, or a claim run answered errors, and an experiment with a failure
// writes no results.
import 'dotenv/config';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { startEmbeddedPostgres, type EmbeddedDatabase } from '../src/db/embedded';
import { migrate } from '../src/db/migrate';
import { citusBench } from './citus';
import { postmasterOf } from './cpu';
import { campaignHelpers, type Context, type Experiment } from './experiments/context';
import { EXPERIMENTS, selectExperiments } from './experiments/index';
import { Report, type Bar } from './experiments/report';
import { quick } from './experiments/settings';
import { BENCH_WEBHOOK_KEY } from './experiments/webhooks';
import { ADMIN_KEY, codeVersion, freePort, gql, pgbenchVersion, ROOT, Server } from './harness';
import { writeExperiment, writeSummary, type Machine } from './results';

const FLAGS = new Set(['--quick', '--no-pgbench', '--citus', '--help', '-h']);

function usage(): string {
  const width = Math.max(...EXPERIMENTS.map((e) => e.name.length));
  return [
    'npm run bench [-- --only=<experiment>[,<experiment>…]] [--quick] [--no-pgbench] | --citus | --help',
    '',
    'Experiments, in the order a full run runs them (--only runs the ones named, what they need first, and integrity):',
    ...EXPERIMENTS.map((e) => `  ${e.name.padEnd(width)}  ${e.summary}${e.needs?.length ? ` (needs ${e.needs.join(', ')})` : ''}`),
    '',
    'Results: bench/results/<experiment>.json and .md, and bench/results/summary.md (not with --quick).',
  ].join('\n');
}

/** The experiments named by --only (`--only=a,b` or `--only a,b`), or exits with what was wrong. */
function parseArgs(args: readonly string[]): string[] {
  const only: string[] = [];
  for (let i = 0; i < args.length; i += 1) {
    const a = args[i]!;
    if (a === '--only' || a.startsWith('--only=')) {
      const list = a === '--only' ? args[(i += 1)] : a.slice('--only='.length);
      if (!list) fail('--only wants a list of experiments, e.g. --only=floor,claims');
      only.push(...list.split(',').map((s) => s.trim()).filter(Boolean));
    } else if (!FLAGS.has(a)) {
      fail(`unknown option ${a} (known: --only=<experiments> ${[...FLAGS].join(' ')})`);
    }
  }
  return only;
}

function fail(message: string): never {
  console.error(`bench: ${message}\n\n${usage()}`);
  process.exit(2);
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const only = parseArgs(args);
  if (args.includes('--help') || args.includes('-h')) {
    console.log(usage());
    return;
  }
  if (args.includes('--citus')) {
    process.exitCode = (await citusBench({ quick })) > 0 ? 1 : 0;
    return;
  }
  const selected = selectExperiments(only);
  if ('unknown' in selected) fail(`no experiment named ${selected.unknown.join(', ')}`);
  const command = `npm run bench${args.length ? ` -- ${args.join(' ')}` : ''}`;

  const began = performance.now();
  const loadAtStart = os.loadavg()[0]!;
  let embedded: EmbeddedDatabase | undefined;
  let serverUrl = process.env.DATABASE_URL;
  if (!serverUrl) {
    embedded = await startEmbeddedPostgres({ dir: path.join(ROOT, '.tessera/bench-pgdata'), port: 54379 });
    serverUrl = embedded.url;
  }
  const dbUrl = new URL(serverUrl);
  dbUrl.pathname = '/tessera_bench';
  const admin = new Client({ connectionString: serverUrl });
  await admin.connect();
  await admin.query('DROP DATABASE IF EXISTS tessera_bench WITH (FORCE)');
  await admin.query('CREATE DATABASE tessera_bench');
  await admin.end();
  await migrate(dbUrl.toString());
  const sql = new Client({ connectionString: dbUrl.toString() });
  await sql.connect();
  const version = (await sql.query('SHOW server_version')).rows[0].server_version as string;
  const autovacuum = (await sql.query('SHOW autovacuum')).rows[0].autovacuum === 'on';
  const pgbench = args.includes('--no-pgbench') ? null : pgbenchVersion();
  const machine: Machine = {
    nproc: os.availableParallelism(),
    cpu: os.cpus()[0]?.model.trim() ?? 'unknown CPU',
    memory: `${Math.round(os.totalmem() / 2 ** 30)} GiB`,
    node: process.version,
    postgres: version,
    where: embedded ? 'embedded' : `DATABASE_URL, ${dbUrl.host}`,
    autovacuum,
    pgbench,
    code: codeVersion(),
  };

  // One process, whatever the default; rate limits far above what the bench sends (still counted).
  // WEBHOOK_SECRET_KEY: the webhooks experiment configures endpoints, which production allows only with it.
  const serverEnv = { DATABASE_URL: dbUrl.toString(), RATE_LIMIT_POINTS_PER_SECOND: '10000000', WEBHOOK_SECRET_KEY: BENCH_WEBHOOK_KEY.toString('base64') };
  const server = new Server(await freePort(), { ...serverEnv, WEB_CONCURRENCY: '1' });
  await server.start();
  console.log(
    `bench${quick ? ' --quick' : ''} — code at ${machine.code} — nproc ${machine.nproc} (${machine.cpu}), ${machine.memory}, Node ${process.version}, ` +
      `PostgreSQL ${version} (${machine.where}), autovacuum ${autovacuum ? 'on' : 'OFF'}, ${pgbench ?? 'no pgbench: SQL load through pg'}, load average ${loadAtStart.toFixed(2)}`,
  );
  if (!autovacuum) console.log('autovacuum is OFF on this server: nothing removes dead rows but the VACUUMs the bench runs between phases.');
  if (loadAtStart > machine.nproc) console.log(`warning: load average ${loadAtStart.toFixed(2)} on ${machine.nproc} cores — something else is running; the figures will be low.`);
  const names = selected.run.map((e) => e.name);
  console.log(`experiments: ${names.join(', ')}${selected.added.length ? ` (${selected.added.join(', ')}: needed by those named)` : ''}`);

  let runs = 0;
  const ctx: Context = {
    serverUrl,
    dbUrl,
    serverEnv,
    server,
    sql,
    pgbench,
    postmaster: await postmasterOf(sql),
    partnerKey: (await gql(server.url, ADMIN_KEY, 'mutation { createPartner(input: { name: "bench" }) { apiKey } }')).createPartner.apiKey as string,
    failures: [],
    integrity: { lost: 0, duplicated: 0 },
    figures: {},
    nextRun: () => `bench-${(runs += 1)}`,
    ...campaignHelpers(server, sql),
  };
  const bars: Array<{ experiment: string; bar: Bar }> = [];
  const written: string[] = [];
  try {
    for (const experiment of selected.run) {
      const report = await runOne(experiment, ctx);
      bars.push(...report.bars.map((bar) => ({ experiment: experiment.name, bar })));
      if (!quick && report.failed === 0) {
        writeExperiment({
          experiment: experiment.name,
          summary: experiment.summary,
          recordedAt: new Date().toISOString(),
          command,
          run: names,
          minutes: report.minutes,
          load: report.load,
          machine,
          rows: report.rows,
          bars: report.bars,
        });
        written.push(experiment.name);
      }
    }
  } finally {
    await server.stop();
    await sql.end();
    if (embedded) await embedded.stop();
  }
  console.log('\nthe bars');
  for (const { experiment, bar } of bars) console.log(`  ${`${experiment}:`.padEnd(19)} ${bar.what.padEnd(60)} ${bar.figure.padStart(24)}   ${bar.target.padEnd(8)}  ${bar.pass ? 'PASS' : 'MISS'}`);
  const minutes = (performance.now() - began) / 60_000;
  console.log(`\n${minutes.toFixed(1)} minutes; load average ${loadAtStart.toFixed(2)} at the start, ${os.loadavg()[0]!.toFixed(2)} at the end`);
  if (written.length > 0) {
    writeSummary(EXPERIMENTS.map((e) => e.name));
    console.log(`results written to bench/results/: ${written.map((name) => `${name}.md`).join(', ')}, summary.md`);
  }
  if (ctx.failures.length > 0) {
    console.error(`\nFAIL: ${ctx.failures.join('; ')}`);
    process.exit(1);
  }
}

/** Runs one experiment, with its heading and its bars printed; what it recorded, how long it took, and how many failures it added. */
async function runOne(experiment: Experiment, ctx: Context): Promise<Report & { minutes: number; load: { start: number; end: number }; failed: number }> {
  console.log(`\n${experiment.name}: ${experiment.summary}`);
  const report = new Report(experiment.name);
  const t0 = performance.now();
  const start = os.loadavg()[0]!;
  const failuresBefore = ctx.failures.length;
  await experiment.run(ctx, report);
  for (const b of report.bars) console.log(`  bar: ${b.what.padEnd(60)} ${b.figure.padStart(24)}   ${b.target.padEnd(8)}  ${b.pass ? 'PASS' : 'MISS'}`);
  return Object.assign(report, { minutes: (performance.now() - t0) / 60_000, load: { start, end: os.loadavg()[0]! }, failed: ctx.failures.length - failuresBefore });
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? (error.stack ?? error.message) : error);
  process.exit(1);
});
