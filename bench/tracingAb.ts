// `node --import tsx bench/tracingAb.ts [--profile]`: hot claims at 64 connections against two
// Tessera instances on one database — tracing off, and tracing on at ratio 1.0 exporting OTLP to a
// receiver in this process — in alternating runs of 5 s, three rounds: the quick way to see what
// tracing costs while working on it (`npm run bench` measures it for the record). With --profile
// the traced instance writes a V8 CPU profile (--cpu-prof) into .tessera/profiles/ when it stops;
// with --control both instances run untraced (what the A/B itself differs by). AB_BATCH and AB_DELAY
// set the traced instance's OTEL_BSP_MAX_EXPORT_BATCH_SIZE and OTEL_BSP_SCHEDULE_DELAY.
// Uses DATABASE_URL's server (database `tessera_tracing_ab`, dropped and created).
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { Client } from 'pg';
import { migrate } from '../src/db/migrate';
import { ADMIN_KEY, freePort, gql, httpLoad, ROOT, Server } from './harness';
import { startOtlpReceiver } from './otlpReceiver';

const SECONDS = 5;
const ROUNDS = 3;

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
  const plain = new Server(await freePort(), env);
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
  try {
    const partnerKey = (await gql(plain.url, ADMIN_KEY, 'mutation { createPartner(input: { name: "ab" }) { apiKey } }')).createPartner.apiKey as string;
    const campaign = (await gql(plain.url, ADMIN_KEY, 'mutation { createCampaign(input: { name: "ab" }) { campaign { id } } }')).createCampaign.campaign.id as string;
    await gql(plain.url, ADMIN_KEY, `mutation { generateTickets(campaignId: "${campaign}", count: 400000) { loaded } }`);
    await gql(plain.url, ADMIN_KEY, `mutation { openCampaign(id: "${campaign}") { campaign { id } } }`);
    const body = JSON.stringify({ query: `mutation { claimTicket(input: { campaignId: "${campaign}", holder: "ab" }) { allocation { id } error { code } } }` });
    for (const server of [plain, traced]) await httpLoad({ url: server.url, key: partnerKey, body, connections: 64, seconds: 2 });
    const rates = { off: [] as number[], on: [] as number[] };
    for (let round = 1; round <= ROUNDS; round += 1) {
      for (const [name, server] of [
        ['on', traced],
        ['off', plain],
      ] as const) {
        const r = await httpLoad({ url: server.url, key: partnerKey, body, connections: 64, seconds: SECONDS, okPattern: '"allocation":{"id"' });
        rates[name].push(r.requestsPerSecond);
        console.log(`round ${round} tracing ${name}: ${Math.round(r.requestsPerSecond)}/s p50 ${r.p50} ms p99 ${r.p99} ms (ok ${r.ok} of ${r.requests})`);
      }
    }
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    console.log(`tracing on ÷ off: ${(mean(rates.on) / mean(rates.off)).toFixed(2)}×  (${Math.round(mean(rates.on))} / ${Math.round(mean(rates.off))}/s)`);
  } finally {
    await traced.stop();
    await plain.stop();
    console.log(`exported: ${receiver.received.spans} spans in ${receiver.received.requests} requests`);
    await receiver.close();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
