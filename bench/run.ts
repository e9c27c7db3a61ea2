// `npm run bench`: what a claim costs, measured in one run on this machine, next to the baselines
// that say where Tessera stands:
//   - the floor: the MINIMAL claim of docs/PERFORMANCE.md (strategy A) on a bare ticket table —
//     what PostgreSQL itself does per claim here — at 16 and 64 clients (bench/sqlClaims.ts);
//   - Tessera's claim statements alone on Tessera's schema at 16 and 64 clients, against that floor:
//     the first look a claimTicket arriving alone runs (claimOne(), the bar), a group of claims
//     sharing one statement (claimGroup(), per claim), and the general statement of holds,
//     claimTickets and second looks (claimStatement());
//   - three ceilings at 64 connections, answers without a database: a bare node:http server (the
//     physical limit of one Node process), a minimal Apollo Server on Tessera's HTTP integration
//     (bench/ceilings/), and Tessera's own empty authenticated query;
//   - claimTicket over HTTP on one hot campaign (1, 16, 64 connections) and spread over 64
//     campaigns, each checked for lost and duplicated tickets; the same with ten webhook endpoints
//     configured against adjacent runs without (docs/WEBHOOKS.md); the same on a primary with a
//     streaming standby of its own, asynchronous against synchronous (issue 19; skipped without the
//     machine's initdb and pg_basebackup); one process against a cluster of workers; claim latency as
//     a 1,000,000-ticket pool fills; loading; the reads;
//   - hot and spread claims on campaigns loaded and opened just before, with no VACUUM or ANALYZE by
//     the bench, against the same campaigns after VACUUM ANALYZE, two rounds (issue 30);
//   - hot and spread claims before and after the database gains 10,000,000 allocations of closed
//     campaigns (issue 30);
//   - tracing (issue 32): hot and spread claims on a new instance with tracing on at ratio 1.0,
//     exporting OTLP to a receiver in a process of its own (bench/otlpReceiver.ts), against the same
//     claims on its untraced twin, in alternating runs;
//   - CPU per claim (issue 30): open-loop runs at COST_RATE requests a second, well under saturation,
//     reading the CPU time of the Tessera process and of PostgreSQL from /proc (bench/cpu.ts): the
//     empty query's, the minimal claim's (pgbench -R) and claimTicket's, hot and spread;
// then the issue's bars, each with its figure, target and PASS/MISS. Prints a table and rewrites
// the results section of docs/BENCHMARKS.md (between its bench markers).
//
//   npm run bench                    full run (~16 minutes here; ~6 of them writing the history)
//   npm run bench -- --quick         shorter runs, smaller pools (a smoke test; the doc is left alone)
//   npm run bench -- --no-pgbench    measure the floor and the statement through pg even when pgbench is installed
//
// Uses DATABASE_URL's server when set (databases `tessera_bench` and `tessera_bench_sql` are dropped
// and created there), else an embedded PostgreSQL in .tessera/bench-pgdata. A MISS is a measurement,
// not a failure; the bench fails (exit 1) when a ticket was lost or given twice, or a claim run
// answered errors.
import 'dotenv/config';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { createRequire } from 'node:module';
import path from 'node:path';
import { promisify } from 'node:util';
import { Client } from 'pg';
import { OPERATOR_PARTNER_ID } from '../src/auth';
import { DEFAULT_WEB_CONCURRENCY } from '../src/config';
import { COUNT_ALLOCATED } from '../src/db/countAllocations';
import { startEmbeddedPostgres, type EmbeddedDatabase } from '../src/db/embedded';
import { migrate } from '../src/db/migrate';
import { pgbouncerPath, startPgBouncerFor } from '../test/helpers/pgbouncer';
import { childrenOf, untilEveryWorkerServes } from '../test/helpers/process';
import { startReplicaPair } from '../test/helpers/replica';
import { ticketsLiveTwice } from '../test/helpers/sql';
import { INTEGRATION } from './ceilings/integration';
import { cpuDuring, postmasterOf, treeCpu } from './cpu';
import { citusBench } from './citus';
import { ADMIN_KEY, ChildServer, codeVersion, freePort, gql, httpLoad, pgbenchVersion, ROOT, sequentialLatency, Server, type LoadResult } from './harness';
import { startOtlpReceiver, type Received } from './otlpReceiver';
import { GROUP_SIZE, SqlClaims, type SqlClaimResult } from './sqlClaims';
import { sealSecret } from '../src/webhooks/secrets';
import { newWebhookSecret } from '../src/webhooks/signature';

const { verifyBallot } = createRequire(__filename)('../bin/verify-ballot.js') as {
  verifyBallot(ballot: unknown, entries: unknown[]): { ok: boolean; summary?: string; mismatch?: string };
};

const KNOWN = new Set(['--quick', '--no-pgbench', '--citus']);
for (const a of process.argv.slice(2)) {
  if (!KNOWN.has(a)) {
    console.error(`bench: unknown option ${a} (known: ${[...KNOWN].join(' ')})`);
    process.exit(2);
  }
}
const quick = process.argv.includes('--quick');
const execFileAsync = promisify(execFile);
const SECONDS = quick ? 2 : 5;
/** Claims per run of a fill step, and runs per step: 0.1% of the pool a run, 0.3% of it a step (30% of what is left at 99%). */
const FILL_CLAIMS = quick ? 100 : 1_000;
const FILL_RUNS = 3;
/** Load on a ceiling server of its own before it is measured: a cold Node process answers at a fraction of its speed while V8 compiles. */
const WARMUP_SECONDS = quick ? 1 : 2;
const BIG = quick ? 100_000 : 1_000_000;
const CONNECTIONS = [1, 16, 64];
/** The floor and the statement alone are measured at these client counts. */
const SQL_CLIENTS = [16, 64] as const;
/** Rows of the floor's bare table, and tickets of the statement's campaign: more than a run can claim. */
const SQL_ROWS = quick ? 100_000 : 300_000;
const SPREAD_CAMPAIGNS = 64;
/** Rounds of tracing on and off, alternating (issue 32). */
/** Tracing's A/B: new pairs of instances, alternating runs within each (two instances of the same code differ by up to 7% in CPU per claim for as long as they run). */
const TRACING_PAIRS = 3;
const TRACING_ROUNDS_PER_PAIR = 2;
/** The cost runs (issue 30): requests offered per second, well under saturation, for this long. */
const COST_RATE = quick ? 200 : 500;
const COST_SECONDS = quick ? 3 : 15;
/** Tickets of the campaigns claimed right after their load (issue 30): the hot one, and each of 64 spread ones. */
const FRESH_TICKETS = quick ? 50_000 : 200_000;
const FRESH_SPREAD_TICKETS = quick ? 500 : 1_000;
/** The history of writeHistory (issue 30): allocations of closed campaigns, over this many campaigns. */
const HISTORY_ALLOCATIONS = quick ? 200_000 : 10_000_000;
const HISTORY_CAMPAIGNS = 100;
const SPREAD_TICKETS = quick ? 1_000 : 3_000;

/** A claim of run `run`: its holder names the run, so the run's allocations are counted apart from every other's. */
const CLAIM = (campaignId: string, run: string) =>
  JSON.stringify({
    query: `mutation { claimTicket(input: { campaignId: "${campaignId}", holder: "${run}" }) { allocation { id sequence ticket { code } } error { code } } }`,
  });
let runs = 0;
/** The holder of the next claim run. */
const nextRun = () => `bench-${(runs += 1)}`;
const TYPENAME = JSON.stringify({ query: '{ __typename }' });
const CLAIMED = '"allocation":{"id"';

interface Row {
  what: string;
  value: string;
}
const rows: Row[] = [];
const began = performance.now();
const record = (what: string, value: string) => {
  rows.push({ what, value });
  console.log(`${`[${Math.round((performance.now() - began) / 1000)} s]`.padStart(8)} ${what.padEnd(72)} ${value}`);
};
interface Bar {
  what: string;
  figure: string;
  target: string;
  pass: boolean;
}
const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
const ms = (n: number) => `${Math.round(n * 10) / 10} ms`;
const x = (n: number) => `${n.toFixed(2)}×`;
const ratio = (a: number, b: number) => x(a / b);
const signed = (n: number) => `${n >= 0 ? '+' : '−'}${ms(Math.abs(n))}`;
const perSecond = (r: { rps: number; p50: number; p99: number }) => `${fmt(r.rps)}/s  p50 ${ms(r.p50)}  p99 ${ms(r.p99)}`;
const http = (r: LoadResult) => ({ rps: r.requestsPerSecond, p50: r.p50, p99: r.p99 });
const sqlRate = (r: SqlClaimResult) => ({ rps: r.claimsPerSecond, p50: r.p50, p99: r.p99 });

/** Lost and duplicated tickets over the whole run (every claim run adds to them). */
const integrity = { lost: 0, duplicated: 0 };

