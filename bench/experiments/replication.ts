// Synchronous commit: claims on a primary of its own (initdb, fsync on, as a production server) with
// a streaming standby (pg_basebackup), once with the standby asynchronous and once with
// `synchronous_standby_names = '*'` (every claim's commit waits for the standby's flush),
// alternating, two runs of each, at 1 and 64 connections. Both servers are on this machine, so the
// figure is the cost of the standby's flush and one local round trip; a network between them adds
// its round trip to every commit. Skipped (and said) where this machine has no PostgreSQL binaries
// to build the pair with. No bar.
import { Client } from 'pg';
import { migrate } from '../../src/db/migrate';
import { startReplicaPair } from '../../test/helpers/replica';
import { ADMIN_KEY, freePort, gql, httpLoad, Server, type LoadResult } from '../harness';
import { CLAIM, CLAIMED, TYPENAME, vacuum, verify, type Context, type Experiment } from './context';
import { mean, perSecond, ratio, signed, type Rate, type Report } from './report';
import { quick, SECONDS, SYNC_CONNECTIONS, WARMUP_SECONDS } from './settings';

export const replication: Experiment = {
  name: 'replication',
  summary: 'hot claims on a primary with a streaming standby of its own, synchronous against asynchronous',
  async run(ctx, report: Report) {
    const measured = await syncCommit(ctx);
    if (!measured) {
      report.record('synchronous commit: no PostgreSQL binaries with pg_basebackup here (set PG_BIN)', 'skipped');
      return;
    }
    for (const c of SYNC_CONNECTIONS) {
      const a = measured.async[c]!;
      const y = measured.sync[c]!;
      report.record(`claimTicket hot, ${c} connection${c > 1 ? 's' : ''}, primary + asynchronous standby (mean of 2 runs)`, perSecond(a));
      report.record(`claimTicket hot, ${c} connection${c > 1 ? 's' : ''}, primary + synchronous standby (mean of 2 runs)`, perSecond(y));
      // One connection sends claims back to back: the time per claim is 1 / rate (finer than p50's whole milliseconds).
      const added = c === 1 ? `${signed(1000 / y.rps - 1000 / a.rps)} per claim` : `p50 ${signed(y.p50 - a.p50)}`;
      report.record(`synchronous ÷ asynchronous standby, ${c} connection${c > 1 ? 's' : ''}: claims/s, latency added`, `${ratio(y.rps, a.rps)}  ${added}`);
    }
  },
};

async function syncCommit(ctx: Context): Promise<{ async: Record<number, Rate>; sync: Record<number, Rate> } | null> {
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
  const server = new Server(await freePort(), { ...ctx.serverEnv, DATABASE_URL: url, WEB_CONCURRENCY: '1' });
  // verify() reads the pair's database, not the bench's.
  const onPair: Context = { ...ctx, sql };
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
          const run = ctx.nextRun();
          const r = await httpLoad({ url: server.url, key, body: CLAIM(campaign, run), connections: c, seconds: SECONDS, okPattern: CLAIMED });
          await verify(onPair, r, run, [campaign], c, `claims with a ${mode} standby at ${c} connections`);
          (runs[mode][c] ??= []).push(r);
        }
      }
    }
    const of = (mode: 'async' | 'sync') => Object.fromEntries(SYNC_CONNECTIONS.map((c) => [c, mean(runs[mode][c]!)]));
    return { async: of('async'), sync: of('sync') };
  } finally {
    await server.stop();
    await sql.end();
    pair.stop();
  }
}
