// What tracing costs hot claims: claims at 64 connections on one campaign against pairs of new
// Tessera instances on one database — tracing off, and tracing on at a sampling ratio, exporting
// OTLP (protobuf over HTTP, the SDK's batch processor) to a receiver in a process of its own
// (otlpReceiver.ts) — in alternating runs (ABBA). The figure is the traced instances' claims per
// second ÷ the untraced ones', over all pairs, against its bar (TRACING_BARS): at ratio 1.0 at
// least 0.80×, at ratio 0.1 at least 0.90×. Several pairs, each new, several rounds each: two
// instances of the same code differ by up to 7% in CPU per claim for as long as they run
// (--control), so one pair's ratio says as much about the pair as about tracing.
//
// As a module: `measureTracing({ ratio })` — one ratio, a database of its own (dropped and created
// on DATABASE_URL's server, or `serverUrl`), its result with the bar. As a script:
//   node --import tsx bench/tracingAb.ts [--ratio 1,0.1] [--quick] [--profile] [--control]
// measures each ratio given (1 and 0.1 unless AB_RATIOS or --ratio say otherwise) and prints each
// run, each pair's ratios (throughput, CPU per claim of the event loop and the process, from /proc;
// the batcher's claims per group statement; GC time) and each ratio's figure against its bar; it
// exits 1 when a bar is missed. --quick: one pair, two rounds of 2 s (a look, not a figure to
// record: on a loaded machine a new instance is still warming up). --profile: each instance writes
// a V8 CPU profile (--cpu-prof) into .tessera/profiles/ when it stops. --control: both instances
// untraced (what the A/B itself differs by).
// Environment: AB_PAIRS (3), AB_ROUNDS (2), AB_SECONDS (5); AB_BATCH and AB_DELAY, the traced
// instances' OTEL_BSP_MAX_EXPORT_BATCH_SIZE and OTEL_BSP_SCHEDULE_DELAY; AB_NODE_FLAGS, options for
// node in both instances (e.g. `--max-semi-space-size=32`); and the ways an A/B can be made more
// like `npm run bench`'s tracing phase (with the first two, 0.96×; without, the run after, 0.87×;
// with all four: 0.95×, 0.91×): AB_SELECTION=bench (the claims ask for the sequence and the
// ticket's code), AB_WEBHOOKS=1 (both instances have a WEBHOOK_SECRET_KEY: the dispatcher runs),
// AB_SPREAD=1 (a spread run over 64 campaigns after each hot one, not counted), AB_VACUUM=1 (a
// VACUUM before each run).
import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { Client } from 'pg';
import { migrate } from '../src/db/migrate';
import { mainThreadCpu, postmasterOf, treeCpu } from './cpu';
import { ADMIN_KEY, freePort, gql, httpLoad, ROOT, Server } from './harness';
import { startOtlpReceiver, type Received } from './otlpReceiver';

/** The least traced ÷ untraced claims per second each measured ratio must reach. */
export const TRACING_BARS: ReadonlyMap<number, number> = new Map([
  [1, 0.8],
  [0.1, 0.9],
]);

export interface TracingAbOptions {
  /** The share of traces sampled, 0 to 1 (OTEL_TRACES_SAMPLER_ARG of parentbased_traceidratio; 1: parentbased_always_on). */
  ratio: number;
  /** PostgreSQL server to make the database `tessera_tracing_ab` on (DATABASE_URL unless given). */
  serverUrl?: string;
  pairs?: number;
  rounds?: number;
  /** Seconds of each measured run (each instance is warmed up for 2 s first). */
  seconds?: number;
  /** One pair, two rounds (on-off, off-on) of 2 s, a smaller campaign: a look, not a figure to record. */
  quick?: boolean;
  /** Both instances untraced: what the A/B differs by by itself. */
  control?: boolean;
  /** Each instance writes a V8 CPU profile into .tessera/profiles/ when it stops. */
  profile?: boolean;
  /** Where the progress lines go (console.log unless given). */
  log?: (line: string) => void;
}