async function main(): Promise<void> {
  // --citus: only the comparison with a Citus cluster (bench/citus.ts).
  if (process.argv.includes('--citus')) {
    process.exitCode = (await citusBench({ quick })) > 0 ? 1 : 0;
    return;
  }
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
  const pgbench = process.argv.includes('--no-pgbench') ? null : pgbenchVersion();
  const where = embedded ? 'embedded' : `DATABASE_URL, ${dbUrl.host}`;
  const machine = {
    nproc: os.availableParallelism(),
    cpu: os.cpus()[0]?.model.trim() ?? 'unknown CPU',
    memory: `${Math.round(os.totalmem() / 2 ** 30)} GiB`,
    version,
    where,
    autovacuum,
    pgbench,
    code: codeVersion(),
  };

  // One process, whatever the default; rate limits far above what the bench sends (still counted).
  // WEBHOOK_SECRET_KEY: the webhook phase below configures endpoints, which production allows only with it.
  const serverEnv = { DATABASE_URL: dbUrl.toString(), RATE_LIMIT_POINTS_PER_SECOND: '10000000', WEBHOOK_SECRET_KEY: BENCH_WEBHOOK_KEY.toString('base64') };
  const server = new Server(await freePort(), { ...serverEnv, WEB_CONCURRENCY: '1' });
  await server.start();
  console.log(
    `bench${quick ? ' --quick' : ''} — code at ${machine.code} — nproc ${machine.nproc} (${machine.cpu}), ${machine.memory}, Node ${process.version}, ` +
      `PostgreSQL ${version} (${where}), autovacuum ${autovacuum ? 'on' : 'OFF'}, ${pgbench ?? 'no pgbench: SQL load through pg'}, load average ${loadAtStart.toFixed(2)}`,
  );
  if (!autovacuum) console.log('autovacuum is OFF on this server: nothing removes dead rows but the VACUUMs the bench runs between phases.');
  if (loadAtStart > machine.nproc) console.log(`warning: load average ${loadAtStart.toFixed(2)} on ${machine.nproc} cores — something else is running; the figures will be low.`);
  console.log('');
  const failures: string[] = [];
  const bars: Bar[] = [];
  try {
    const partnerKey = (await gql(server.url, ADMIN_KEY, 'mutation { createPartner(input: { name: "bench" }) { apiKey } }')).createPartner.apiKey;
    /** Issue 30's load bars: rows/s of generateTickets and of the CLI, claims/s during loads ÷ alone (open-loop). */
    const loads: { generated?: number; cli?: number; claimsDuring?: number } = {};
    const newCampaign = async (name: string) =>
      (await gql(server.url, ADMIN_KEY, `mutation { createCampaign(input: { name: "${name}" }) { campaign { id } } }`)).createCampaign.campaign.id as string;
    const open = (id: string) => gql(server.url, ADMIN_KEY, `mutation { openCampaign(id: "${id}") { campaign { id } } }`);

    // Loading (issue 30: loads at COPY speed): generateTickets of a million; loadTickets, 10,000 random
    // codes a call, one call at a time; and `npx tessera load` of a million-code CSV (its default:
    // 10,000 a call, two calls in flight) — each into a campaign of its own.
    const big = await newCampaign('one million');
    let t0 = performance.now();
    await gql(server.url, ADMIN_KEY, `mutation { generateTickets(campaignId: "${big}", count: ${BIG}) { loaded } }`);
    loads.generated = BIG / ((performance.now() - t0) / 1000);
    record(`load ${fmt(BIG)} tickets with generateTickets`, `${fmt(loads.generated)} rows/s  (bar: 200,000)`);
    const loaded = await newCampaign('loaded');
    const batches = quick ? 10 : 100;
    const randomCodes = (n: number, prefix: string) => Array.from({ length: n }, () => `${prefix}${randomBytes(6).toString('hex').toUpperCase()}`);
    t0 = performance.now();
    for (let b = 0; b < batches; b += 1) {
      await gql(server.url, ADMIN_KEY, 'mutation($id: ID!, $codes: [String!]!) { loadTickets(campaignId: $id, codes: $codes) { loaded } }', { id: loaded, codes: randomCodes(10_000, `L${b}-`) });
    }
    record(`load ${fmt(batches * 10_000)} random codes with loadTickets (10,000 a call, one call at a time)`, `${fmt((batches * 10_000) / ((performance.now() - t0) / 1000))} rows/s`);
    const csv = path.join(os.tmpdir(), `tessera-bench-codes-${process.pid}.csv`);
    writeFileSync(csv, `code\n${randomCodes(BIG, 'SEAT-').join('\n')}\n`);
    try {
      const fromCsv = await newCampaign('from a CSV');
      t0 = performance.now();
      await execFileAsync(process.execPath, [path.join(ROOT, 'bin/tessera.js'), 'load', '--campaign', fromCsv, '--file', csv, '--url', server.url.replace(/\/graphql$/, ''), '--key', ADMIN_KEY]);
      const seconds = (performance.now() - t0) / 1000;
      const stored = (await sql.query('SELECT count(*)::int AS n FROM tickets WHERE campaign_id = $1', [fromCsv])).rows[0].n as number;
      if (stored !== BIG) failures.push(`npx tessera load of ${fmt(BIG)} codes stored ${fmt(stored)}`);
      loads.cli = BIG / seconds;
      record(`load a ${fmt(BIG)}-code CSV with npx tessera load (its defaults: 10,000 a call, 2 in flight; the CLI's process included)`, `${fmt(loads.cli)} codes/s  (bar: 150,000)`);
    } finally {
      rmSync(csv, { force: true });
    }
    // What a load past autovacuum's threshold adds to itself (db/loadTickets.ts, analyzeIfStale).
    const ticketRows = (await sql.query('SELECT count(*)::int AS n FROM tickets')).rows[0].n as number;
    t0 = performance.now();
    await sql.query('ANALYZE tickets');
    record(`ANALYZE tickets of ${fmt(ticketRows)} rows (what a load past the threshold adds to itself)`, ms(performance.now() - t0));

    // The pools of the claim runs: one hot campaign big enough never to run dry, and 64 cool ones.
    const pool = await newCampaign('throughput');
    await gql(server.url, ADMIN_KEY, `mutation { generateTickets(campaignId: "${pool}", count: ${quick ? 100_000 : 400_000}) { loaded } }`);
    await open(pool);
    const cool = await Promise.all(Array.from({ length: SPREAD_CAMPAIGNS }, (_, i) => newCampaign(`cool ${i}`)));
    for (const id of cool) await gql(server.url, ADMIN_KEY, `mutation { generateTickets(campaignId: "${id}", count: ${SPREAD_TICKETS}) { loaded } }`);
    await Promise.all(cool.map((id) => open(id)));

    await vacuum(sql, { analyze: true });

    // Ceilings: answers without a database, at 64 connections (Tessera's also at 1 and 16).
    // Tessera warmed up like the other two (bench/ceilings/ servers), on the same request.
    await httpLoad({ url: server.url, key: partnerKey, body: TYPENAME, connections: 64, seconds: WARMUP_SECONDS });
    const ceiling: Record<number, LoadResult> = {};
    for (const c of CONNECTIONS) {
      ceiling[c] = await httpLoad({ url: server.url, key: partnerKey, body: TYPENAME, connections: c, seconds: SECONDS });
      checkAnswers(ceiling[c]!, `Tessera's ceiling at ${c} connections`, failures);
      record(`ceiling: Tessera, { __typename } with a partner key, ${c} connections`, perSecond(http(ceiling[c]!)));
    }
    const apollo = await childCeiling('bench/ceilings/minimalApollo.ts', failures);
    record(`ceiling: minimal Apollo Server 5 (${INTEGRATION}), 64 connections`, `${perSecond(http(apollo))}  Tessera ${ratio(ceiling[64]!.requestsPerSecond, apollo.requestsPerSecond)}`);
    const bare = await childCeiling('bench/ceilings/bareHttp.ts', failures);
    record('ceiling: bare node:http, fixed JSON (the physical limit), 64 connections', `${perSecond(http(bare))}  Tessera ${ratio(ceiling[64]!.requestsPerSecond, bare.requestsPerSecond)}`);

    // Claims on one campaign while loads run into others (issue 30: claims keep ≥ 0.8× their rate).
    // Each pair: a run alone, then the same run while generateTickets of BIG tickets follow one
    // another into new campaigns for the whole run. Open-loop at COST_RATE offered (the bar: on two
    // cores a load takes one of them, so a closed loop that already fills both must lose a share),
    // and closed-loop at 64 connections, reported beside it.
    {
      const loadsDuring = async (claims: Promise<LoadResult>): Promise<{ claims: LoadResult; rowsPerSecond: number }> => {
        let claimsDone = false;
        void claims.then(() => (claimsDone = true), () => (claimsDone = true));
        const t = performance.now();
        let rows = 0;
        while (!claimsDone) {
          const id = await newCampaign('loaded during claims');
          rows += (await gql(server.url, ADMIN_KEY, `mutation { generateTickets(campaignId: "${id}", count: ${BIG}) { loaded } }`)).generateTickets.loaded as number;
        }
        return { claims: await claims, rowsPerSecond: rows / ((performance.now() - t) / 1000) };
      };
      for (const [label, shape] of [
        [`open-loop at ${COST_RATE}/s offered`, { connections: 16, rate: COST_RATE }],
        ['64 connections, closed-loop', { connections: 64 }],
      ] as const) {
        const claimRun = (run: string) =>
          httpLoad({ url: server.url, key: partnerKey, body: CLAIM(pool, run), seconds: SECONDS, okPattern: CLAIMED, ...shape });
        const aloneRun = nextRun();
        const alone = await claimRun(aloneRun);
        await verify(sql, alone, aloneRun, [pool], shape.connections, `claims alone (${label})`, failures);
        const duringRun = nextRun();
        const during = await loadsDuring(claimRun(duringRun));
        await verify(sql, during.claims, duringRun, [pool], shape.connections, `claims during loads (${label})`, failures);
        const rate = (r: LoadResult) => r.ok / SECONDS;
        if ('rate' in shape) loads.claimsDuring = rate(during.claims) / rate(alone); // the open-loop run is the bar
        record(
          `claimTicket on a hot campaign, ${label}, while generateTickets loads ${fmt(BIG)} at a time into others ÷ alone`,
          `${ratio(rate(during.claims), rate(alone))}  (${fmt(rate(during.claims))} against ${fmt(rate(alone))} claims/s; p50 ${during.claims.p50} against ${alone.p50} ms, p99 ${during.claims.p99} against ${alone.p99} ms; loads meanwhile ${fmt(during.rowsPerSecond)} rows/s)`,
        );
      }
    }

    // The floor and the claim statements alone, in a database of their own, alternating so that
    // drift in the machine's speed falls on all of them alike.
    const floor: Record<number, SqlClaimResult> = {};
    const statement: Record<number, SqlClaimResult> = {};
    const firstLook: Record<number, SqlClaimResult> = {};
    const group: Record<number, SqlClaimResult> = {};
    const sqlClaims = await SqlClaims.create(serverUrl, { floorRows: SQL_ROWS, statementRows: SQL_ROWS, pgbench: pgbench !== null });
    const tool = pgbench ? 'pgbench' : 'pg';
    // CPU per claim (issue 30): PostgreSQL's whole server, read from /proc — where it runs here.
    const postmaster = await postmasterOf(sql);
    let floorCpu: { perClaim: number; rate: number } | null = null;
    try {
      if (postmaster) {
        const measured = await cpuDuring(
          () => treeCpu(postmaster),
          () => sqlClaims.floorAtRate(16, COST_SECONDS, COST_RATE),
        );
        if (measured.result) {
          floorCpu = { perClaim: measured.seconds / measured.result.claimed, rate: measured.result.claimsPerSecond };
          record(
            `CPU per claim: the minimal claim at ${COST_RATE}/s offered (pgbench -R, 16 clients, ${COST_SECONDS} s)`,
            `PostgreSQL ${us(floorCpu.perClaim)}  (${fmt(floorCpu.rate)} claims/s)`,
          );
        }
      }
      for (const c of SQL_CLIENTS) {
        floor[c] = await sqlClaims.floor(c, SECONDS);
        record(`floor: the minimal claim (PERFORMANCE.md, A), bare table, ${tool}, ${c} clients`, perSecond(sqlRate(floor[c]!)));
        if (floor[c]!.failed > 0) failures.push(`the floor at ${c} clients: ${floor[c]!.failed} statements failed`);
        for (const [which, label, into] of [
          ['statement', "statement alone: claimStatement() (claimTicket.ts), Tessera's schema", statement],
          ['firstLook', "first look alone: claimOne() (a claimTicket arriving alone), Tessera's schema", firstLook],
          ['group', `a group alone: claimGroup() of ${GROUP_SIZE} claimTickets in one statement, Tessera's schema, per claim`, group],
        ] as const) {
          const s = await sqlClaims.statement(which, c, SECONDS);
          into[c] = s;
          const lostHere = Math.max(0, s.check.allocatedTickets - s.check.activeAllocations);
          const twiceHere = s.check.twice + Math.max(0, s.check.activeAllocations - s.check.allocatedTickets);
          integrity.lost += lostHere;
          integrity.duplicated += twiceHere;
          if (lostHere + twiceHere > 0) failures.push(`${label} at ${c} clients: ${JSON.stringify(s.check)}`);
          if (s.failed > 0) failures.push(`${label} at ${c} clients: ${s.failed} statements failed`);
          if (s.claimed === 0) failures.push(`${label} at ${c} clients: nothing claimed`);
          const empty = s.statements - s.claimed;
          record(
            `${label}, ${tool}, ${c} clients`,
            `${perSecond(sqlRate(s))}  ${ratio(s.claimsPerSecond, floor[c]!.claimsPerSecond)} floor` +
              `${empty > 0 ? `  (${fmt(empty)} of ${fmt(s.statements)} statements took nothing)` : ''}  lost ${lostHere}, duplicated ${twiceHere}`,
          );
        }
      }
    } finally {
      await sqlClaims.drop(serverUrl);
    }

    // claimTicket over HTTP on one hot campaign.
    const claims: Record<number, LoadResult> = {};
    for (const c of CONNECTIONS) {
      await vacuum(sql);
      const run = nextRun();
      const r = await httpLoad({ url: server.url, key: partnerKey, body: CLAIM(pool, run), connections: c, seconds: SECONDS, okPattern: CLAIMED });
      claims[c] = r;
      const v = await verify(sql, r, run, [pool], c, `claims on one hot campaign at ${c} connections`, failures);
      const versus = [`${ratio(r.requestsPerSecond, ceiling[c]!.requestsPerSecond)} ceiling`];
      if (floor[c]) versus.push(`${ratio(r.requestsPerSecond, floor[c]!.claimsPerSecond)} floor`);
      if (firstLook[c]) versus.push(`${ratio(r.requestsPerSecond, firstLook[c]!.claimsPerSecond)} first look alone`);
      record(`claimTicket over HTTP, one hot campaign, ${c} connections`, `${perSecond(http(r))}  ${versus.join('  ')}  ${v}`);
    }
    const hot = claims[64]!;

    // The same 64 connections spread over 64 campaigns, each request for the next of them in turn:
    // concurrent claims rarely share a campaign, so group claims rarely form.
    await vacuum(sql);
    const spreadRun = nextRun();
    const spreadBodies = cool.map((id) => CLAIM(id, spreadRun));
    const spread = await httpLoad({ url: server.url, key: partnerKey, body: spreadBodies[0]!, bodies: spreadBodies, connections: 64, seconds: SECONDS, okPattern: CLAIMED });
    const spreadCheck = await verify(sql, spread, spreadRun, cool, 64, 'claims spread over 64 campaigns', failures);
    record(
      `claimTicket over HTTP, spread over ${SPREAD_CAMPAIGNS} campaigns (round-robin), 64 connections`,
      `${perSecond(http(spread))}  ${ratio(spread.requestsPerSecond, ceiling[64]!.requestsPerSecond)} ceiling  ${ratio(spread.requestsPerSecond, floor[64]!.claimsPerSecond)} floor  ` +
        `${ratio(spread.requestsPerSecond, hot.requestsPerSecond)} hot  ${spreadCheck}`,
    );

    // Right after a load (issue 30): what a drop gets when it opens as soon as it is loaded, on a
    // server that has been serving — no VACUUM or ANALYZE by the bench (Tessera's own at the load,
    // db/loadTickets.ts, is part of what is measured: a load under 10% of the table does not
    // analyze) — against the same campaigns right after a VACUUM ANALYZE. Two rounds, each on
    // campaigns of its own, loaded and opened just before.
    /** One claim run at 64 connections on `ids` (each request for the next of them in turn), verified and recorded as `claimTicket <label>`. */
    const claimRunOn = async (ids: readonly string[], label: string): Promise<LoadResult> => {
      const run = nextRun();
      const bodies = ids.map((id) => CLAIM(id, run));
      const r = await httpLoad({ url: server.url, key: partnerKey, body: bodies[0]!, bodies, connections: 64, seconds: SECONDS, okPattern: CLAIMED });
      const check = await verify(sql, r, run, [...ids], 64, `claims ${label}`, failures);
      record(`claimTicket ${label}`, `${perSecond(http(r))}  ${check}`);
      return r;
    };
    const meanRate = (runs: LoadResult[]) => runs.reduce((sum, r) => sum + r.requestsPerSecond, 0) / runs.length;
    const afterLoad = { hot: [] as LoadResult[], spread: [] as LoadResult[] };
    const afterAnalyze = { hot: [] as LoadResult[], spread: [] as LoadResult[] };
    for (let round = 1; round <= 2; round += 1) {
      const hotId = await newCampaign(`fresh hot ${round}`);
      await gql(server.url, ADMIN_KEY, `mutation { generateTickets(campaignId: "${hotId}", count: ${FRESH_TICKETS}) { loaded } }`);
      const coolIds = await Promise.all(Array.from({ length: SPREAD_CAMPAIGNS }, (_, i) => newCampaign(`fresh cool ${round}.${i}`)));
      for (const id of coolIds) await gql(server.url, ADMIN_KEY, `mutation { generateTickets(campaignId: "${id}", count: ${FRESH_SPREAD_TICKETS}) { loaded } }`);
      await Promise.all([hotId, ...coolIds].map((id) => open(id)));
      for (const [state, into] of [
        ['right after its load (no VACUUM or ANALYZE by the bench)', afterLoad],
        ['after VACUUM ANALYZE', afterAnalyze],
      ] as const) {
        if (into === afterAnalyze) await vacuum(sql, { analyze: true });
        into.hot.push(await claimRunOn([hotId], `hot, 64 connections, ${state}, round ${round}`));
        into.spread.push(await claimRunOn(coolIds, `spread, 64 connections, ${state}, round ${round}`));
      }
    }
    for (const name of ['hot', 'spread'] as const) {
      record(
        `claimTicket ${name}, 64 connections: right after the load ÷ after VACUUM ANALYZE (means of 2 rounds)`,
        `${fmt(meanRate(afterLoad[name]))} / ${fmt(meanRate(afterAnalyze[name]))}/s = ${ratio(meanRate(afterLoad[name]), meanRate(afterAnalyze[name]))}  ` +
          `(${ratio(meanRate(afterLoad[name]), floor[64]!.claimsPerSecond)} floor)`,
      );
    }

    // CPU per claim (issue 30): open-loop runs at COST_RATE a second, well under saturation, reading
    // the CPU time of the Tessera process and of PostgreSQL's whole server from /proc: the empty
    // authenticated query (what Node spends on a request), then claims hot and spread.
    const cost = await costPhase({ server, sql, postmaster, partnerKey, pool, cool, failures });

    /**
     * One hot and one spread claim run at 64 connections against `url`, each verified and recorded as
     * `claimTicket <name>, 64 connections, <label>`, with `versus` (ratios) when given.
     */
    const hotAndSpread = async (url: string, label: string, versus?: (name: 'hot' | 'spread', r: LoadResult) => string, on = { hot: pool, spread: cool }) => {
      const out: Partial<Record<'hot' | 'spread', LoadResult>> = {};
      for (const [name, bodiesOf] of [
        ['hot', (run: string) => [CLAIM(on.hot, run)]],
        ['spread', (run: string) => on.spread.map((id) => CLAIM(id, run))],
      ] as const) {
        await vacuum(sql);
        const run = nextRun();
        const bodies = bodiesOf(run);
        const r = await httpLoad({ url, key: partnerKey, body: bodies[0]!, bodies, connections: 64, seconds: SECONDS, okPattern: CLAIMED });
        const check = await verify(sql, r, run, name === 'hot' ? [on.hot] : on.spread, 64, `claims ${name}, ${label}`, failures);
        record(`claimTicket ${name}, 64 connections, ${label}`, versus ? `${perSecond(http(r))}  ${versus(name, r)}  ${check}` : perSecond(http(r)));
        out[name] = r;
      }
      return out as Record<'hot' | 'spread', LoadResult>;
    };

    // Behind PgBouncer 1.18 in transaction mode (issue 28): a second instance on the same database
    // through a PgBouncer the bench starts (DATABASE_POOLER=pgbouncer, the session settings as role
    // settings, no named prepared statements), the same hot and spread runs, against the floor and
    // against the runs straight to PostgreSQL above.
    const pooled = await pgbouncerPhase(serverUrl, dbUrl, serverEnv, async (pooledServer) => {
      await httpLoad({ url: pooledServer.url, key: partnerKey, body: CLAIM(pool, nextRun()), connections: 64, seconds: WARMUP_SECONDS });
      return hotAndSpread(pooledServer.url, 'behind PgBouncer (transaction mode)', (name, r) =>
        `${ratio(r.requestsPerSecond, floor[64]!.claimsPerSecond)} floor  ${ratio(r.requestsPerSecond, (name === 'hot' ? hot : spread).requestsPerSecond)} straight to PostgreSQL`,
      );
    });

    // The claim path with webhooks configured (issue 15's bar): ten enabled endpoints of another
    // partner, so every claim appends its event to the outbox and the dispatcher drains it, while
    // none is routed to them (deliveries are the dispatcher's work, not the claim's). Adjacent runs
    // with the endpoints disabled are the comparison, so the machine's drift falls on both alike.
    const webhooks = await webhookPhase(sql, (label) => hotAndSpread(server.url, label));
    for (const name of ['hot', 'spread'] as const) {
      record(`claimTicket ${name}: with ten webhook endpoints ÷ without (adjacent runs)`, ratio(webhooks.on[name].requestsPerSecond, webhooks.off[name].requestsPerSecond));
    }

    // Tracing (issue 32): pairs of new instances on the same database, alike but for tracing — one
    // on at ratio 1.0, exporting OTLP (protobuf over HTTP, the SDK's batch processor) to a receiver
    // in a process of its own (bench/otlpReceiver.ts), and its untraced twin — warmed up alike, then
    // in alternating runs (ABBA) on campaigns of their own. New instances, not the one above: that
    // one has served for minutes, and a new instance was 0.66x of it in its first round after a
    // warm-up (2026-12-06, 22:44 UTC). Several pairs, not one: two instances of the same code
    // differed by up to 7% in CPU per claim for as long as they ran (bench/tracingAb.ts --control,
    // 2026-12-07), so one pair's ratio says as much about the pair as about tracing. The receiver
    // counts the spans that arrived.
    const traceCampaigns = { hot: await newCampaign('traced hot'), spread: await Promise.all(Array.from({ length: SPREAD_CAMPAIGNS }, (_, i) => newCampaign(`traced cool ${i}`))) };
    await gql(server.url, ADMIN_KEY, `mutation { generateTickets(campaignId: "${traceCampaigns.hot}", count: ${quick ? 150_000 : 400_000}) { loaded } }`);
    for (const id of traceCampaigns.spread) await gql(server.url, ADMIN_KEY, `mutation { generateTickets(campaignId: "${id}", count: ${quick ? 2_000 : 6_000}) { loaded } }`);
    await Promise.all([traceCampaigns.hot, ...traceCampaigns.spread].map((id) => open(id)));
    await vacuum(sql, { analyze: true });
    const tracing = await tracingPhase(serverEnv, TRACING_PAIRS, async (tracedServer, plainServer, pair) => {
      // New instances: each warmed up on hot and spread claims for as long as a round (a cold V8
      // answers at a fraction of its speed).
      // (The traced one's warm-up claims are counted: their spans are among those exported.)
      let warmedTraced = 0;
      for (const warming of [tracedServer, plainServer]) {
        const hot = await httpLoad({ url: warming.url, key: partnerKey, body: CLAIM(traceCampaigns.hot, nextRun()), connections: 64, seconds: SECONDS });
        const warm = traceCampaigns.spread.map((id) => CLAIM(id, nextRun()));
        const spread = await httpLoad({ url: warming.url, key: partnerKey, body: warm[0]!, bodies: warm, connections: 64, seconds: SECONDS });
        if (warming === tracedServer) warmedTraced = hot.requests + spread.requests;
      }
      const on = { hot: [] as LoadResult[], spread: [] as LoadResult[] };
      const off = { hot: [] as LoadResult[], spread: [] as LoadResult[] };
      for (let round = 1; round <= TRACING_ROUNDS_PER_PAIR; round += 1) {
        // ABBA: traced first in every other round, across pairs too — the machine's drift falls on both alike.
        const runTraced = () => hotAndSpread(tracedServer.url, `tracing on (ratio 1.0), pair ${pair}, round ${round}`, undefined, traceCampaigns);
        const runPlain = () => hotAndSpread(plainServer.url, `tracing off (its twin), pair ${pair}, round ${round}`, undefined, traceCampaigns);
        let traced: Awaited<ReturnType<typeof runTraced>>;
        let plain: Awaited<ReturnType<typeof runPlain>>;
        if ((pair + round) % 2 === 0) {
          traced = await runTraced();
          plain = await runPlain();
        } else {
          plain = await runPlain();
          traced = await runTraced();
        }
        for (const name of ['hot', 'spread'] as const) {
          on[name].push(traced[name]);
          off[name].push(plain[name]);
        }
      }
      return { on, off, warmedTraced };
    });
    for (const name of ['hot', 'spread'] as const) {
      const on = tracing.results.flatMap((r) => r.on[name]);
      const off = tracing.results.flatMap((r) => r.off[name]);
      const pairs = tracing.results.map((r) => ratio(meanRate(r.on[name]), meanRate(r.off[name]))).join(', ');
      record(
        `claimTicket ${name}, 64 connections: tracing on (ratio 1.0) ÷ off (means of ${on.length} alternating runs, ${TRACING_PAIRS} new pairs of instances)`,
        `${fmt(meanRate(on))} / ${fmt(meanRate(off))}/s = ${ratio(meanRate(on), meanRate(off))} (the pairs: ${pairs})`,
      );
    }
    const tracedClaims = tracing.results.flatMap((r) => [...r.on.hot, ...r.on.spread]).reduce((sum, r) => sum + r.requests, 0) + tracing.results.reduce((sum, r) => sum + r.warmedTraced, 0);
    record(
      'spans exported while tracing was on (received by the bench\'s OTLP receiver), per traced claim (warm-ups included)',
      `${fmt(tracing.exported.spans)} spans in ${fmt(tracing.exported.requests)} requests (${fmt(tracing.exported.bytes / 1e6)} MB), ${(tracing.exported.spans / Math.max(1, tracedClaims)).toFixed(1)} per claim`,
    );

    // Synchronous commit (issue 19): claims on a primary with a streaming standby of its own,
    // asynchronous and synchronous in alternating runs on the same pair.
    const replication = await syncCommitPhase(serverEnv, failures);
    if (replication) {
      for (const c of SYNC_CONNECTIONS) {
        const a = replication.async[c]!;
        const y = replication.sync[c]!;
        record(`claimTicket hot, ${c} connection${c > 1 ? 's' : ''}, primary + asynchronous standby (mean of 2 runs)`, perSecond(a));
        record(`claimTicket hot, ${c} connection${c > 1 ? 's' : ''}, primary + synchronous standby (mean of 2 runs)`, perSecond(y));
        // One connection sends claims back to back: the time per claim is 1 / rate (finer than p50's whole milliseconds).
        const added = c === 1 ? `${signed(1000 / y.rps - 1000 / a.rps)} per claim` : `p50 ${signed(y.p50 - a.p50)}`;
        record(`synchronous ÷ asynchronous standby, ${c} connection${c > 1 ? 's' : ''}: claims/s, latency added`, `${ratio(y.rps, a.rps)}  ${added}`);
      }
    } else {
      record('synchronous commit: no PostgreSQL binaries with pg_basebackup here (set PG_BIN)', 'skipped');
    }

    // One process or a cluster of workers (WEB_CONCURRENCY) beside PostgreSQL on this machine:
    // alternating runs, so that drift in the machine's speed falls on both alike.
    const workers = Math.max(2, os.availableParallelism());
    const clustered = new Server(await freePort(), { ...serverEnv, WEB_CONCURRENCY: String(workers) });
    const ours = new Set(childrenOf(process.pid));
    await clustered.start();
    try {
      // Every worker serving, not just the first (/readyz answers as soon as one does).
      const primary = childrenOf(process.pid).filter((pid) => !ours.has(pid));
      if (primary.length !== 1) throw new Error(`cannot tell the clustered server's process among ${primary.join(', ')}`);
      await untilEveryWorkerServes(primary[0]!, clustered.port, workers, { timeoutMs: 90_000 });
      const byWorkers = new Map<number, LoadResult[]>([
        [1, []],
        [workers, []],
      ]);
      for (let round = 0; round < 2; round += 1) {
        for (const [n, target] of [[1, server], [workers, clustered]] as const) {
          await vacuum(sql);
          const run = nextRun();
          const r = await httpLoad({ url: target.url, key: partnerKey, body: CLAIM(pool, run), connections: 64, seconds: SECONDS, okPattern: CLAIMED });
          await verify(sql, r, run, [pool], 64, `claims with ${n} workers`, failures);
          byWorkers.get(n)!.push(r);
        }
      }
      const mean = (runs: LoadResult[]) => ({
        rps: runs.reduce((a, r) => a + r.requestsPerSecond, 0) / runs.length,
        p50: runs.reduce((a, r) => a + r.p50, 0) / runs.length,
        p99: runs.reduce((a, r) => a + r.p99, 0) / runs.length,
      });
      const one = mean(byWorkers.get(1)!);
      const many = mean(byWorkers.get(workers)!);
      record('claimTicket, hot, 64 connections, WEB_CONCURRENCY=1 (mean of 2 runs)', perSecond(one));
      record(`claimTicket, hot, 64 connections, WEB_CONCURRENCY=${workers} (mean of 2 runs)`, perSecond(many));
      record(`WEB_CONCURRENCY=${workers} ÷ WEB_CONCURRENCY=1, claims/s`, ratio(many.rps, one.rps));
      record(`faster here (the default is ${DEFAULT_WEB_CONCURRENCY})`, `WEB_CONCURRENCY=${many.rps > one.rps ? workers : 1}`);
      const clusterCeiling = await httpLoad({ url: clustered.url, key: partnerKey, body: TYPENAME, connections: 64, seconds: SECONDS });
      record(`ceiling: Tessera, { __typename }, 64 connections, WEB_CONCURRENCY=${workers}`, perSecond(http(clusterCeiling)));
    } finally {
      await clustered.stop();
    }

    // Flat claim cost as the pool fills (the big campaign, filled in bulk between runs: the dead
    // index entries of docs/PERFORMANCE.md pitfall 1 are all there — no VACUUM between these steps,
    // on purpose).
    await vacuum(sql, { analyze: true });
    await open(big);
    const p50s: Record<number, number> = {};
    // Each step: FILL_RUNS runs of FILL_CLAIMS claims, a small share of what is left even at 99% —
    // a 4-second run there took most of the last 1% and ended near 99.8% (a moving target) —
    // the step's p50 the mean of its runs' (autocannon gives each in whole milliseconds).
    for (const fill of [0, 0.5, 0.9, 0.99]) {
      await fillTo(sql, big, fill, BIG);
      const runs: LoadResult[] = [];
      for (let i = 0; i < FILL_RUNS; i += 1) {
        const run = nextRun();
        const r = await httpLoad({ url: server.url, key: partnerKey, body: CLAIM(big, run), connections: 16, seconds: 0 /* ignored: amount */, amount: FILL_CLAIMS, okPattern: CLAIMED });
        await verify(sql, r, run, [big], 16, `claims at ${fill * 100}% fill`, failures);
        runs.push(r);
      }
      p50s[fill] = runs.reduce((sum, r) => sum + r.p50, 0) / runs.length;
      record(
        `claimTicket at ${fill * 100}% fill of ${fmt(BIG)}, 16 connections, ${FILL_RUNS} × ${fmt(FILL_CLAIMS)} claims (no VACUUM after the bulk fill)`,
        `p50 ${ms(p50s[fill]!)} (${runs.map((r) => r.p50).join(' / ')})  p99 ${ms(Math.max(...runs.map((r) => r.p99)))}`,
      );
    }
    record('p50 at 99% fill / p50 at 0% fill', ratio(p50s[0.99]!, p50s[0]!));

    // Reads on the million-ticket campaign.
    const stats = await sequentialLatency(server.url, partnerKey, 'query($id: ID!) { campaign(id: $id) { stats { total allocated held available fillRate soldOutAt } } }', { id: big }, 50);
    record(`campaign.stats on ${fmt(BIG)} tickets (sequential)`, `p50 ${ms(stats.p50)}  p99 ${ms(stats.p99)}`);
    const timeline = await sequentialLatency(server.url, ADMIN_KEY, 'query($id: ID!) { campaign(id: $id) { timeline(bucket: MINUTE) { at allocated cumulative } } }', { id: big }, 10);
    record(`campaign.timeline(MINUTE) on ${fmt(BIG)} tickets`, `p50 ${ms(timeline.p50)}  p99 ${ms(timeline.p99)}`);
    const partners = await sequentialLatency(server.url, ADMIN_KEY, 'query($id: ID!) { campaign(id: $id) { partnerStats { partner { id } allocated held quota } } }', { id: big }, 10);
    record(`campaign.partnerStats on ${fmt(BIG)} tickets`, `p50 ${ms(partners.p50)}  p99 ${ms(partners.p99)}`);

    // A ballot of a million entries (issue 17: drawn in under a minute): entries written straight into
    // the table (entering is enterBallot's one-row insert; the draw is what scales), then drawBallot
    // over HTTP, then the published verifier on what the draw wrote.
    const draw = await ballotPhase(server.url, sql, failures);
    record(`drawBallot of ${fmt(BALLOT_ENTRIES)} entries (quantity 1–4) on ${fmt(BALLOT_TICKETS)} tickets, over HTTP`, `${(draw.ms / 1000).toFixed(1)} s  ${fmt(draw.winners)} winners`);
    record(`bin/verify-ballot.js on those ${fmt(BALLOT_ENTRIES)} entries (read from the database)`, `${(draw.verifyMs / 1000).toFixed(1)} s  ${draw.verdict}`);

    // The whole bench database once more, every campaign.
    const twice = (await ticketsLiveTwice(sql, null)).length;
    if (twice > 0) failures.push(`${twice} tickets have two live allocations`);
    record('tickets with two live allocations, whole bench database (must be 0)', String(twice));

    // History (issue 30): claims hot and spread before and after the database gains
    // HISTORY_ALLOCATIONS allocations of closed campaigns (writeHistory), two runs of each side.
    const historyRuns = async (label: string) => {
      const out = { hot: [] as LoadResult[], spread: [] as LoadResult[] };
      for (let round = 1; round <= 2; round += 1) {
        await vacuum(sql);
        out.hot.push(await claimRunOn([pool], `hot, 64 connections, ${label}, round ${round}`));
        await vacuum(sql);
        out.spread.push(await claimRunOn(cool, `spread, 64 connections, ${label}, round ${round}`));
      }
      return out;
    };
    const empty = await historyRuns('before the history');
    const history = await writeHistory(sql);
    record(
      `history: ${fmt(history.allocations)} allocations of ${HISTORY_CAMPAIGNS} closed campaigns written, then VACUUM ANALYZE`,
      `${(history.writeMs / 1000).toFixed(1)} s + ${(history.vacuumMs / 1000).toFixed(1)} s`,
    );
    const withHistory = await historyRuns(`with ${fmt(history.allocations)} allocations of closed campaigns`);
    for (const name of ['hot', 'spread'] as const) {
      record(
        `claimTicket ${name}, 64 connections: with the history ÷ before (means of 2 runs)`,
        `${fmt(meanRate(withHistory[name]))} / ${fmt(meanRate(empty[name]))}/s = ${ratio(meanRate(withHistory[name]), meanRate(empty[name]))}`,
      );
    }

    // The issue's bars.
    const atLeast = (what: string, value: number, target: number) => bars.push({ what, figure: x(value), target: `≥ ${x(target)}`, pass: value >= target });
    const atMost = (what: string, value: number, target: number) => bars.push({ what, figure: ms(value), target: `≤ ${target} ms`, pass: value <= target });
    // "Tessera's claim statement alone": the statement a claimTicket runs — its first look, claimOne()
    // when it arrives alone (a group shares claimGroup(), shown beside it); claimStatement() is the
    // general statement of holds, claimTickets and a claim's second look, measured above too.
    for (const c of SQL_CLIENTS) atLeast(`claimTicket's statement alone (claimOne()) ÷ floor, ${c} clients`, firstLook[c]!.claimsPerSecond / floor[c]!.claimsPerSecond, 0.5);
    for (const [name, r] of [
      ['hot', hot],
      ['spread', spread],
    ] as const) {
      atLeast(`claimTicket ${name} (64 conn.) ÷ floor at 64`, r.requestsPerSecond / floor[64]!.claimsPerSecond, 0.5);
      atLeast(`claimTicket ${name} (64 conn.) ÷ Tessera's ceiling at 64`, r.requestsPerSecond / ceiling[64]!.requestsPerSecond, 0.8);
      atMost(`claimTicket ${name} (64 conn.) p99`, r.p99, 50);
    }
    atLeast("Tessera's ceiling ÷ minimal Apollo, 64 connections", ceiling[64]!.requestsPerSecond / apollo.requestsPerSecond, 0.7);
    // Issue 30: flat with history, and with fill (no VACUUM after the bulk fill).
    for (const name of ['hot', 'spread'] as const) {
      atLeast(`claimTicket ${name} with ${fmt(HISTORY_ALLOCATIONS)} historical allocations ÷ before`, meanRate(withHistory[name]) / meanRate(empty[name]), 0.9);
    }
    // Issue 30: loads at COPY speed, and claims elsewhere meanwhile.
    if (!quick) {
      const perSecondBar = (what: string, value: number | undefined, target: number) =>
        bars.push({ what, figure: value === undefined ? 'not measured' : `${fmt(value)}/s`, target: `≥ ${fmt(target)}/s`, pass: value !== undefined && value >= target });
      perSecondBar(`generateTickets of ${fmt(BIG)}, rows`, loads.generated, 200_000);
      perSecondBar(`npx tessera load of a ${fmt(BIG)}-code CSV, codes`, loads.cli, 150_000);
      if (loads.claimsDuring !== undefined) atLeast(`claimTicket hot at ${COST_RATE}/s offered while loads run ÷ alone`, loads.claimsDuring, 0.8);
    }
    bars.push({ what: 'p50 at 99% fill ÷ p50 at 0% fill', figure: x(p50s[0.99]! / p50s[0]!), target: '≤ 1.25×', pass: p50s[0.99]! / p50s[0]! <= 1.25 });
    // Issue 30: right after a load as fast as after VACUUM ANALYZE, and CPU per claim.
    for (const name of ['hot', 'spread'] as const) {
      atLeast(`claimTicket ${name} right after the load ÷ after VACUUM ANALYZE`, meanRate(afterLoad[name]) / meanRate(afterAnalyze[name]), 0.9);
      atLeast(`claimTicket ${name} right after the load ÷ floor at 64`, meanRate(afterLoad[name]) / floor[64]!.claimsPerSecond, 0.4);
      if (cost && floorCpu) {
        const bound = cost.empty.node + floorCpu.perClaim;
        const perClaim = cost[name].node + cost[name].pg;
        bars.push({
          what: `CPU per claim ${name} ÷ (empty-query Node + minimal-claim PostgreSQL)`,
          figure: `${x(perClaim / bound)} (${us(perClaim)} / ${us(bound)})`,
          target: '≤ 1.50×',
          pass: perClaim / bound <= 1.5,
        });
      }
    }
    // Issue 28: behind PgBouncer, at least 0.8× the same claims straight to PostgreSQL.
    if (pooled) {
      for (const name of ['hot', 'spread'] as const) {
        atLeast(`claimTicket ${name} behind PgBouncer ÷ straight to PostgreSQL`, pooled[name].requestsPerSecond / (name === 'hot' ? hot : spread).requestsPerSecond, 0.8);
      }
    }
    // Issue 15: "unchanged" — within what two adjacent runs of the same code differ by here.
    for (const name of ['hot', 'spread'] as const) {
      atLeast(`claimTicket ${name} with ten webhook endpoints ÷ without`, webhooks.on[name].requestsPerSecond / webhooks.off[name].requestsPerSecond, 0.9);
    }
    // Issue 32: tracing on at ratio 1.0 costs at most 10% of hot claims (and of spread ones).
    for (const name of ['hot', 'spread'] as const) {
      const on = meanRate(tracing.results.flatMap((r) => r.on[name]));
      const off = meanRate(tracing.results.flatMap((r) => r.off[name]));
      atLeast(`claimTicket ${name}, tracing on (ratio 1.0) ÷ off`, on / off, 0.9);
    }
    bars.push({ what: `drawBallot of ${fmt(BALLOT_ENTRIES)} entries`, figure: `${(draw.ms / 1000).toFixed(1)} s`, target: '< 60 s', pass: draw.ms < 60_000 });
    bars.push({
      what: 'lost or duplicated tickets, every claim run',
      figure: `${integrity.lost} lost, ${integrity.duplicated} duplicated`,
      target: '0',
      pass: integrity.lost === 0 && integrity.duplicated === 0 && twice === 0,
    });
    console.log('\nthe issue’s bars');
    for (const b of bars) console.log(`  ${b.what.padEnd(52)} ${b.figure.padStart(24)}   ${b.target.padEnd(8)}  ${b.pass ? 'PASS' : 'MISS'}`);
  } finally {
    await server.stop();
    await sql.end();
    if (embedded) await embedded.stop();
  }
  const minutes = (performance.now() - began) / 60_000;
  const loadAtEnd = os.loadavg()[0]!;
  console.log(`\n${minutes.toFixed(1)} minutes; load average ${loadAtStart.toFixed(2)} at the start, ${loadAtEnd.toFixed(2)} at the end`);
  if (failures.length > 0) {
    console.error(`\nFAIL: ${failures.join('; ')}`);
    process.exit(1);
  }
  if (!quick) writeResults({ ...machine, bars, minutes, loadAtStart, loadAtEnd });
}

