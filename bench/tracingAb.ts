// `node --import tsx bench/tracingAb.ts [--profile] [--control]`: hot claims at 64 connections
// against pairs of new Tessera instances on one database — tracing off, and tracing on at ratio
// 1.0 exporting OTLP to a receiver in a process of its own — in alternating runs of 5 s (ABBA):
// the quick way to see what tracing costs while working on it (`npm run bench` measures it for the
// record). AB_PAIRS pairs (3 unless set), each new, AB_ROUNDS rounds each (2 unless set): two
// instances of the same code differ by up to 7% in CPU per claim for as long as they run (--control
// runs, 2026-12-07), so one pair's ratio says as much about the pair as about tracing. Each run
// prints claims per second and each server's CPU per claim (event loop and process, from /proc);
// each pair, its ratios, the batcher's claims per group statement and GC time; the end, the ratios
// over all pairs. With --profile each instance writes a V8 CPU profile
// (--cpu-prof) into .tessera/profiles/ when it stops; with --control both run untraced (what the
// A/B itself differs by). AB_BATCH and AB_DELAY set the traced instances'
// OTEL_BSP_MAX_EXPORT_BATCH_SIZE and OTEL_BSP_SCHEDULE_DELAY; AB_NODE_FLAGS, options for node in
// both instances (e.g. `--max-semi-space-size=32`). AB_SELECTION=bench makes the claims ask for
// what `npm run bench`'s do (the sequence and the ticket's code), AB_WEBHOOKS=1 gives both
// instances a WEBHOOK_SECRET_KEY as the bench's have: the two ways the A/B differed from the full
// bench's tracing phase (2026-12-07: with both, 0.96×; without, the run after, 0.87×), and
// AB_SPREAD=1 / AB_VACUUM=1 its other two: a spread run after each hot one, a VACUUM before each
// run (with all four: 0.95×, 0.91×).
// Uses DATABASE_URL's server (database `tessera_tracing_ab`, dropped and created).
import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { Client } from 'pg';
import { migrate } from '../src/db/migrate';
import { mainThreadCpu, postmasterOf, treeCpu } from './cpu';
import { ADMIN_KEY, freePort, gql, httpLoad, ROOT, Server } from './harness';
import { startOtlpReceiver } from './otlpReceiver';

const SECONDS = 5;
const PAIRS = Number(process.env.AB_PAIRS ?? 3);
const ROUNDS = Number(process.env.AB_ROUNDS ?? 2);
/** AB_SPREAD=1: a spread run (64 campaigns) after each hot run, as npm run bench's tracing phase has; AB_VACUUM=1: a VACUUM before each run, as it has. */
const SPREAD = process.env.AB_SPREAD === '1';
const VACUUM = process.env.AB_VACUUM === '1';
const SPREAD_CAMPAIGNS = SPREAD ? 64 : 0;

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

function ratios(t: Record<Side, Totals>): string {
  const perClaim = (side: Totals) => ({ main: (side.main / side.claims) * 1e6, all: (side.all / side.claims) * 1e6 });
  const [on, off] = [perClaim(t.on), perClaim(t.off)];
  return (
    `tracing on ÷ off: ${(mean(t.on.rates) / mean(t.off.rates)).toFixed(2)}× (${Math.round(mean(t.on.rates))} / ${Math.round(mean(t.off.rates))}/s); ` +
    `CPU per claim event loop ${(on.main / off.main).toFixed(2)}× (${Math.round(on.main)} / ${Math.round(off.main)} µs), process ${(on.all / off.all).toFixed(2)}× (${Math.round(on.all)} / ${Math.round(off.all)} µs); ` +
    `the OTLP receiver ${((t.on.receiver / t.on.claims) * 1e6).toFixed(1)} µs a traced claim; ` +
    `PostgreSQL ${Math.round((t.on.postgres / t.on.claims) * 1e6)} / ${Math.round((t.off.postgres / t.off.claims) * 1e6)} µs, the load generator ${Math.round((t.on.load / t.on.claims) * 1e6)} / ${Math.round((t.off.load / t.off.claims) * 1e6)} µs a claim`
  );
}

