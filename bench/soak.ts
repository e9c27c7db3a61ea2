// `npm run soak`: a bounded soak. One real Tessera process (started as `npm start` starts it) serves
// 64 connections of mixed claims and reads on several campaigns for a few minutes; every window
// records throughput, latency, answers by code, the server's RSS, PostgreSQL connections and the
// machine's load. It fails (exit 1) on a trend it cannot explain — memory that keeps growing,
// throughput that falls or a p99 that rises beyond what other processes taking the CPU account
// for, a CPU cost per request that grows — on any INTERNAL_SERVER_ERROR or lost connection, and on
// any ticket lost or given twice (checked in the database at the end). Prints a table and writes it
// to bench/results/soak.md and soak.json.
//
// Its parts, in bench/soak/: settings (the options and the workload), client and worker (the
// load), windows (what is recorded), machine (/proc and /metrics), maintenance (autovacuum's stand-in),
// verdict (the thresholds and trend checks), endState (the database at the end), report (the table
// and the results file).
//
//   npm run soak                                  4 minutes, 20 s windows (the default)
//   npm run soak -- --minutes 3 --window 20       any length; also --connections 64 --campaigns 8
//                                                 --tickets <per campaign> --warmup <seconds>
//   npm run soak -- --no-results                  write no results file (trial runs)
//   npm run soak -- --keep-db                     keep the database afterwards (kept anyway on failure)
//   npm run soak -- --no-maintenance              on a server with autovacuum off, do not stand in for it
//
// Uses DATABASE_URL's server when set (a database `tessera_soak` is dropped and created there), else
// an embedded PostgreSQL in .tessera/soak-pgdata. Not part of `npm test`.
import 'dotenv/config';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { startEmbeddedPostgres, type EmbeddedDatabase } from '../src/db/embedded';
import { migrate } from '../src/db/migrate';
import { sleep, until } from '../test/helpers/time';
import { ADMIN_KEY, freePort, gql, ROOT, Server } from './harness';
import { makeClient } from './soak/client';
import { checkDatabase } from './soak/endState';
import { CpuAccount, metricsOf, rssBytes } from './soak/machine';
import { maintain } from './soak/maintenance';
import { fmt, mb } from './soak/numbers';
import { printRow, printTableFooter, writeResults } from './soak/report';
import { CAMPAIGNS, CONNECTIONS, DATABASE, HOLD_TTL_S, KEEP_DB, MAINTAIN, METRICS_TOKEN, PARTNERS, POOL_SIZE, SECONDS, TICKETS, WINDOW_S, WINDOWS, WRITE_RESULTS } from './soak/settings';
import { EXPECTED_REFUSALS, FATAL_CODES, machineNote, MAX_ERROR_SHARE, trendChecks, type Check } from './soak/verdict';
import { clock, loadedPerCampaign, rowsOf, violationCount, violations, windowAt, windows } from './soak/windows';
import { worker } from './soak/worker';