/** CPU seconds as microseconds. */
const us = (seconds: number) => `${fmt(seconds * 1e6)} µs`;

/** CPU per request of a run at COST_RATE: the Tessera process's and PostgreSQL's, in seconds. */
interface CpuPerRequest {
  node: number;
  pg: number;
}

/**
 * The open-loop cost runs (issue 30): `{ __typename }` with a partner key, then claimTicket hot
 * and spread, each at COST_RATE requests a second for COST_SECONDS, 64 connections; the CPU time
 * of the Tessera process (and any child) and of PostgreSQL's whole server (bench/cpu.ts) over
 * each run, per request answered (per claim acknowledged). Null (and said) where either process is
 * not on this machine.
 */
async function costPhase(o: {
  server: Server;
  sql: Client;
  postmaster: number | null;
  partnerKey: string;
  pool: string;
  cool: string[];
  failures: string[];
}): Promise<Record<'empty' | 'hot' | 'spread', CpuPerRequest> | null> {
  const node = o.server.pid;
  const postmaster = o.postmaster;
  if (!node || !postmaster) {
    record('CPU per claim: PostgreSQL is not on this machine (no /proc to read)', 'skipped');
    return null;
  }
  const out = {} as Record<'empty' | 'hot' | 'spread', CpuPerRequest>;
  for (const [name, ids] of [
    ['empty', []],
    ['hot', [o.pool]],
    ['spread', o.cool],
  ] as const) {
    await vacuum(o.sql);
    const run = nextRun();
    const bodies = name === 'empty' ? [TYPENAME] : ids.map((id) => CLAIM(id, run));
    const nodeBefore = treeCpu(node);
    const pgBefore = treeCpu(postmaster);
    const r = await httpLoad({
      url: o.server.url,
      key: o.partnerKey,
      body: bodies[0]!,
      bodies,
      connections: 64,
      seconds: COST_SECONDS,
      rate: COST_RATE,
      okPattern: name === 'empty' ? '"__typename":"Query"' : CLAIMED,
    });
    const cpu = { node: treeCpu(node) - nodeBefore, pg: treeCpu(postmaster) - pgBefore };
    if (name !== 'empty') await verify(o.sql, r, run, [...ids], 64, `claims ${name} at ${COST_RATE}/s`, o.failures);
    else checkAnswers(r, `{ __typename } at ${COST_RATE}/s`, o.failures);
    const answered = Math.max(1, r.ok);
    out[name] = { node: cpu.node / answered, pg: cpu.pg / answered };
    const rate = r.ok / COST_SECONDS;
    record(
      `CPU per ${name === 'empty' ? 'request: { __typename }' : `claim: claimTicket ${name}`} at ${COST_RATE}/s offered, ${COST_SECONDS} s`,
      `Tessera ${us(out[name].node)}  PostgreSQL ${us(out[name].pg)}  (${fmt(rate)}/s answered${rate < 0.9 * COST_RATE ? ': SATURATED, not a cost' : ''}, p50 ${ms(r.p50)})`,
    );
  }
  return out;
}