async function main(): Promise<void> {
  const serverUrl = process.env.DATABASE_URL;
  if (!serverUrl) throw new Error('set DATABASE_URL to a PostgreSQL server');
  const admin = new Client({ connectionString: serverUrl });
  await admin.connect();
  await admin.query('DROP DATABASE IF EXISTS tessera_tracing_ab WITH (FORCE)');
  await admin.query('CREATE DATABASE tessera_tracing_ab');
  await admin.end();
  const dbUrl = new URL(serverUrl);
  dbUrl.pathname = '/tessera_tracing_ab';
  await migrate(dbUrl.toString());
  const probe = new Client({ connectionString: serverUrl });
  await probe.connect();
  const postmaster = await postmasterOf(probe);
  await probe.end();
  const loadCpu = () => {
    const used = process.cpuUsage();
    return (used.user + used.system) / 1e6;
  };
  const receiver = await startOtlpReceiver();
  const env = {
    DATABASE_URL: dbUrl.toString(),
    RATE_LIMIT_POINTS_PER_SECOND: '10000000',
    WEB_CONCURRENCY: '1',
    // AB_WEBHOOKS=1: a webhook secret key, as npm run bench's instances have (its dispatcher runs).
    ...(process.env.AB_WEBHOOKS === '1' ? { WEBHOOK_SECRET_KEY: randomBytes(32).toString('base64') } : {}),
  };
  const profiles = path.join(ROOT, '.tessera/profiles');
  const profile = process.argv.includes('--profile');
  if (profile) mkdirSync(profiles, { recursive: true });
  const execArgv = [...(profile ? ['--cpu-prof', `--cpu-prof-dir=${profiles}`] : []), ...(process.env.AB_NODE_FLAGS ? process.env.AB_NODE_FLAGS.split(' ') : [])];
  const tracedEnv = {
    ...env,
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
    OTEL_BSP_MAX_QUEUE_SIZE: '65536',
    OTEL_BSP_MAX_EXPORT_BATCH_SIZE: process.env.AB_BATCH ?? '512',
    OTEL_BSP_SCHEDULE_DELAY: process.env.AB_DELAY ?? '1000',
    // --control: the same instance with tracing disabled — what two untraced instances differ by here.
    ...(process.argv.includes('--control') ? { OTEL_SDK_DISABLED: 'true' } : {}),
    ...(process.env.OTEL_EXPORTER_OTLP_PROTOCOL ? { OTEL_EXPORTER_OTLP_PROTOCOL: process.env.OTEL_EXPORTER_OTLP_PROTOCOL } : {}),
  };

  // The campaign is set up by an instance of its own, stopped before the measured ones start: a
  // 400,000-ticket load leaves its marks on the instance that ran it (its heap, its compiled code),
  // which made that side 5-7% dearer per claim in --control runs.
  const setup = new Server(await freePort(), env);
  await setup.start();
  let partnerKey: string;
  let campaign: string;
  const spreadCampaigns: string[] = [];
  try {
    partnerKey = (await gql(setup.url, ADMIN_KEY, 'mutation { createPartner(input: { name: "ab" }) { apiKey } }')).createPartner.apiKey as string;
    campaign = (await gql(setup.url, ADMIN_KEY, 'mutation { createCampaign(input: { name: "ab" }) { campaign { id } } }')).createCampaign.campaign.id as string;
    await gql(setup.url, ADMIN_KEY, `mutation { generateTickets(campaignId: "${campaign}", count: 400000) { loaded } }`);
    await gql(setup.url, ADMIN_KEY, `mutation { openCampaign(id: "${campaign}") { campaign { id } } }`);
    for (let i = 0; i < SPREAD_CAMPAIGNS; i += 1) {
      const id = (await gql(setup.url, ADMIN_KEY, `mutation { createCampaign(input: { name: "ab spread ${i}" }) { campaign { id } } }`)).createCampaign.campaign.id as string;
      await gql(setup.url, ADMIN_KEY, `mutation { generateTickets(campaignId: "${id}", count: 6000) { loaded } }`);
      await gql(setup.url, ADMIN_KEY, `mutation { openCampaign(id: "${id}") { campaign { id } } }`);
      spreadCampaigns.push(id);
    }
  } finally {
    await setup.stop();
  }
  // AB_SELECTION=bench: the selection npm run bench's claims ask for (the ticket's code, the sequence).
  const selection = process.env.AB_SELECTION === 'bench' ? 'allocation { id sequence ticket { code } } error { code }' : 'allocation { id } error { code }';
  const claimOn = (id: string) => JSON.stringify({ query: `mutation { claimTicket(input: { campaignId: "${id}", holder: "ab" }) { ${selection} } }` });
  const body = claimOn(campaign);
  const spreadBodies = spreadCampaigns.map(claimOn);
  const vacuum = async () => {
    if (!VACUUM) return;
    const c = new Client({ connectionString: dbUrl.toString() });
    await c.connect();
    await c.query('VACUUM');
    await c.end();
  };
  const all = totals();
  try {
    for (let pair = 1; pair <= PAIRS; pair += 1) {
      const servers: Record<Side, Server> = { off: new Server(await freePort(), env, execArgv), on: new Server(await freePort(), tracedEnv, execArgv) };
      const these = totals();
      try {
        await servers.off.start();
        await servers.on.start();
        if (profile) console.log(`pair ${pair} profiles: untraced pid ${servers.off.pid}, traced pid ${servers.on.pid}`);
        for (const server of [servers.off, servers.on]) await httpLoad({ url: server.url, key: partnerKey, body, connections: 64, seconds: 2 });
        for (let round = 1; round <= ROUNDS; round += 1) {
          // ABBA: on first in odd rounds, off first in even ones — the machine's drift falls on both alike.
          const order: Side[] = (pair + round) % 2 === 0 ? ['on', 'off'] : ['off', 'on'];
          for (const side of order) {
            await vacuum();
            const pid = servers[side].pid!;
            const [main0, all0, receiver0, postgres0, load0] = [mainThreadCpu(pid), treeCpu(pid), treeCpu(receiver.pid), postmaster ? treeCpu(postmaster) : 0, loadCpu()];
            const r = await httpLoad({ url: servers[side].url, key: partnerKey, body, connections: 64, seconds: SECONDS, okPattern: '"allocation":{"id"' });
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
            console.log(
              `pair ${pair} round ${round} tracing ${side}: ${Math.round(r.requestsPerSecond)}/s p50 ${r.p50} ms p99 ${r.p99} ms (ok ${r.ok} of ${r.requests}); CPU per claim ${Math.round((mainCpu / r.ok) * 1e6)} µs event loop, ${Math.round((allCpu / r.ok) * 1e6)} µs process`,
            );
            if (SPREAD) {
              // As npm run bench's tracing phase: a spread run after each hot one, on the same instance (not counted).
              await vacuum();
              const spread = await httpLoad({ url: servers[side].url, key: partnerKey, body: spreadBodies[0]!, bodies: spreadBodies, connections: 64, seconds: SECONDS, okPattern: '"allocation":{"id"' });
              console.log(`pair ${pair} round ${round} tracing ${side}, spread (not counted): ${Math.round(spread.requestsPerSecond)}/s`);
            }
          }
        }
        console.log(`pair ${pair}: ${ratios(these)}`);
        {
          // The batcher's groups: fewer claims per statement means more of Node's work per claim.
          for (const side of ['on', 'off'] as const) {
            const metrics = await (await fetch(servers[side].url.replace('/graphql', '/metrics'))).text();
            const read = (series: string) => Number(new RegExp(`^tessera_claim_batch_size_${series}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(metrics)?.[1]);
            const gc = [...metrics.matchAll(/^tessera_nodejs_gc_duration_seconds_sum\{kind="(\w+)"\} (\S+)$/gm)].map(([, kind, seconds]) => `${kind} ${Number(seconds).toFixed(2)} s`);
            console.log(`pair ${pair} tracing ${side}: claims per group statement ${(read('sum') / read('count')).toFixed(2)}; garbage collection ${gc.join(', ')}`);
          }
        }
      } finally {
        await servers.on.stop();
        await servers.off.stop();
      }
    }
    console.log(`all ${PAIRS} pairs: ${ratios(all)}`);
  } finally {
    const got = await receiver.counts();
    console.log(`exported: ${got.spans} spans in ${got.requests} requests`);
    await receiver.close();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