export interface TracingAbResult {
  ratio: number;
  /** Traced ÷ untraced claims per second, means over every run of every pair: the figure of the bar. */
  throughput: number;
  /** Traced ÷ untraced CPU per claim, the event loop's and the whole process's (above 1: tracing costs). */
  cpuPerClaim: { eventLoop: number; process: number };
  pairs: number[];
  /** The bar for this ratio (TRACING_BARS), when it has one, and whether the figure reached it. */
  bar?: number;
  pass?: boolean;
  /** What the receiver got over the whole measurement. */
  exported: Received;
  /** One line: the figure against its bar, and the rest. */
  summary: string;
}

type Side = 'on' | 'off';
interface Totals {
  rates: number[];
  /** CPU seconds during this side's runs of the OTLP receiver, PostgreSQL (all its processes) and this process (the load generator). */
  receiver: number;
  postgres: number;
  load: number;
  /** CPU seconds (event loop, process) over the claims they made. */
  main: number;
  all: number;
  claims: number;
}
const totals = (): Record<Side, Totals> => ({ on: { rates: [], receiver: 0, postgres: 0, load: 0, main: 0, all: 0, claims: 0 }, off: { rates: [], receiver: 0, postgres: 0, load: 0, main: 0, all: 0, claims: 0 } });
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const perClaim = (side: Totals) => ({ main: (side.main / side.claims) * 1e6, all: (side.all / side.claims) * 1e6 });
const throughputOf = (t: Record<Side, Totals>) => mean(t.on.rates) / mean(t.off.rates);

function ratios(t: Record<Side, Totals>): string {
  const [on, off] = [perClaim(t.on), perClaim(t.off)];
  return (
    `tracing on ÷ off: ${throughputOf(t).toFixed(2)}× (${Math.round(mean(t.on.rates))} / ${Math.round(mean(t.off.rates))}/s); ` +
    `CPU per claim event loop ${(on.main / off.main).toFixed(2)}× (${Math.round(on.main)} / ${Math.round(off.main)} µs), process ${(on.all / off.all).toFixed(2)}× (${Math.round(on.all)} / ${Math.round(off.all)} µs); ` +
    `the OTLP receiver ${((t.on.receiver / t.on.claims) * 1e6).toFixed(1)} µs a traced claim; ` +
    `PostgreSQL ${Math.round((t.on.postgres / t.on.claims) * 1e6)} / ${Math.round((t.off.postgres / t.off.claims) * 1e6)} µs, the load generator ${Math.round((t.on.load / t.on.claims) * 1e6)} / ${Math.round((t.off.load / t.off.claims) * 1e6)} µs a claim`
  );
}

/** The sampler settings of a traced instance at `ratio`. */
function samplerEnv(ratio: number): Record<string, string> {
  if (!(ratio >= 0 && ratio <= 1)) throw new Error(`the sampling ratio must be from 0 to 1 (got ${ratio})`);
  return ratio === 1 ? { OTEL_TRACES_SAMPLER: 'parentbased_always_on' } : { OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: String(ratio) };
}

/** A new database `tessera_tracing_ab` on `serverUrl`, migrated: its URL, and the postmaster's pid (for its CPU). */
async function freshDatabase(serverUrl: string): Promise<{ dbUrl: string; postmaster: number | null }> {
  const admin = new Client({ connectionString: serverUrl });
  await admin.connect();
  try {
    await admin.query('DROP DATABASE IF EXISTS tessera_tracing_ab WITH (FORCE)');
    await admin.query('CREATE DATABASE tessera_tracing_ab');
    const postmaster = await postmasterOf(admin);
    const dbUrl = new URL(serverUrl);
    dbUrl.pathname = '/tessera_tracing_ab';
    await migrate(dbUrl.toString());
    return { dbUrl: dbUrl.toString(), postmaster };
  } finally {
    await admin.end();
  }
}