/**
 * VACUUM of the bench database, what autovacuum would do between phases (it is off on this
 * machine's server); with ANALYZE after the bulk loads (the claim's plan does not depend on
 * statistics: docs/PERFORMANCE.md pitfall 2).
 */
async function vacuum(sql: Client, o: { analyze?: boolean } = {}): Promise<void> {
  await sql.query(o.analyze ? 'VACUUM ANALYZE' : 'VACUUM');
}

/** A ceiling server of bench/ceilings/ in a process of its own: warmed up, `{ __typename }` at 64 connections, stopped. */
async function childCeiling(script: string, failures: string[]): Promise<LoadResult> {
  const child = new ChildServer(script, await freePort());
  await child.start();
  try {
    await httpLoad({ url: child.url, key: 'none', body: TYPENAME, connections: 64, seconds: WARMUP_SECONDS });
    const r = await httpLoad({ url: child.url, key: 'none', body: TYPENAME, connections: 64, seconds: SECONDS, okPattern: '"__typename":"Query"' });
    checkAnswers(r, script, failures);
    if (r.ok < r.requests - 64) failures.push(`${script}: only ${r.ok} of ${r.requests} answers were { __typename }`);
    return r;
  } finally {
    await child.stop();
  }
}

function checkAnswers(r: LoadResult, what: string, failures: string[]): void {
  if (r.errors > 0 || r.non2xx > 0) failures.push(`${what}: ${r.non2xx} non-2xx answers, ${r.errors} errors`);
}

