// `npm run bench -- --citus`: claims spread over 64 campaigns, then claims of one hot campaign, on a
// Citus cluster (CITUS_URL: its coordinator; docs/SCALING.md, "Citus") against the same on plain
// PostgreSQL (DATABASE_URL, else the bench's embedded server), in the same run, one after the other,
// each on a fresh database migrated by Tessera itself (on Citus: distributed by the migrator). Then
// where the time went: the CPU each PostgreSQL node and the Tessera process used per claim, read from
// /proc around each run.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Client } from 'pg';
import { startEmbeddedPostgres, type EmbeddedDatabase } from '../src/db/embedded';
import { migrate } from '../src/db/migrate';
import { createCitusDatabase, dropCitusDatabase, findCitus } from '../test/helpers/citus';
import { ADMIN_KEY, freePort, gql, httpLoad, ROOT, Server, type LoadResult } from './harness';

/** Spread: claims over 64 campaigns (on Citus, over both workers); hot: one campaign (one worker). */
const SHAPES = [
  { name: 'spread', campaigns: 64, tickets: 2_000 },
  { name: 'hot', campaigns: 1, tickets: 60_000 },
] as const;
type Shape = (typeof SHAPES)[number];
const CONNECTIONS = 64;
const DATABASE = 'tessera_bench_citus';
const CLAIMED = '"allocation":{"id"';

interface Target {
  label: string;
  /** Each node's URL (database `postgres`): one for plain PostgreSQL, the coordinator first on Citus. */
  nodes: string[];
  create(): Promise<string>;
  drop(): Promise<void>;
  /** The server's environment beyond the bench's own. */
  env?: Record<string, string>;
}

interface Figures {
  result: LoadResult;
  /** CPU seconds per node (by port) and of the Tessera process during the run. */
  cpu: Map<string, number>;
  stored: number;
  twice: number;
  /** Claims per group statement (of 2 or more) during the run, and the share of claims that went in one. */
  groups: { size: number; share: number };
}

/** tessera_claim_batch_size's sum and count from the server's /metrics. */
async function batchSizes(url: string): Promise<{ sum: number; count: number }> {
  const text = await (await fetch(url.replace('/graphql', '/metrics'))).text();
  const read = (name: string) => Number(new RegExp(`^tessera_claim_batch_size_${name} (\\S+)$`, 'm').exec(text)?.[1] ?? 0);
  return { sum: read('sum'), count: read('count') };
}

const CLK_TCK = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;

/** The postmaster's pid of the PostgreSQL server at `url`, from its data directory's postmaster.pid. */
async function postmasterPid(url: string): Promise<number | null> {
  const c = new Client({ connectionString: url });
  await c.connect();
  try {
    const dir = (await c.query<{ d: string }>("SELECT current_setting('data_directory') AS d")).rows[0]!.d;
    return Number(readFileSync(path.join(dir, 'postmaster.pid'), 'utf8').split('\n')[0]);
  } catch {
    return null;
  } finally {
    await c.end();
  }
}

/** CPU seconds (user + system) of `pid` and its children that still run, plus those its finished children left. */
function cpuSeconds(pid: number): number {
  let total = 0;
  const stat = (p: number) => {
    const line = readFileSync(`/proc/${p}/stat`, 'utf8');
    return line.slice(line.lastIndexOf(')') + 2).split(' ');
  };
  try {
    const own = stat(pid);
    // utime, stime, cutime, cstime: fields 14-17 (1-based) of /proc/pid/stat; after the comm field, 12-15.
    total += Number(own[11]) + Number(own[12]) + Number(own[13]) + Number(own[14]);
    const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
    for (const child of children) {
      try {
        const s = stat(child);
        total += Number(s[11]) + Number(s[12]);
      } catch {
        /* gone */
      }
    }
  } catch {
    return 0;
  }
  return total / CLK_TCK;
}