async function main(): Promise<void> {
  let embedded: EmbeddedDatabase | undefined;
  let serverUrl = process.env.DATABASE_URL;
  if (!serverUrl) {
    embedded = await startEmbeddedPostgres({ dir: path.join(ROOT, '.tessera/soak-pgdata'), port: 54389 });
    serverUrl = embedded.url;
  }
  const dbUrl = new URL(serverUrl);
  dbUrl.pathname = `/${DATABASE}`;
  const admin = new Client({ connectionString: serverUrl });
  await admin.connect();
  // One soak at a time per PostgreSQL server: dropping the database under another run (FORCE ends
  // its sessions) would crash it. Whoever is connected is named, so a stray server can be found.
  const users = (await admin.query<{ pid: number; application_name: string }>('SELECT pid, application_name FROM pg_stat_activity WHERE datname = $1', [DATABASE])).rows;
  if (users.length > 0) {
    await admin.end();
    console.error(
      `soak: ${users.length} session(s) are connected to ${DATABASE} (backend pids ${users.map((u) => `${u.pid}${u.application_name ? ` ${u.application_name}` : ''}`).join(', ')}): ` +
        'another soak is running against this server, or a stopped one left its server behind. Not dropping it under them.',
    );
    process.exit(1);
  }
  await admin.query(`DROP DATABASE IF EXISTS ${DATABASE} WITH (FORCE)`);
  await admin.query(`CREATE DATABASE ${DATABASE}`);
  await admin.end();
  await migrate(dbUrl.toString());
  const sql = new Client({ connectionString: dbUrl.toString() });
  // A connection lost between queries (the database restarted, the session terminated) fails the
  // next query, and the run with it, through the normal path: never an unhandled 'error' event.
  sql.on('error', (error) => console.error(`soak: the monitoring connection failed: ${error.message}`));
  await sql.connect();
  const version = (await sql.query('SHOW server_version')).rows[0].server_version as string;

  // One process, the defaults of production but for the pool size, stated so the check below holds.
  const server = new Server(await freePort(), { DATABASE_URL: dbUrl.toString(), WEB_CONCURRENCY: '1', DATABASE_POOL_SIZE: String(POOL_SIZE), METRICS_TOKEN });
  await server.start();
  const pid = server.pid!;
  // Interrupted (Ctrl-C): the server must not outlive the soak.
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      if (server.pid !== undefined) process.kill(server.pid, 'SIGTERM');
      console.error(`\nsoak: ${signal}; server stopped, database ${DATABASE} left as it was`);
      process.exit(130);
    });
  }
  const where = embedded ? 'embedded' : 'DATABASE_URL';
  console.log(
    `soak: ${WINDOWS} × ${WINDOW_S} s, ${CONNECTIONS} connections, ${CAMPAIGNS} campaigns × ${fmt(TICKETS)} tickets, on PostgreSQL ${version} (${where}), ` +
      `${os.cpus().length} cores, Node ${process.version}, server pid ${pid}\n`,
  );

  let passed = false;
  const failures: string[] = [];
  const client = makeClient(server.url);
  try {
    // Setup: partners, campaigns, tickets.
    const keys: string[] = [];
    for (let i = 0; i < PARTNERS; i += 1) {
      keys.push((await gql(server.url, ADMIN_KEY, `mutation { createPartner(input: { name: "soak ${i}" }) { apiKey } }`)).createPartner.apiKey);
    }
    const campaigns: string[] = [];
    const loadStart = performance.now();
    for (let i = 0; i < CAMPAIGNS; i += 1) {
      const id = (await gql(server.url, ADMIN_KEY, `mutation { createCampaign(input: { name: "soak ${i}" }) { campaign { id } } }`)).createCampaign.campaign.id as string;
      const loaded = (await gql(server.url, ADMIN_KEY, `mutation { generateTickets(campaignId: "${id}", count: ${TICKETS}, prefix: "S${i}-") { loaded } }`)).generateTickets.loaded as number;
      await gql(server.url, ADMIN_KEY, `mutation { openCampaign(id: "${id}") { campaign { id } } }`);
      loadedPerCampaign.set(id, loaded);
      campaigns.push(id);
    }
    await sql.query('VACUUM ANALYZE tickets');
    console.log(`loaded ${fmt(CAMPAIGNS * TICKETS)} tickets in ${((performance.now() - loadStart) / 1000).toFixed(1)} s\n`);

    // The run.
    const autovacuum = (await sql.query('SHOW autovacuum')).rows[0].autovacuum === 'on';
    const standIn = !autovacuum && MAINTAIN;
    const maintenanceNote = autovacuum
      ? 'autovacuum on (the server maintains the tables)'
      : standIn
        ? "autovacuum off on this server: the soak does autovacuum's VACUUM / ANALYZE itself, once per autovacuum_naptime at a window's end, at autovacuum's thresholds (column maintenance)"
        : 'autovacuum off on this server and --no-maintenance: the tables are never vacuumed nor analyzed during the run';
    console.log(`${maintenanceNote}\n`);
    const cpu = new CpuAccount(pid, sql);
    const checkpointCount = async () =>
      (await sql.query('SELECT (checkpoints_timed + checkpoints_req)::int AS n FROM pg_stat_bgwriter')).rows[0].n as number;
    let checkpoints = await checkpointCount();
    clock.t0 = performance.now();
    const stop = { at: clock.t0 + SECONDS * 1000 };
    const rssTimer = setInterval(() => {
      const rss = rssBytes(pid);
      if (rss !== null) windowAt(performance.now()).rssSamples.push(rss);
    }, 1000);
    const runId = Date.now().toString(36);
    const workers = Promise.all(Array.from({ length: CONNECTIONS }, (_, n) => worker(n, client.call, keys, campaigns, runId, stop)));
    let serverGone = false;
    for (let i = 0; i < WINDOWS; i += 1) {
      await sleep(Math.max(0, clock.t0 + (i + 1) * WINDOW_S * 1000 - performance.now()));
      const w = windows[i]!;
      if (server.pid === undefined) {
        serverGone = true;
        stop.at = 0; // the workers stop at once rather than fail until the deadline
        failures.push(`the server process exited during window ${i + 1}`);
        break;
      }
      w.cpu = await cpu.shares();
      w.load1 = os.loadavg()[0]!;
      const rss = rssBytes(pid);
      if (rss !== null) w.rssSamples.push(rss);
      try {
        const m = await metricsOf(server.url);
        w.heapMb = mb(m.get('tessera_nodejs_heap_size_used_bytes') ?? NaN);
      } catch {
        // counted below: the window has no heap figure
      }
      const c = (
        await sql.query(
          `SELECT count(*) FILTER (WHERE datname = current_database() AND application_name = 'tessera')::int AS server,
                  count(*) FILTER (WHERE backend_type = 'client backend')::int AS all
             FROM pg_stat_activity`,
        )
      ).rows[0];
      w.pgServer = c.server;
      w.pgAll = c.all;
      const nowCheckpoints = await checkpointCount();
      w.checkpoints = nowCheckpoints - checkpoints;
      checkpoints = nowCheckpoints;
      if (standIn) w.maintenance = await maintain(sql);
      printRow(rowsOf()[i]!);
    }
    clearInterval(rssTimer);
    await workers;
    if (serverGone) throw new Error(failures.join('; '));

    // The end state: let every hold lapse and the sweeper write it back, then compare with the database.
    await until(
      async () => (await sql.query("SELECT count(*)::int AS n FROM allocations WHERE status = 'HELD'")).rows[0].n === 0,
      { message: 'every hold to lapse and be swept', timeoutMs: (HOLD_TTL_S + 20) * 1000, intervalMs: 250 },
    );
    const ticketChecks = await checkDatabase(sql, server.url, keys[0]!);
    const rows = rowsOf();
    printTableFooter();

    // Verdict.
    const all = new Map<string, number>();
    let requests = 0;
    for (const r of rows) {
      requests += r.rps * WINDOW_S;
      for (const [code, n] of r.codes) all.set(code, (all.get(code) ?? 0) + n);
    }
    const fatal = [...all].filter(([code]) => FATAL_CODES.has(code) || code.startsWith('NETWORK_') || code.startsWith('HTTP_5'));
    const other = [...all].filter(([code]) => !EXPECTED_REFUSALS.has(code) && !fatal.some(([f]) => f === code));
    const otherCount = other.reduce((a, [, n]) => a + n, 0);
    const maxPg = Math.max(...rows.map((r) => r.pgServer).filter(Number.isFinite));
    const trends = trendChecks(rows);
    const checks: Check[] = [
      ...trends.checks,
      { what: 'fatal answers', figures: fatal.length ? fatal.map(([c, n]) => `${c} ${fmt(n)}`).join(', ') : 'none (INTERNAL_SERVER_ERROR, lost connections, timeouts, 5xx, SOLD_OUT, ALL_HELD)', pass: fatal.length === 0 },
      {
        what: 'other errors',
        figures: `${fmt(otherCount)} of ${fmt(requests)} requests${other.length ? ` (${other.map(([c, n]) => `${c} ${n}`).join(', ')})` : ''} (bound ${MAX_ERROR_SHARE * 100}%)`,
        pass: otherCount <= MAX_ERROR_SHARE * requests,
      },
      { what: 'server connections', figures: `at most ${maxPg} (DATABASE_POOL_SIZE ${POOL_SIZE})`, pass: maxPg <= POOL_SIZE },
      ...ticketChecks,
      {
        what: 'answers checked during the run',
        figures: violationCount.n === 0 ? 'every stats read had allocated + held + available = total = loaded; every allocation read matched its claim' : `${violationCount.n} violations: ${violations.join('; ')}`,
        pass: violationCount.n === 0,
      },
    ];
    for (const c of checks) if (!c.pass) failures.push(`${c.what}: ${c.figures}`);
    passed = failures.length === 0;

    const machine = machineNote(rows);
    console.log(`\n${trends.note}`);
    for (const c of checks) console.log(`${c.pass ? 'ok  ' : 'FAIL'} ${c.what}: ${c.figures}`);
    console.log(`${machine}\n\n${passed ? 'PASS' : `FAIL: ${failures.join('; ')}`}`);
    if (WRITE_RESULTS) writeResults({ rows, checks, note: trends.note, machine, maintenance: maintenanceNote, passed, version, where, requests });
  } finally {
    client.close();
    // Server.stop() waits for an exit; a server already gone (killed) has none left to give.
    if (server.pid !== undefined) await server.stop();
    if (passed && !KEEP_DB) {
      await sql.end();
      const drop = new Client({ connectionString: serverUrl });
      await drop.connect();
      await drop.query(`DROP DATABASE IF EXISTS ${DATABASE} WITH (FORCE)`);
      await drop.end();
    } else {
      await sql.end();
      console.log(`database ${DATABASE} kept for inspection`);
    }
    if (embedded) await embedded.stop();
  }
  if (!passed) process.exit(1);
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? (error.stack ?? error.message) : error);
  process.exit(1);
});