/**
 * Nothing lost, nothing duplicated, after a claim run `run` on `campaigns`:
 *  - every acknowledged claim is stored, and at most one claim per connection was stored without
 *    being acknowledged (autocannon stops reading when its time is up, with one request in flight
 *    per connection, which the server still completes);
 *  - in those campaigns, every ALLOCATED ticket has exactly one live allocation and no ticket has two
 *    (one snapshot: a claim commits its ticket and its allocation together).
 * Adds to the run's totals and to `failures`; returns the verdict for the table.
 */
/**
 * Starts a PgBouncer (transaction mode) in front of `serverUrl` and a Tessera instance through it on
 * the bench's database, runs `work` on that instance, and stops both. Null, with a line saying so,
 * where pgbouncer is not installed.
 */
async function pgbouncerPhase<T>(serverUrl: string, dbUrl: URL, serverEnv: Record<string, string>, work: (server: Server) => Promise<T>): Promise<T | null> {
  if (!pgbouncerPath()) {
    console.log('no pgbouncer on this machine (apt-get install pgbouncer): claims behind PgBouncer not measured');
    return null;
  }
  const bouncer = await startPgBouncerFor(serverUrl, { poolSize: 20 });
  const server = new Server(await freePort(), {
    ...serverEnv,
    WEB_CONCURRENCY: '1',
    DATABASE_URL: bouncer.url(dbUrl.pathname.slice(1)),
    DATABASE_DIRECT_URL: dbUrl.toString(),
    DATABASE_POOLER: 'pgbouncer',
  });
  try {
    await server.start();
    return await work(server);
  } finally {
    await server.stop();
    await bouncer.stop();
  }
}

