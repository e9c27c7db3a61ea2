// `npm run bench`: what a claim costs, measured in one run on this machine, next to the two
// baselines that say where Tessera stands — the bare SQL claim (the floor: what PostgreSQL itself
// does) and an empty authenticated GraphQL query (the ceiling: what one server process can answer).
// Prints a table and rewrites the results section of docs/BENCHMARKS.md.
//
//   npm run bench                 full run (~3 minutes)
//   npm run bench -- --quick      shorter runs, smaller pools (a smoke test of the harness)
//
// Uses DATABASE_URL's server when set (a database `tessera_bench` is dropped and created there),
// else an embedded PostgreSQL in .tessera/bench-pgdata. Every claim run ends with a check that the
// allocations stored equal the claims acknowledged: a benchmark that loses or duplicates a ticket
// fails loudly.
import 'dotenv/config';
import { randomInt } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { OPERATOR_PARTNER_ID } from '../src/auth';
import { DEFAULT_WEB_CONCURRENCY } from '../src/config';
import { startEmbeddedPostgres, type EmbeddedDatabase } from '../src/db/embedded';
import { migrate } from '../src/db/migrate';
import { childrenOf, untilEveryWorkerServes } from '../test/helpers/process';
import { ticketsLiveTwice } from '../test/helpers/sql';
import { ADMIN_KEY, freePort, gql, httpLoad, ROOT, sequentialLatency, Server, sqlLoad, type LoadResult } from './harness';

const quick = process.argv.includes('--quick');
const SECONDS = quick ? 2 : 5;
const FILL_SECONDS = quick ? 2 : 4;
const BIG = quick ? 100_000 : 1_000_000;
const CONNECTIONS = [1, 16, 64];

/** A claim of run `run`: its holder names the run, so the run's allocations are counted apart from every other's. */
const CLAIM = (campaignId: string, run: string) =>
  JSON.stringify({
    query: `mutation { claimTicket(input: { campaignId: "${campaignId}", holder: "${run}" }) { allocation { id sequence ticket { code } } error { code } } }`,
  });
let runs = 0;
/** The holder of the next claim run. */
const nextRun = () => `bench-${(runs += 1)}`;
const TYPENAME = JSON.stringify({ query: '{ __typename }' });

/** The floor: the bare single-statement claim on Tessera's own schema (pick, update, insert). */
const FLOOR_SQL = `
  WITH claimed AS (
    UPDATE tickets t SET status = 'ALLOCATED'
     WHERE t.campaign_id = $1
       AND t.id = (SELECT id FROM tickets WHERE campaign_id = $1 AND status = 'AVAILABLE' AND pick_order >= $2
                   ORDER BY pick_order LIMIT 1 FOR UPDATE SKIP LOCKED)
       AND t.status = 'AVAILABLE'
    RETURNING t.campaign_id, t.id)
  INSERT INTO allocations (campaign_id, ticket_id, partner_id, holder, status)
  SELECT campaign_id, id, $3, 'floor', 'ACTIVE' FROM claimed RETURNING id`;

interface Row {
  what: string;
  value: string;
}
const rows: Row[] = [];
const record = (what: string, value: string) => {
  rows.push({ what, value });
  console.log(`${what.padEnd(64)} ${value}`);
};
const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
const ms = (n: number) => `${Math.round(n * 10) / 10} ms`;
const ratio = (a: number, b: number) => `${(a / b).toFixed(2)}×`;