async function measure(target: Target, shape: Shape, seconds: number): Promise<Figures> {
  const url = await target.create();
  const migrated = await migrate(url);
  console.log(`${target.label}: migrated (${migrated.filter((m) => m.startsWith('citus:')).length} Citus placements)`);
  const server = new Server(await freePort(), { DATABASE_URL: url, RATE_LIMIT_POINTS_PER_SECOND: '10000000', WEB_CONCURRENCY: '1', DATABASE_POOL_SIZE: '20', ...target.env });
  await server.start();
  const sql = new Client({ connectionString: url });
  await sql.connect();
  try {
    const key = (await gql(server.url, ADMIN_KEY, 'mutation { createPartner(input: { name: "bench" }) { apiKey } }')).createPartner.apiKey as string;
    const campaigns: string[] = [];
    for (let i = 0; i < shape.campaigns; i += 1) {
      const id = (await gql(server.url, ADMIN_KEY, `mutation { createCampaign(input: { name: "${shape.name} ${i}" }) { campaign { id } } }`)).createCampaign.campaign.id as string;
      await gql(server.url, ADMIN_KEY, `mutation { generateTickets(campaignId: "${id}", count: ${shape.tickets}) { loaded } }`);
      await gql(server.url, ADMIN_KEY, `mutation { openCampaign(id: "${id}") { campaign { id } } }`);
      campaigns.push(id);
    }
    const run = `bench-citus-${Date.now()}`;
    const bodies = campaigns.map((id) => JSON.stringify({ query: `mutation { claimTicket(input: { campaignId: "${id}", holder: "${run}" }) { allocation { id } error { code } } }` }));
    // Warm-up: the first claims of each campaign (and Node's JIT) are not what is measured.
    await httpLoad({ url: server.url, key, body: bodies[0]!, bodies, connections: CONNECTIONS, seconds: 1, okPattern: CLAIMED });
    const pids = new Map<string, number>();
    for (const node of target.nodes) {
      const pid = await postmasterPid(node);
      if (pid) pids.set(new URL(node).port || '5432', pid);
    }
    if (server.pid) pids.set('tessera', server.pid);
    const batchesBefore = await batchSizes(server.url);
    const before = new Map([...pids].map(([k, pid]) => [k, cpuSeconds(pid)]));
    const result = await httpLoad({ url: server.url, key, body: bodies[0]!, bodies, connections: CONNECTIONS, seconds, okPattern: CLAIMED });
    const cpu = new Map([...pids].map(([k, pid]) => [k, cpuSeconds(pid) - before.get(k)!]));
    const batchesAfter = await batchSizes(server.url);
    const grouped = batchesAfter.sum - batchesBefore.sum;
    const groupCount = batchesAfter.count - batchesBefore.count;
    const groups = { size: groupCount === 0 ? 1 : grouped / groupCount, share: grouped / Math.max(1, result.ok) };
    const stored = (await sql.query('SELECT count(*)::int AS n FROM allocations WHERE holder = $1', [run])).rows[0].n as number;
    const twice = (
      await sql.query(
        `SELECT count(*)::int AS n FROM (SELECT campaign_id, ticket_id FROM allocations WHERE campaign_id = ANY($1::uuid[]) AND status IN ('HELD', 'ACTIVE')
          GROUP BY campaign_id, ticket_id HAVING count(*) > 1) d`,
        [campaigns],
      )
    ).rows[0].n as number;
    return { result, cpu, stored, twice, groups };
  } finally {
    await sql.end();
    await server.stop();
    await target.drop();
  }
}