/**
 * `pairs` pairs of new Tessera instances on the bench's database, one after the other: one with
 * tracing on — every trace sampled (ratio 1.0), OTLP protobuf over HTTP to a receiver of the
 * bench's own (otlpReceiver.ts), the batch processor's queue large enough for a claim storm's spans
 * (docs/OBSERVABILITY.md, "Sizing the export") — and its untraced twin. `work` measures each pair.
 */
async function tracingPhase<T>(
  serverEnv: Record<string, string>,
  pairs: number,
  work: (traced: Server, plain: Server, pair: number) => Promise<T>,
): Promise<{ results: T[]; exported: Received }> {
  const receiver = await startOtlpReceiver();
  const results: T[] = [];
  try {
    for (let pair = 1; pair <= pairs; pair += 1) {
      const plain = new Server(await freePort(), { ...serverEnv, WEB_CONCURRENCY: '1' });
      const traced = new Server(await freePort(), {
        ...serverEnv,
        WEB_CONCURRENCY: '1',
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        OTEL_TRACES_SAMPLER: 'parentbased_always_on',
        OTEL_BSP_MAX_QUEUE_SIZE: '65536',
        OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '512',
        OTEL_BSP_SCHEDULE_DELAY: '1000',
      });
      try {
        await plain.start();
        await traced.start();
        results.push(await work(traced, plain, pair));
      } finally {
        await traced.stop(); // its last spans exported at shutdown
        await plain.stop();
      }
    }
    return { results, exported: await receiver.counts() };
  } finally {
    await receiver.close();
  }
}