async function main(): Promise<void> {
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

  // One process, whatever the default; rate limits far above what the bench sends (still counted).
  const serverEnv = { DATABASE_URL: dbUrl.toString(), RATE_LIMIT_POINTS_PER_SECOND: '10000000' };
  const server = new Server(await freePort(), { ...serverEnv, WEB_CONCURRENCY: '1' });
  await server.start();
  console.log(`bench on PostgreSQL ${version} (${embedded ? 'embedded' : 'DATABASE_URL'}), ${os.cpus().length} cores, Node ${process.version}\n`);
  const failures: string[] = [];
  try {
    const partnerKey = (await gql(server.url, ADMIN_KEY, 'mutation { createPartner(input: { name: "bench" }) { apiKey } }')).createPartner.apiKey;
    const newCampaign = async (name: string) =>
      (await gql(server.url, ADMIN_KEY, `mutation { createCampaign(input: { name: "${name}" }) { campaign { id } } }`)).createCampaign.campaign.id as string;
    const open = (id: string) => gql(server.url, ADMIN_KEY, `mutation { openCampaign(id: "${id}") { campaign { id } } }`);

    // Loading.
    const big = await newCampaign('one million');
    let t0 = performance.now();
    await gql(server.url, ADMIN_KEY, `mutation { generateTickets(campaignId: "${big}", count: ${BIG}) { loaded } }`);
    record(`load ${fmt(BIG)} tickets with generateTickets`, `${fmt(BIG / ((performance.now() - t0) / 1000))} rows/s`);
    const loaded = await newCampaign('loaded');
    const batches = quick ? 10 : 100;
    t0 = performance.now();
    for (let b = 0; b < batches; b += 1) {
      const codes = Array.from({ length: 10_000 }, (_, i) => `L${b}-${i}`);
      await gql(server.url, ADMIN_KEY, 'mutation($id: ID!, $codes: [String!]!) { loadTickets(campaignId: $id, codes: $codes) { loaded } }', { id: loaded, codes });
    }
    record(`load ${fmt(batches * 10_000)} tickets with loadTickets (10,000 a call)`, `${fmt((batches * 10_000) / ((performance.now() - t0) / 1000))} rows/s`);

    // Floor, ceiling, end to end — on a pool big enough never to run dry.
    const pool = await newCampaign('throughput');
    await gql(server.url, ADMIN_KEY, `mutation { generateTickets(campaignId: "${pool}", count: ${quick ? 100_000 : 400_000}) { loaded } }`);
    await open(pool);
    await sql.query('VACUUM ANALYZE tickets');

    const floor: Record<number, LoadResult> = {};
    const ceiling: Record<number, LoadResult> = {};
    const claims: Record<number, LoadResult> = {};
    for (const c of CONNECTIONS) {
      floor[c] = await sqlLoad({ url: dbUrl.toString(), connections: c, seconds: SECONDS, text: FLOOR_SQL, params: () => [pool, randomInt(2_000_000_000), OPERATOR_PARTNER_ID] });
      record(`floor: bare claim statement via pg, ${c} connections`, `${fmt(floor[c]!.requestsPerSecond)}/s  p50 ${ms(floor[c]!.p50)}  p99 ${ms(floor[c]!.p99)}`);
    }
    for (const c of CONNECTIONS) {
      ceiling[c] = await httpLoad({ url: server.url, key: partnerKey, body: TYPENAME, connections: c, seconds: SECONDS });
      record(`ceiling: { __typename } with a partner key, ${c} connections`, `${fmt(ceiling[c]!.requestsPerSecond)}/s  p50 ${ms(ceiling[c]!.p50)}  p99 ${ms(ceiling[c]!.p99)}`);
    }
    for (const c of CONNECTIONS) {
      const run = nextRun();
      claims[c] = await httpLoad({ url: server.url, key: partnerKey, body: CLAIM(pool, run), connections: c, seconds: SECONDS, okPattern: '"allocation":{"id"' });
      const stored = await claimedBy(sql, run);
      const r = claims[c]!;
      record(
        `claimTicket over HTTP, ${c} connections`,
        `${fmt(r.requestsPerSecond)}/s  p50 ${ms(r.p50)}  p99 ${ms(r.p99)}  ${ratio(r.requestsPerSecond, ceiling[c]!.requestsPerSecond)} ceiling  ${ratio(r.requestsPerSecond, floor[c]!.requestsPerSecond)} floor`,
      );
      const problem = checkClaims(r, stored, c);
      if (problem) failures.push(`claims at ${c} connections: ${problem}`);
    }

    // One hot campaign (above) against many cool ones: the same 64 connections, each request for the
    // next of 64 campaigns, so concurrent claims rarely share a campaign and group claims rarely form.
    const cool = await Promise.all(Array.from({ length: 64 }, (_, i) => newCampaign(`cool ${i}`)));
    for (const id of cool) await gql(server.url, ADMIN_KEY, `mutation { generateTickets(campaignId: "${id}", count: 2000) { loaded } }`);
    await Promise.all(cool.map((id) => open(id)));
    await sql.query('VACUUM ANALYZE tickets');
    const spreadRun = nextRun();
    const spreadBodies = cool.map((id) => CLAIM(id, spreadRun));
    const spread = await httpLoad({ url: server.url, key: partnerKey, body: spreadBodies[0]!, bodies: spreadBodies, connections: 64, seconds: SECONDS, okPattern: '"allocation":{"id"' });
    const spreadProblem = checkClaims(spread, await claimedBy(sql, spreadRun), 64);
    if (spreadProblem) failures.push(`claims over 64 campaigns: ${spreadProblem}`);
    record(
      'claimTicket over HTTP, 64 connections spread over 64 campaigns',
      `${fmt(spread.requestsPerSecond)}/s  p50 ${ms(spread.p50)}  p99 ${ms(spread.p99)}  ${ratio(spread.requestsPerSecond, claims[64]!.requestsPerSecond)} one hot campaign`,
    );

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
      await untilEveryWorkerServes(primary[0]!, clustered.port, workers);
      const byWorkers = new Map<number, LoadResult[]>([
        [1, []],
        [workers, []],
      ]);
      for (let round = 0; round < 2; round += 1) {
        for (const [n, target] of [[1, server], [workers, clustered]] as const) {
          const run = nextRun();
          const r = await httpLoad({ url: target.url, key: partnerKey, body: CLAIM(pool, run), connections: 64, seconds: SECONDS, okPattern: '"allocation":{"id"' });
          const problem = checkClaims(r, await claimedBy(sql, run), 64);
          if (problem) failures.push(`claims with ${n} workers: ${problem}`);
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
      record('claimTicket, 64 connections, WEB_CONCURRENCY=1 (mean of 2 runs)', `${fmt(one.rps)}/s  p50 ${ms(one.p50)}  p99 ${ms(one.p99)}`);
      record(`claimTicket, 64 connections, WEB_CONCURRENCY=${workers} (mean of 2 runs)`, `${fmt(many.rps)}/s  p50 ${ms(many.p50)}  p99 ${ms(many.p99)}`);
      record(`WEB_CONCURRENCY=${workers} ÷ WEB_CONCURRENCY=1, claims/s`, ratio(many.rps, one.rps));
      record(`faster here (the default is ${DEFAULT_WEB_CONCURRENCY})`, `WEB_CONCURRENCY=${many.rps > one.rps ? workers : 1}`);
      const clusterCeiling = await httpLoad({ url: clustered.url, key: partnerKey, body: TYPENAME, connections: 64, seconds: SECONDS });
      record(`ceiling: { __typename }, 64 connections, WEB_CONCURRENCY=${workers}`, `${fmt(clusterCeiling.requestsPerSecond)}/s  p50 ${ms(clusterCeiling.p50)}  p99 ${ms(clusterCeiling.p99)}`);
    } finally {
      await clustered.stop();
    }

    // Flat claim cost as the pool fills (the big campaign, filled in bulk between runs: the dead
    // index entries of docs/PERFORMANCE.md pitfall 1 are all there, no VACUUM in between).
    await open(big);
    const p50s: Record<number, number> = {};
    for (const fill of [0, 0.5, 0.9, 0.99]) {
      await fillTo(sql, big, fill, BIG);
      const run = nextRun();
      const r = await httpLoad({ url: server.url, key: partnerKey, body: CLAIM(big, run), connections: 16, seconds: FILL_SECONDS, okPattern: '"allocation":{"id"' });
      const stored = await claimedBy(sql, run);
      const problem = checkClaims(r, stored, 16);
      if (problem) failures.push(`claims at ${fill * 100}% fill: ${problem}`);
      p50s[fill] = r.p50;
      record(`claimTicket at ${fill * 100}% fill of ${fmt(BIG)}, 16 connections`, `${fmt(r.requestsPerSecond)}/s  p50 ${ms(r.p50)}  p99 ${ms(r.p99)}`);
    }
    record('p50 at 99% fill / p50 at 0% fill', ratio(p50s[0.99]!, p50s[0]!));

    // Reads on the million-ticket campaign.
    const stats = await sequentialLatency(server.url, partnerKey, 'query($id: ID!) { campaign(id: $id) { stats { total allocated held available fillRate soldOutAt } } }', { id: big }, 50);
    record(`campaign.stats on ${fmt(BIG)} tickets (sequential)`, `p50 ${ms(stats.p50)}  p99 ${ms(stats.p99)}`);
    const timeline = await sequentialLatency(server.url, ADMIN_KEY, 'query($id: ID!) { campaign(id: $id) { timeline(bucket: MINUTE) { at allocated cumulative } } }', { id: big }, 10);
    record(`campaign.timeline(MINUTE) on ${fmt(BIG)} tickets`, `p50 ${ms(timeline.p50)}  p99 ${ms(timeline.p99)}`);
    const partners = await sequentialLatency(server.url, ADMIN_KEY, 'query($id: ID!) { campaign(id: $id) { partnerStats { partner { id } allocated held quota } } }', { id: big }, 10);
    record(`campaign.partnerStats on ${fmt(BIG)} tickets`, `p50 ${ms(partners.p50)}  p99 ${ms(partners.p99)}`);

    const twice = (await ticketsLiveTwice(sql, null)).length;
    if (twice > 0) failures.push(`${twice} tickets have two live allocations`);
    record('tickets with two live allocations (must be 0)', String(twice));

    // Ratios the issue asks for, at 64 connections.
    record('claims/s ÷ ceiling at 64 connections', ratio(claims[64]!.requestsPerSecond, ceiling[64]!.requestsPerSecond));
    record('claims/s ÷ floor at 64 connections', ratio(claims[64]!.requestsPerSecond, floor[64]!.requestsPerSecond));
  } finally {
    await server.stop();
    await sql.end();
    if (embedded) await embedded.stop();
  }
  if (failures.length > 0) {
    console.error(`\nFAIL: ${failures.join('; ')}`);
    process.exit(1);
  }
  if (!quick) writeResults(version, embedded ? 'embedded' : 'DATABASE_URL');
}

/**
 * Nothing lost, nothing duplicated: every acknowledged claim is stored, and at most one claim per
 * connection was stored without being acknowledged (autocannon stops reading when its time is up,
 * with one request in flight per connection, which the server still completes). Both hold whenever
 * the run's allocations are counted: acknowledged ones are committed before they are answered, and
 * the ones still in flight can only add up to the bound.
 */
function checkClaims(r: LoadResult, stored: number, connections: number): string | null {
  if (stored < r.ok) return `${r.ok} acknowledged but only ${stored} stored`;
  if (stored > r.ok + connections) return `${stored} stored but only ${r.ok} acknowledged (+${connections} in flight at most)`;
  if (r.errors > 0 || r.non2xx > 0) return `${r.non2xx} non-2xx answers, ${r.errors} errors`;
  return null;
}

/** Allocations of one campaign, or of all of them (null). */
async function countAllocations(sql: Client, campaignId: string | null): Promise<number> {
  return (await sql.query('SELECT count(*)::int AS n FROM allocations WHERE $1::uuid IS NULL OR campaign_id = $1', [campaignId])).rows[0].n;
}

/** Allocations made by the claims of run `run` (its holder), whichever campaign. */
async function claimedBy(sql: Client, run: string): Promise<number> {
  return (await sql.query('SELECT count(*)::int AS n FROM allocations WHERE holder = $1', [run])).rows[0].n;
}

/** Allocates tickets in bulk (as the operator) until `fill` of `total` are allocated. */
async function fillTo(sql: Client, campaignId: string, fill: number, total: number): Promise<void> {
  const target = Math.floor(fill * total);
  const current = await countAllocations(sql, campaignId);
  if (target <= current) return;
  await sql.query(
    `WITH picked AS MATERIALIZED (SELECT id FROM tickets WHERE campaign_id = $1 AND status = 'AVAILABLE' ORDER BY random() LIMIT $2),
          claimed AS (UPDATE tickets t SET status = 'ALLOCATED' FROM picked p
                       WHERE t.campaign_id = $1 AND t.id = p.id AND t.status = 'AVAILABLE' RETURNING t.campaign_id, t.id)
     INSERT INTO allocations (campaign_id, ticket_id, partner_id, holder, status)
     SELECT campaign_id, id, $3, 'bulk-fill', 'ACTIVE' FROM claimed`,
    [campaignId, target - current, OPERATOR_PARTNER_ID],
  );
}

function writeResults(version: string, where: string): void {
  const file = path.join(ROOT, 'docs/BENCHMARKS.md');
  const table = [
    `Last run: ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC — \`npm run bench\` — ${os.cpus().length} × ${os.cpus()[0]?.model.trim()}, ` +
      `${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}, PostgreSQL ${version} (${where}), load generator on the same machine.`,
    '',
    '| measurement | result |',
    '|---|---|',
    ...rows.map((r) => `| ${r.what} | ${r.value} |`),
  ].join('\n');
  const doc = readFileSync(file, 'utf8');
  writeFileSync(file, doc.replace(/<!-- bench:begin -->[\s\S]*<!-- bench:end -->/, `<!-- bench:begin -->\n${table}\n<!-- bench:end -->`));
  console.log('\nresults written to docs/BENCHMARKS.md');
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? (error.stack ?? error.message) : error);
  process.exit(1);
});