export async function citusBench(o: { quick: boolean }): Promise<number> {
  const seconds = o.quick ? 3 : 8;
  const found = await findCitus(process.env.CITUS_URL);
  if ('skip' in found) {
    console.log(`bench --citus: ${found.skip}`);
    return 0;
  }
  let embedded: EmbeddedDatabase | undefined;
  let plainUrl = process.env.DATABASE_URL;
  if (!plainUrl) {
    embedded = await startEmbeddedPostgres({ dir: path.join(ROOT, '.tessera/bench-pgdata'), port: 54379 });
    plainUrl = embedded.url;
  }
  const plainAdmin = new URL(plainUrl);
  plainAdmin.pathname = '/postgres';
  const plainDb = new URL(plainUrl);
  plainDb.pathname = `/${DATABASE}`;
  const admin = async (sqlText: string) => {
    const c = new Client({ connectionString: plainAdmin.toString() });
    await c.connect();
    await c.query(sqlText).finally(() => c.end());
  };
  const plain: Target = {
    label: 'plain PostgreSQL',
    nodes: [plainAdmin.toString()],
    create: async () => {
      await admin(`DROP DATABASE IF EXISTS ${DATABASE} WITH (FORCE)`);
      await admin(`CREATE DATABASE ${DATABASE}`);
      return plainDb.toString();
    },
    drop: () => admin(`DROP DATABASE IF EXISTS ${DATABASE} WITH (FORCE)`),
  };
  const coordinator = new URL(found.nodes[0]!);
  coordinator.pathname = `/${DATABASE}`;
  const citus: Target = {
    label: `Citus (coordinator + ${found.nodes.length - 1} workers)`,
    nodes: found.nodes,
    create: async () => {
      await dropCitusDatabase(found.nodes, DATABASE);
      await createCitusDatabase(found.nodes, DATABASE);
      return coordinator.toString();
    },
    drop: () => dropCitusDatabase(found.nodes, DATABASE),
  };
  // The same cluster with every claim alone, at most 10 in flight (half the pool): how claims went on
  // Citus before groups of one campaign — what the groups are measured against.
  const alone: Target = { ...citus, label: 'Citus, claims alone', env: { CLAIM_BATCH_MAX: '1', CLAIM_STATEMENTS_IN_FLIGHT: '10' } };
  let failures = 0;
  try {
    for (const shape of SHAPES) {
      console.log(`bench --citus: claimTicket ${shape.name}, ${shape.campaigns} campaign(s) of ${shape.tickets} tickets, ${CONNECTIONS} connections, ${seconds} s each`);
      const figures: Array<[Target, Figures]> = [];
      for (const target of [plain, alone, citus]) figures.push([target, await measure(target, shape, seconds)]);
      failures += report(figures);
    }
  } finally {
    if (embedded) await embedded.release();
  }
  return failures;
}

/** Prints each target's figures against the first's; returns how many broke a promise (a ticket twice, an acknowledged claim not stored, none acknowledged). */
function report(figures: ReadonlyArray<[Target, Figures]>): number {
  let failures = 0;
  const plainRate = figures[0]![1].result.requestsPerSecond;
  for (const [target, f] of figures) {
    const r = f.result;
    const claims = Math.max(1, r.ok);
    const where = [...f.cpu].map(([k, s]) => `${k === 'tessera' ? 'Tessera' : `:${k}`} ${((s * 1000) / claims).toFixed(2)} ms`).join(', ');
    console.log(
      `${target.label.padEnd(40)} ${Math.round(r.requestsPerSecond).toLocaleString('en-US')}/s  p50 ${r.p50.toFixed(1)} ms  p99 ${r.p99.toFixed(1)} ms  ` +
        `${(r.requestsPerSecond / plainRate).toFixed(2)}× plain  (${r.ok} acknowledged, ${f.stored} stored, ${f.twice} tickets twice, ${r.non2xx + r.errors} errors)`,
    );
    console.log(`${''.padEnd(40)} CPU per claim: ${where}; ${Math.round(f.groups.share * 100)}% of claims in groups, ${f.groups.size.toFixed(1)} claims a group`);
    if (f.twice > 0 || f.stored < r.ok || r.ok === 0) failures += 1;
  }
  return failures;
}
