// npm run test:pgbouncer's own checks (jest.pgbouncer.config.js): the PgBouncer in front of the test
// server is the one meant — transaction mode, extra_float_digits the only start-up parameter it
// ignores — and a test server reaches its database through it, with the session settings as the
// role's settings in that database, while its `sql` stays direct; and a Tessera process as the chaos
// scenarios start it (npm start) gets DATABASE_URL through it. Without pgbouncer this is the only
// file that runs, and it reports every suite skipped (failed instead with TESSERA_REQUIRE_PGBOUNCER=1).
import { connectDirectly, connectThroughPooler, freePort, scratchDatabase, ServerProcess } from '../chaos/harness';
import { databaseUrl, SERVER_ENV, withClient } from '../helpers/env';
import { pgbouncerPath, POOLER_ENV } from '../helpers/pgbouncer';
import { CLAIM, startTestServer, type ClaimPayload } from '../helpers/testServer';

if (pgbouncerPath() === null) {
  const message =
    'PgBouncer is not installed (no /usr/sbin/pgbouncer, none on PATH): npm run test:pgbouncer ran none of its suites ' +
    '(claim.race, storm, mixed, chaos a–i through PgBouncer). apt-get install pgbouncer to run them.';
  if (process.env.TESSERA_REQUIRE_PGBOUNCER === '1') {
    test('PgBouncer is installed', () => {
      throw new Error(message);
    });
  } else {
    console.warn(`SKIPPED: ${message}`);
    test.skip(`every suite: ${message}`, () => undefined);
  }
} else {
  const poolerUrl = () => process.env[POOLER_ENV]!;

  test('PgBouncer 1.18 or newer pools in transaction mode in front of the test server, refusing what it refuses in production', async () => {
    const config = await withClient(databaseUrl(poolerUrl(), 'pgbouncer'), async (c) => {
      const { rows } = await c.query<{ key: string; value: string }>('SHOW CONFIG');
      return Object.fromEntries(rows.map((r) => [r.key, r.value]));
    });
    expect(config).toMatchObject({ pool_mode: 'transaction', ignore_startup_parameters: 'extra_float_digits', server_reset_query: '' });
    // A start-up parameter PgBouncer does not know is refused (08P01), as it would be in production.
    const refused = await withClient(`${poolerUrl()}?options=-c%20jit%3Doff`, (c) => c.query('SELECT 1')).catch((error: { code?: string }) => error);
    expect(refused).toMatchObject({ code: '08P01' });
  });

  test('a test server reaches its database through PgBouncer, with the session settings as role settings; its sql stays direct', async () => {
    const server = await startTestServer();
    try {
      const name = new URL(server.databaseUrl).pathname.slice(1);
      expect(new URL(server.db.options.url).port).toBe(new URL(poolerUrl()).port);
      expect(new URL(server.databaseUrl).port).toBe(new URL(process.env[SERVER_ENV]!).port);
      expect(server.db.options.pooler).toBe('pgbouncer');
      // Through PgBouncer no timeout can come in the start-up packet: these are the role's settings.
      const { rows } = await server.db.pool.query(
        `SELECT current_database() AS db, current_setting('statement_timeout') AS statement, current_setting('lock_timeout') AS lock,
                current_setting('idle_in_transaction_session_timeout') AS idle`,
      );
      expect(rows[0]).toEqual({ db: name, statement: '10s', lock: '5s', idle: '10s' });
      const partner = await server.createPartner();
      const campaignId = await server.openCampaignWith(1);
      const claim = await server.gql<ClaimPayload>(partner.apiKey, CLAIM, { input: { campaignId, holder: 'h', metadata: { through: 'pgbouncer' } } });
      expect(claim.body.data?.claimTicket.allocation?.ticket.code).toBe('T-000001');
      const pools = await withClient(databaseUrl(poolerUrl(), 'pgbouncer'), (c) => c.query<{ database: string }>('SHOW POOLS'));
      expect(pools.rows.map((r) => r.database)).toContain(name);
    } finally {
      await server.stop();
    }
  });

  test('a Tessera process (npm start) gets DATABASE_URL through PgBouncer and DATABASE_DIRECT_URL direct, and runs with its timeouts', async () => {
    const db = await scratchDatabase(process.env[SERVER_ENV]!, 'pooler');
    const server = new ServerProcess(await freePort(), { DATABASE_URL: db.url, DATABASE_STATEMENT_TIMEOUT_MS: '1234' });
    connectThroughPooler(process.env[SERVER_ENV]!, poolerUrl());
    try {
      await server.start();
      expect((await fetch(`${server.base}/readyz`)).status).toBe(200);
      // Written by the process on the direct URL, in force on PgBouncer's server connections.
      const pooled = databaseUrl(poolerUrl(), db.name);
      const { rows } = await withClient(pooled, (c) => c.query("SELECT current_setting('statement_timeout') AS statement"));
      expect(rows[0]).toEqual({ statement: '1234ms' });
      const pools = await withClient(databaseUrl(poolerUrl(), 'pgbouncer'), (c) => c.query<{ database: string; cl_active: string }>('SHOW POOLS'));
      expect(pools.rows.map((r) => r.database)).toContain(db.name);
    } finally {
      connectDirectly();
      await server.stop();
      await db.drop();
    }
  });
}