/**
 * The campaign, by an instance of its own stopped before the measured ones start: a large ticket
 * load leaves its marks on the instance that ran it (its heap, its compiled code), which made that
 * side 5-7% dearer per claim in --control runs.
 */
async function setUpCampaigns(env: Record<string, string>, tickets: number, spread: number): Promise<{ partnerKey: string; campaign: string; spreadCampaigns: string[] }> {
  const setup = new Server(await freePort(), env);
  await setup.start();
  try {
    const partnerKey = (await gql(setup.url, ADMIN_KEY, 'mutation { createPartner(input: { name: "ab" }) { apiKey } }')).createPartner.apiKey as string;
    const campaign = (await gql(setup.url, ADMIN_KEY, 'mutation { createCampaign(input: { name: "ab" }) { campaign { id } } }')).createCampaign.campaign.id as string;
    await gql(setup.url, ADMIN_KEY, `mutation { generateTickets(campaignId: "${campaign}", count: ${tickets}) { loaded } }`);
    await gql(setup.url, ADMIN_KEY, `mutation { openCampaign(id: "${campaign}") { campaign { id } } }`);
    const spreadCampaigns: string[] = [];
    for (let i = 0; i < spread; i += 1) {
      const id = (await gql(setup.url, ADMIN_KEY, `mutation { createCampaign(input: { name: "ab spread ${i}" }) { campaign { id } } }`)).createCampaign.campaign.id as string;
      await gql(setup.url, ADMIN_KEY, `mutation { generateTickets(campaignId: "${id}", count: 6000) { loaded } }`);
      await gql(setup.url, ADMIN_KEY, `mutation { openCampaign(id: "${id}") { campaign { id } } }`);
      spreadCampaigns.push(id);
    }
    return { partnerKey, campaign, spreadCampaigns };
  } finally {
    await setup.stop();
  }
}

