// Behind PgBouncer 1.18 in transaction mode: a second Tessera instance on the bench's database
// through a PgBouncer the bench starts (DATABASE_POOLER=pgbouncer, the session settings as role
// settings, no named prepared statements), warmed up, then the claims experiment's hot and spread
// runs, against the floor and against those runs straight to PostgreSQL. Skipped (and said) where
// pgbouncer is not installed.
// Bar, hot and spread: behind PgBouncer ÷ straight to PostgreSQL ≥ 0.80×.
import { pgbouncerPath, startPgBouncerFor } from '../../test/helpers/pgbouncer';
import { freePort, httpLoad, Server } from '../harness';
import { CLAIM, hotAndSpread, needed, type Experiment } from './context';
import { ratio, type Report } from './report';
import { WARMUP_SECONDS } from './settings';

export const pgbouncer: Experiment = {
  name: 'pgbouncer',
  summary: 'hot and spread claims through PgBouncer in transaction mode, against the same straight to PostgreSQL',
  needs: ['floor', 'claims'],
  async run(ctx, report: Report) {
    const floor = needed(ctx.figures.floor, 'the floor', 'floor');
    const straight = { hot: needed(ctx.figures.hot, 'claimTicket hot', 'claims'), spread: needed(ctx.figures.spread, 'claimTicket spread', 'claims') };
    if (!pgbouncerPath()) {
      report.record('claims behind PgBouncer: no pgbouncer on this machine (apt-get install pgbouncer)', 'skipped');
      return;
    }
    const { pool } = await ctx.pools();
    const bouncer = await startPgBouncerFor(ctx.serverUrl, { poolSize: 20 });
    const server = new Server(await freePort(), {
      ...ctx.serverEnv,
      WEB_CONCURRENCY: '1',
      DATABASE_URL: bouncer.url(ctx.dbUrl.pathname.slice(1)),
      DATABASE_DIRECT_URL: ctx.dbUrl.toString(),
      DATABASE_POOLER: 'pgbouncer',
    });
    let pooled;
    try {
      await server.start();
      await httpLoad({ url: server.url, key: ctx.partnerKey, body: CLAIM(pool, ctx.nextRun()), connections: 64, seconds: WARMUP_SECONDS });
      pooled = await hotAndSpread(ctx, report, server.url, 'behind PgBouncer (transaction mode)', (name, r) =>
        `${ratio(r.requestsPerSecond, floor[64]!.claimsPerSecond)} floor  ${ratio(r.requestsPerSecond, straight[name].requestsPerSecond)} straight to PostgreSQL`,
      );
    } finally {
      await server.stop();
      await bouncer.stop();
    }
    for (const name of ['hot', 'spread'] as const) {
      report.atLeast(`claimTicket ${name} behind PgBouncer ÷ straight to PostgreSQL`, pooled[name].requestsPerSecond / straight[name].requestsPerSecond, 0.8);
    }
  },
};
