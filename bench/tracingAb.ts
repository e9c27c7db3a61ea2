// `node --import tsx bench/tracingAb.ts [--profile] [--control]`: hot claims at 64 connections
// against two new Tessera instances on one database — tracing off, and tracing on at ratio 1.0
// exporting OTLP to a receiver in a process of its own — in alternating runs of 5 s (ABBA,
// AB_ROUNDS rounds, 3 unless set): the quick way to see what tracing costs while working on it
// (`npm run bench` measures it for the record). Each run prints claims per second and each
// server's CPU per claim (event loop and process, from /proc); the end, the ratios, the batcher's
// claims per group statement and GC time. With --profile both instances write a V8 CPU profile
// (--cpu-prof) into .tessera/profiles/ when they stop; with --control both run untraced (what the
// A/B itself differs by). AB_BATCH and AB_DELAY set the traced instance's
// OTEL_BSP_MAX_EXPORT_BATCH_SIZE and OTEL_BSP_SCHEDULE_DELAY.
// Uses DATABASE_URL's server (database `tessera_tracing_ab`, dropped and created).
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { Client } from 'pg';
import { migrate } from '../src/db/migrate';
import { mainThreadCpu, treeCpu } from './cpu';
import { ADMIN_KEY, freePort, gql, httpLoad, ROOT, Server } from './harness';
import { startOtlpReceiver } from './otlpReceiver';

const SECONDS = 5;
const ROUNDS = Number(process.env.AB_ROUNDS ?? 3);

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
  const receiver = await startOtlpReceiver();
  const env = { DATABASE_URL: dbUrl.toString(), RATE_LIMIT_POINTS_PER_SECOND: '10000000', WEB_CONCURRENCY: '1' };
  const profiles = path.join(ROOT, '.tessera/profiles');
  if (process.argv.includes('--profile')) mkdirSync(profiles, { recursive: true });
  const plain = new Server(await freePort(), env, process.argv.includes('--profile') ? ['--cpu-prof', `--cpu-prof-dir=${profiles}`] : []);
  const traced = new Server(await freePort(), {
    ...env,
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
    OTEL_BSP_MAX_QUEUE_SIZE: '65536',
    OTEL_BSP_MAX_EXPORT_BATCH_SIZE: process.env.AB_BATCH ?? '4096',
    OTEL_BSP_SCHEDULE_DELAY: process.env.AB_DELAY ?? '1000',
    // --control: the same instance with tracing disabled — what two untraced instances differ by here.
    ...(process.argv.includes('--control') ? { OTEL_SDK_DISABLED: 'true' } : {}),
    ...(process.env.OTEL_EXPORTER_OTLP_PROTOCOL ? { OTEL_EXPORTER_OTLP_PROTOCOL: process.env.OTEL_EXPORTER_OTLP_PROTOCOL } : {}),
  }, process.argv.includes('--profile') ? ['--cpu-prof', `--cpu-prof-dir=${profiles}`] : []);
  await plain.start();
  await traced.start();
  if (process.argv.includes('--profile')) console.log(`profiles: untraced pid ${plain.pid}, traced pid ${traced.pid}`);
  try {
    const partnerKey = (await gql(plain.url, ADMIN_KEY, 'mutation { createPartner(input: { name: "ab" }) { apiKey } }')).createPartner.apiKey as string;
    const campaign = (await gql(plain.url, ADMIN_KEY, 'mutation { createCampaign(input: { name: "ab" }) { campaign { id } } }')).createCampaign.campaign.id as string;
    await gql(plain.url, ADMIN_KEY, `mutation { generateTickets(campaignId: "${campaign}", count: 400000) { loaded } }`);
    await gql(plain.url, ADMIN_KEY, `mutation { openCampaign(id: "${campaign}") { campaign { id } } }`);
    const body = JSON.stringify({ query: `mutation { claimTicket(input: { campaignId: "${campaign}", holder: "ab" }) { allocation { id } error { code } } }` });
    for (const server of [plain, traced]) await httpLoad({ url: server.url, key: partnerKey, body, connections: 64, seconds: 2 });
    const rates = { off: [] as number[], on: [] as number[] };
    // CPU per claim (µs), the event loop's and the whole process's (worker threads included): less noisy than claims per second.
    const cpu = { off: { main: 0, all: 0, claims: 0 }, on: { main: 0, all: 0, claims: 0 } };
    for (let round = 1; round <= ROUNDS; round += 1) {
      // ABBA: on first in odd rounds, off first in even ones — the machine's drift during a run falls on both alike.
      const order = [
        ['on', traced],
        ['off', plain],
      ] as const;
      for (const [name, server] of round % 2 === 1 ? order : [...order].reverse()) {
        const pid = server.pid!;
        const [main0, all0] = [mainThreadCpu(pid), treeCpu(pid)];
        const r = await httpLoad({ url: server.url, key: partnerKey, body, connections: 64, seconds: SECONDS, okPattern: '"allocation":{"id"' });
        const [main, all] = [mainThreadCpu(pid) - main0, treeCpu(pid) - all0];
        Object.assign(cpu[name], { main: cpu[name].main + main, all: cpu[name].all + all, claims: cpu[name].claims + r.ok });
        rates[name].push(r.requestsPerSecond);
        console.log(
          `round ${round} tracing ${name}: ${Math.round(r.requestsPerSecond)}/s p50 ${r.p50} ms p99 ${r.p99} ms (ok ${r.ok} of ${r.requests}); CPU per claim ${Math.round((main / r.ok) * 1e6)} µs event loop, ${Math.round((all / r.ok) * 1e6)} µs process`,
        );
      }
    }
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    console.log(`tracing on ÷ off: ${(mean(rates.on) / mean(rates.off)).toFixed(2)}×  (${Math.round(mean(rates.on))} / ${Math.round(mean(rates.off))}/s)`);
    // The batcher's groups: fewer claims per statement means more of Node's work per claim.
    for (const [name, server] of [
      ['on', traced],
      ['off', plain],
    ] as const) {
      const metrics = await (await fetch(server.url.replace('/graphql', '/metrics'))).text();
      const read = (series: string) => Number(new RegExp(`^tessera_claim_batch_size_${series}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(metrics)?.[1]);
      const gc = [...metrics.matchAll(/^tessera_nodejs_gc_duration_seconds_sum\{kind="(\w+)"\} (\S+)$/gm)].map(([, kind, seconds]) => `${kind} ${Number(seconds).toFixed(2)} s`);
      console.log(`tracing ${name}: claims per group statement ${(read('sum') / read('count')).toFixed(2)}; garbage collection ${gc.join(', ')}`);
    }
    const perClaim = (side: { main: number; all: number; claims: number }) => ({ main: (side.main / side.claims) * 1e6, all: (side.all / side.claims) * 1e6 });
    const [on, off] = [perClaim(cpu.on), perClaim(cpu.off)];
    console.log(`CPU per claim on ÷ off: event loop ${(on.main / off.main).toFixed(2)}× (${Math.round(on.main)} / ${Math.round(off.main)} µs), process ${(on.all / off.all).toFixed(2)}× (${Math.round(on.all)} / ${Math.round(off.all)} µs)`);
  } finally {
    await traced.stop();
    await plain.stop();
    const got = await receiver.counts();
    console.log(`exported: ${got.spans} spans in ${got.requests} requests`);
    await receiver.close();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