async function verify(sql: Client, r: LoadResult, run: string, campaigns: string[], connections: number, what: string, failures: string[]): Promise<string> {
  const stored = (await sql.query('SELECT count(*)::int AS n FROM allocations WHERE holder = $1', [run])).rows[0].n as number;
  const state = (
    await sql.query<{ allocated: number; live: number; twice: number }>(
      `SELECT (SELECT count(*) FROM tickets WHERE campaign_id = ANY($1::uuid[]) AND status = 'ALLOCATED')::int AS allocated,
              (SELECT count(*) FROM allocations WHERE campaign_id = ANY($1::uuid[]) AND status = 'ACTIVE')::int AS live,
              (SELECT count(*) FROM (SELECT 1 FROM allocations WHERE campaign_id = ANY($1::uuid[]) AND status IN ('HELD', 'ACTIVE')
                                      GROUP BY campaign_id, ticket_id HAVING count(*) > 1) d)::int AS twice`,
      [campaigns],
    )
  ).rows[0]!;
  const lost = Math.max(0, r.ok - stored) + Math.max(0, state.allocated - state.live);
  const duplicated = Math.max(0, stored - r.ok - connections) + state.twice + Math.max(0, state.live - state.allocated);
  integrity.lost += lost;
  integrity.duplicated += duplicated;
  const problems: string[] = [];
  if (lost + duplicated > 0)
    problems.push(`${r.ok} acknowledged, ${stored} stored (+${connections} in flight at most); ${state.allocated} tickets ALLOCATED, ${state.live} live allocations, ${state.twice} tickets twice`);
  if (r.errors > 0 || r.non2xx > 0) problems.push(`${r.non2xx} non-2xx answers, ${r.errors} errors`);
  if (r.ok === 0) problems.push('no claim succeeded');
  if (problems.length > 0) failures.push(`${what}: ${problems.join('; ')}`);
  return `lost ${lost}, duplicated ${duplicated}`;
}

/**
 * Months of drops, as they would have left the database (issue 30): HISTORY_CAMPAIGNS closed
 * campaigns holding HISTORY_ALLOCATIONS tickets between them, every one ALLOCATED with its ACTIVE
 * allocation, and their counters; then VACUUM ANALYZE, which autovacuum would have run over those
 * months. Written in bulk by SQL, a few campaigns a statement, with the triggers off
 * (session_replication_role = replica: the foreign keys' checks, the counters' and numbering
 * triggers), so the counters and the allocations' sequence are written here as the triggers would;
 * the campaigns themselves are created with their triggers (each gets its sequence).
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

/**
 * Allocates tickets in bulk (as the operator) until `fill` of `total` are allocated, counted the way
 * claim statements count what they insert (COUNT_ALLOCATED of src/db/countAllocations.ts), so the
 * reads afterwards see the counters of a real fill.
 */
async function fillTo(sql: Client, campaignId: string, fill: number, total: number): Promise<void> {
  const target = Math.floor(fill * total);
  const current = (await sql.query('SELECT count(*)::int AS n FROM allocations WHERE campaign_id = $1', [campaignId])).rows[0].n as number;
  if (target <= current) return;
  await sql.query(
    `WITH picked AS MATERIALIZED (SELECT id FROM tickets WHERE campaign_id = $1 AND status = 'AVAILABLE' ORDER BY random() LIMIT $2),
          claimed AS (UPDATE tickets t SET status = 'ALLOCATED' FROM picked p
                       WHERE t.campaign_id = $1 AND t.id = p.id AND t.status = 'AVAILABLE' RETURNING t.campaign_id, t.id),
          allocated AS (INSERT INTO allocations (campaign_id, ticket_id, partner_id, holder, status)
                        SELECT campaign_id, id, $3, 'bulk-fill', 'ACTIVE' FROM claimed
                        RETURNING campaign_id, partner_id, status, allocated_at),
          ${COUNT_ALLOCATED}
     SELECT count(*) FROM allocated`,
    [campaignId, target - current, OPERATOR_PARTNER_ID],
  );
}

function writeResults(o: {
  nproc: number;
  cpu: string;
  memory: string;
  version: string;
  where: string;
  autovacuum: boolean;
  pgbench: string | null;
  code: string;
  bars: Bar[];
  minutes: number;
  loadAtStart: number;
  loadAtEnd: number;
}): void {
  const file = path.join(ROOT, 'docs/BENCHMARKS.md');
  const tool = o.pgbench ? `pgbench (\`-n -M prepared -c N -j 2 -T ${SECONDS}\`)` : 'pg (pgbench not installed: N clients in the bench process, named prepared statements)';
  const vacuumNote = o.autovacuum
    ? 'Autovacuum is on; the bench VACUUMs between phases as well.'
    : '**Autovacuum is OFF on this server**: nothing removes dead rows and index entries but the VACUUMs the bench runs between phases ' +
      '(before every claim run, and before each floor and statement measurement after putting the rows back to AVAILABLE); the fill steps are the exception, on purpose.';
  const body = [
    `Last run: ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC — \`npm run bench\` (${o.minutes.toFixed(1)} minutes) — code at ${o.code}.`,
    '',
    `Machine: nproc ${o.nproc} (${o.cpu}), ${o.memory}, Node ${process.version}, PostgreSQL ${o.version} (${o.where}), autovacuum ${o.autovacuum ? 'on' : 'off'}, ` +
      `SQL load with ${tool}; load average ${o.loadAtStart.toFixed(2)} at the start, ${o.loadAtEnd.toFixed(2)} at the end; the load generators on the same cores.`,
    '',
    '| measurement | result |',
    '|---|---|',
    ...rows.map((r) => `| ${r.what} | ${r.value} |`),
    '',
    "The issue's bars (a MISS is a measurement, not a failure of the bench; a lost or duplicated ticket fails it):",
    '',
    '| bar | figure | target | verdict |',
    '|---|---|---|---|',
    ...o.bars.map((b) => `| ${b.what} | ${b.figure} | ${b.target} | ${b.pass ? 'PASS' : '**MISS**'} |`),
    '',
    '**How to read these figures.** The floor is the minimal claim of docs/PERFORMANCE.md (strategy A: ' +
      '`UPDATE … WHERE id = (SELECT id … ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED) AND status = \'AVAILABLE\' RETURNING id`) on a bare table ' +
      'with a partial index on its available rows — what PostgreSQL on this machine does per claim with nothing of Tessera. ' +
      "\"Statement alone\" is Tessera's claim statement (`claimStatement()` of src/db/claimTicket.ts: holds, claimTickets and a claim's second look run it) " +
      "\"first look alone\" the statement a claimTicket arriving alone runs first (`claimOne()` of src/db/claimOne.ts; the bar), " +
      `and "a group alone" the statement ${GROUP_SIZE} claimTickets in flight together share (\`claimGroup()\` of src/db/claimGroup.ts, counted per ticket claimed), each on Tessera's schema ` +
      "with Tessera's session settings (generic plans, READ COMMITTED), through the same tool, the pick start drawn per transaction: their ratio to the floor " +
      'is what the guarantees cost in SQL (the gate, the allocation row, the counters). All three start from a fresh pool and count tickets actually claimed, ' +
      'not statements sent. claimTicket over HTTP adds Node, GraphQL and the controls, and on one hot campaign it serves concurrent claims with shared ' +
      'statements (so it can beat the first look alone); spread over 64 campaigns, those groups are made across campaigns. ' +
      "The three ceilings answer without a database: bare node:http is the physical limit of one Node process here, the minimal Apollo Server is what the " +
      "framework alone costs on the same integration, and Tessera's `{ __typename }` with a partner key is every control on; a claim cannot go faster than " +
      "Tessera's ceiling. Every process — autocannon, pgbench, Node, PostgreSQL — shares the same " +
      `${o.nproc} cores, so every figure is a lower bound, ratios are only meaningful within one run, and two runs differ by up to ~25%. ${vacuumNote}`,
  ].join('\n');
  const doc = readFileSync(file, 'utf8');
  writeFileSync(file, doc.replace(/<!-- bench:begin -->[\s\S]*<!-- bench:end -->/, () => `<!-- bench:begin -->\n${body}\n<!-- bench:end -->`));
  console.log('results written to docs/BENCHMARKS.md');
}