/** Tracing on at `options.ratio` against off, on hot claims: the figure and its bar. */
export async function measureTracing(options: TracingAbOptions): Promise<TracingAbResult> {
  const { ratio, quick = false, profile = false, control = false } = options;
  const log = options.log ?? ((line: string) => console.log(line));
  const pairsWanted = options.pairs ?? (quick ? 1 : Number(process.env.AB_PAIRS ?? 3));
  const rounds = options.rounds ?? (quick ? 2 : Number(process.env.AB_ROUNDS ?? 2));
  const seconds = options.seconds ?? (quick ? 2 : Number(process.env.AB_SECONDS ?? 5));
  const spreadRuns = process.env.AB_SPREAD === '1';
  const vacuumFirst = process.env.AB_VACUUM === '1';
  const serverUrl = options.serverUrl ?? process.env.DATABASE_URL;
  if (!serverUrl) throw new Error('set DATABASE_URL to a PostgreSQL server');
  const sampler = samplerEnv(ratio);

  const { dbUrl, postmaster } = await freshDatabase(serverUrl);
  const loadCpu = () => {
    const used = process.cpuUsage();
    return (used.user + used.system) / 1e6;
  };
  const env = {
    DATABASE_URL: dbUrl,
    RATE_LIMIT_POINTS_PER_SECOND: '10000000',
    WEB_CONCURRENCY: '1',
    ...(process.env.AB_WEBHOOKS === '1' ? { WEBHOOK_SECRET_KEY: randomBytes(32).toString('base64') } : {}),
  };
  const profiles = path.join(ROOT, '.tessera/profiles');
  if (profile) mkdirSync(profiles, { recursive: true });
  const execArgv = [...(profile ? ['--cpu-prof', `--cpu-prof-dir=${profiles}`] : []), ...(process.env.AB_NODE_FLAGS ? process.env.AB_NODE_FLAGS.split(' ') : [])];
  // Enough tickets that no run sells out (a refusal is answered faster than a claim); a quick run claims far fewer.
  const { partnerKey, campaign, spreadCampaigns } = await setUpCampaigns(env, quick ? 60_000 : 400_000, spreadRuns ? 64 : 0);
  const selection = process.env.AB_SELECTION === 'bench' ? 'allocation { id sequence ticket { code } } error { code }' : 'allocation { id } error { code }';
  const claimOn = (id: string) => JSON.stringify({ query: `mutation { claimTicket(input: { campaignId: "${id}", holder: "ab" }) { ${selection} } }` });
  const body = claimOn(campaign);
  const spreadBodies = spreadCampaigns.map(claimOn);
  const vacuum = async () => {
    if (!vacuumFirst) return;
    const c = new Client({ connectionString: dbUrl });
    await c.connect();
    await c.query('VACUUM');
    await c.end();
  };

  const receiver = await startOtlpReceiver();
  const tracedEnv = {
    ...env,
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
    ...sampler,
    // A queue with room for a claim storm's spans (docs/OBSERVABILITY.md, "Sizing the export").
    OTEL_BSP_MAX_QUEUE_SIZE: '65536',
    OTEL_BSP_MAX_EXPORT_BATCH_SIZE: process.env.AB_BATCH ?? '512',
    OTEL_BSP_SCHEDULE_DELAY: process.env.AB_DELAY ?? '1000',
    ...(control ? { OTEL_SDK_DISABLED: 'true' } : {}),
    ...(process.env.OTEL_EXPORTER_OTLP_PROTOCOL ? { OTEL_EXPORTER_OTLP_PROTOCOL: process.env.OTEL_EXPORTER_OTLP_PROTOCOL } : {}),
  };
  const label = `ratio ${ratio}${control ? ' (control: both untraced)' : ''}`;
  const all = totals();
  const pairRatios: number[] = [];
  let exported: Received;
  try {
    for (let pair = 1; pair <= pairsWanted; pair += 1) {
      const servers: Record<Side, Server> = { off: new Server(await freePort(), env, execArgv), on: new Server(await freePort(), tracedEnv, execArgv) };
      const these = totals();
      try {
        await servers.off.start();
        await servers.on.start();
        if (profile) log(`${label} pair ${pair} profiles: untraced pid ${servers.off.pid}, traced pid ${servers.on.pid}`);
        for (const server of [servers.off, servers.on]) await httpLoad({ url: server.url, key: partnerKey, body, connections: 64, seconds: 2 });
        for (let round = 1; round <= rounds; round += 1) {
          // ABBA: on first in odd rounds, off first in even ones — the machine's drift falls on both alike.
          const order: Side[] = (pair + round) % 2 === 0 ? ['on', 'off'] : ['off', 'on'];
          for (const side of order) {
            await vacuum();
            const pid = servers[side].pid!;
            const [main0, all0, receiver0, postgres0, load0] = [mainThreadCpu(pid), treeCpu(pid), treeCpu(receiver.pid), postmaster ? treeCpu(postmaster) : 0, loadCpu()];
            const r = await httpLoad({ url: servers[side].url, key: partnerKey, body, connections: 64, seconds, okPattern: '"allocation":{"id"' });
            const [mainCpu, allCpu, receiverCpu] = [mainThreadCpu(pid) - main0, treeCpu(pid) - all0, treeCpu(receiver.pid) - receiver0];
            const [postgresCpu, load] = [(postmaster ? treeCpu(postmaster) : 0) - postgres0, loadCpu() - load0];
            for (const t of [these, all]) {
              t[side].rates.push(r.requestsPerSecond);
              t[side].main += mainCpu;
              t[side].receiver += receiverCpu;
              t[side].postgres += postgresCpu;
              t[side].load += load;
              t[side].all += allCpu;
              t[side].claims += r.ok;
            }
            log(
              `${label} pair ${pair} round ${round} tracing ${side}: ${Math.round(r.requestsPerSecond)}/s p50 ${r.p50} ms p99 ${r.p99} ms (ok ${r.ok} of ${r.requests}); CPU per claim ${Math.round((mainCpu / r.ok) * 1e6)} µs event loop, ${Math.round((allCpu / r.ok) * 1e6)} µs process`,
            );
            if (spreadRuns) {
              await vacuum();
              const spread = await httpLoad({ url: servers[side].url, key: partnerKey, body: spreadBodies[0]!, bodies: spreadBodies, connections: 64, seconds, okPattern: '"allocation":{"id"' });
              log(`${label} pair ${pair} round ${round} tracing ${side}, spread (not counted): ${Math.round(spread.requestsPerSecond)}/s`);
            }
          }
        }
        pairRatios.push(throughputOf(these));
        log(`${label} pair ${pair}: ${ratios(these)}`);
        // The batcher's groups: fewer claims per statement means more of Node's work per claim.
        for (const side of ['on', 'off'] as const) {
          const metrics = await (await fetch(servers[side].url.replace('/graphql', '/metrics'))).text();
          const read = (series: string) => Number(new RegExp(`^tessera_claim_batch_size_${series}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(metrics)?.[1]);
          const gc = [...metrics.matchAll(/^tessera_nodejs_gc_duration_seconds_sum\{kind="(\w+)"\} (\S+)$/gm)].map(([, kind, s]) => `${kind} ${Number(s).toFixed(2)} s`);
          log(`${label} pair ${pair} tracing ${side}: claims per group statement ${(read('sum') / read('count')).toFixed(2)}; garbage collection ${gc.join(', ')}`);
        }
      } finally {
        await servers.on.stop(); // its last spans exported at shutdown
        await servers.off.stop();
      }
    }
  } finally {
    exported = await receiver.counts();
    await receiver.close();
  }
  const throughput = throughputOf(all);
  const [on, off] = [perClaim(all.on), perClaim(all.off)];
  const bar = TRACING_BARS.get(ratio);
  const pass = bar === undefined ? undefined : throughput >= bar;
  const verdict = bar === undefined ? 'no bar at this ratio' : `bar ≥ ${bar.toFixed(2)}×: ${pass ? 'pass' : 'FAIL'}`;
  const summary =
    `tracing at ${label}, hot claims on ÷ off: ${throughput.toFixed(2)}× (${verdict}; ${pairRatios.length} pair${pairRatios.length > 1 ? 's' : ''}: ${pairRatios.map((x) => `${x.toFixed(2)}×`).join(', ')}); ` +
    `${ratios(all)}; exported ${exported.spans} spans in ${exported.requests} requests`;
  log(summary);
  return { ratio, throughput, cpuPerClaim: { eventLoop: on.main / off.main, process: on.all / off.all }, pairs: pairRatios, bar, pass, exported, summary };
}

async function main(): Promise<void> {
  const at = process.argv.indexOf('--ratio');
  const given = at > 0 ? process.argv[at + 1] : process.env.AB_RATIOS;
  const wanted = (given ?? '1,0.1').split(',').map(Number);
  const flags = { quick: process.argv.includes('--quick'), profile: process.argv.includes('--profile'), control: process.argv.includes('--control') };
  const results: TracingAbResult[] = [];
  for (const ratio of wanted) results.push(await measureTracing({ ratio, ...flags }));
  console.log('\nthe bars (traced ÷ untraced claims per second, hot claims at 64 connections):');
  for (const r of results) console.log(`  ratio ${r.ratio}: ${r.throughput.toFixed(2)}×  ${r.bar === undefined ? 'no bar' : `bar ≥ ${r.bar.toFixed(2)}×  ${r.pass ? 'pass' : 'FAIL'}`}`);
  if (results.some((r) => r.pass === false)) process.exitCode = 1;
}

if (require.main === module) {
  main().catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
}