const BALLOT_ENTRIES = quick ? 100_000 : 1_000_000;
const BALLOT_TICKETS = quick ? 10_000 : 100_000;

/**
 * A BALLOT campaign of BALLOT_TICKETS tickets and BALLOT_ENTRIES entries of four partners, drawn with
 * drawBallot over HTTP; then what the draw wrote checked: the winners' holds exactly their quantities,
 * within the pool, and bin/verify-ballot.js on the published fields.
 */
async function ballotPhase(url: string, sql: Client, failures: string[]): Promise<{ ms: number; winners: number; verifyMs: number; verdict: string }> {
  const partners: string[] = [];
  for (let i = 0; i < 4; i += 1) partners.push((await gql(url, ADMIN_KEY, `mutation { createPartner(input: { name: "ballot ${i}" }) { partner { id } } }`)).createPartner.partner.id);
  const id = (await gql(url, ADMIN_KEY, 'mutation { createCampaign(input: { name: "ballot", mode: BALLOT }) { campaign { id } } }')).createCampaign.campaign.id as string;
  await gql(url, ADMIN_KEY, `mutation { generateTickets(campaignId: "${id}", count: ${BALLOT_TICKETS}) { loaded } }`);
  await gql(url, ADMIN_KEY, `mutation { openCampaign(id: "${id}") { campaign { id } } }`);
  await sql.query(
    `INSERT INTO ballot_entries (campaign_id, partner_id, holder, quantity)
     SELECT $1, ($2::uuid[])[1 + g % 4], 'entrant-' || g, 1 + (g::bigint * 7919) % 4 FROM generate_series(1, ${BALLOT_ENTRIES}) g`,
    [id, partners],
  );
  await sql.query('VACUUM ANALYZE ballot_entries');
  const t0 = performance.now();
  const { drawBallot } = await gql(url, ADMIN_KEY, `mutation { drawBallot(campaignId: "${id}") { ballot { seedCommitment seed entriesDigest entryCount winners drawnAt tickets partnerLimits } } }`);
  const ms = performance.now() - t0;
  const ballot = drawBallot.ballot;
  const { rows } = await sql.query(
    `SELECT (SELECT count(*)::int FROM allocations WHERE campaign_id = $1 AND status = 'HELD') AS held,
            (SELECT COALESCE(sum(quantity), 0)::int FROM ballot_entries WHERE campaign_id = $1 AND won_in_draw) AS won`,
    [id],
  );
  if (rows[0].held !== rows[0].won || rows[0].held > BALLOT_TICKETS) failures.push(`ballot: ${rows[0].held} holds for ${rows[0].won} tickets won of ${BALLOT_TICKETS}`);
  const entries = (
    await sql.query(
      `SELECT id, quantity, status::text, rank, won_in_draw AS "wonInDraw", partner_id AS "partnerId" FROM ballot_entries WHERE campaign_id = $1 ORDER BY rank`,
      [id],
    )
  ).rows;
  const t1 = performance.now();
  const result = verifyBallot(ballot, entries);
  const verifyMs = performance.now() - t1;
  if (!result.ok) failures.push(`ballot: the verifier says ${result.mismatch}`);
  return { ms, winners: ballot.winners, verifyMs, verdict: result.ok ? 'verified' : `MISMATCH: ${result.mismatch}` };
}

/** The key the bench's servers seal webhook secrets with. */
const BENCH_WEBHOOK_KEY = Buffer.alloc(32, 11);

const SYNC_CONNECTIONS = [1, 64];
type Rate = { rps: number; p50: number; p99: number };

/**
 * Claims on a primary of its own (initdb, fsync on, as a production server) with a streaming standby
 * (pg_basebackup), once with the standby asynchronous and once with `synchronous_standby_names = '*'`
 * (every claim's commit waits for the standby's flush), alternating, two runs of each. Both servers
 * are on this machine, so the figure is the cost of the standby's flush and one local round trip; a
 * network between them adds its round trip to every commit (the failover drill's link: 10 ms).
 * Null when this machine has no PostgreSQL binaries to build the pair with.
 */
async function syncCommitPhase(serverEnv: Record<string, string>, failures: string[]): Promise<{ async: Record<number, Rate>; sync: Record<number, Rate> } | null> {
  const pair = await startReplicaPair({ fsync: true });
  if (!pair) return null;
  const admin = new Client({ connectionString: pair.primaryUrl });
  await admin.connect();
  await admin.query('CREATE DATABASE tessera_bench_sync');
  await admin.end();
  const url = pair.primaryUrl.replace(/\/postgres$/, '/tessera_bench_sync');
  await migrate(url);
  const sql = new Client({ connectionString: url });
  await sql.connect();
  const server = new Server(await freePort(), { ...serverEnv, DATABASE_URL: url, WEB_CONCURRENCY: '1' });
  try {
    await server.start();
    const key = (await gql(server.url, ADMIN_KEY, 'mutation { createPartner(input: { name: "bench sync" }) { apiKey } }')).createPartner.apiKey as string;
    const campaign = (await gql(server.url, ADMIN_KEY, 'mutation { createCampaign(input: { name: "sync" }) { campaign { id } } }')).createCampaign.campaign.id as string;
    await gql(server.url, ADMIN_KEY, `mutation { generateTickets(campaignId: "${campaign}", count: ${quick ? 50_000 : 200_000}) { loaded } }`);
    await gql(server.url, ADMIN_KEY, `mutation { openCampaign(id: "${campaign}") { campaign { id } } }`);
    await vacuum(sql, { analyze: true });
    await httpLoad({ url: server.url, key, body: TYPENAME, connections: 64, seconds: WARMUP_SECONDS });
    const runs: Record<'async' | 'sync', Record<number, LoadResult[]>> = { async: {}, sync: {} };
    for (let round = 0; round < 2; round += 1) {
      for (const mode of ['async', 'sync'] as const) {
        await pair.setSynchronous(mode === 'sync');
        for (const c of SYNC_CONNECTIONS) {
          await vacuum(sql);
          const run = nextRun();
          const r = await httpLoad({ url: server.url, key, body: CLAIM(campaign, run), connections: c, seconds: SECONDS, okPattern: CLAIMED });
          await verify(sql, r, run, [campaign], c, `claims with a ${mode} standby at ${c} connections`, failures);
          (runs[mode][c] ??= []).push(r);
        }
      }
    }
    const mean = (rs: LoadResult[]): Rate => ({
      rps: rs.reduce((n, r) => n + r.requestsPerSecond, 0) / rs.length,
      p50: rs.reduce((n, r) => n + r.p50, 0) / rs.length,
      p99: rs.reduce((n, r) => n + r.p99, 0) / rs.length,
    });
    const of = (mode: 'async' | 'sync') => Object.fromEntries(SYNC_CONNECTIONS.map((c) => [c, mean(runs[mode][c]!)]));
    return { async: of('async'), sync: of('sync') };
  } finally {
    await server.stop();
    await sql.end();
    pair.stop();
  }
}

/**
 * Runs `measure` with ten enabled webhook endpoints of a partner that claims nothing (its events are
 * written and drained, none routed), then again with them disabled; the endpoints stay disabled.
 */
async function webhookPhase<T>(sql: Client, measure: (label: string) => Promise<T>): Promise<{ on: T; off: T }> {
  const partner = (
    await sql.query<{ id: string }>(`INSERT INTO partners (name, key_prefix, key_hash) VALUES ('bench webhooks', 'tsp_benchhooks', repeat('0', 64)) RETURNING id`)
  ).rows[0]!.id;
  await sql.query(
    `INSERT INTO webhook_endpoints (partner_id, url, events, secret_sealed)
     SELECT $1, 'http://127.0.0.1:9/hook-' || i, ARRAY['ALLOCATION_CREATED', 'CAMPAIGN_CLOSED'], $2 FROM generate_series(1, 10) i`,
    [partner, sealSecret(newWebhookSecret(), BENCH_WEBHOOK_KEY)],
  );
  const on = await measure('ten webhook endpoints');
  await sql.query('UPDATE webhook_endpoints SET enabled = false');
  const off = await measure('no webhook endpoint');
  return { on, off };
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? (error.stack ?? error.message) : error);
  process.exit(1);
});
