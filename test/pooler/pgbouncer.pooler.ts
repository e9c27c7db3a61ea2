// npm run test:pgbouncer's own checks (jest.pgbouncer.config.js): the PgBouncer in front of the test
// server is the one meant — transaction mode, extra_float_digits the only start-up parameter it
// ignores — and a test server reaches its database through it, with the session settings as the
// role's settings in that database, while its `sql` stays direct; and a Tessera process as the chaos
// scenarios start it (npm start) gets DATABASE_URL through it. Without pgbouncer this is the only
// file that runs, and it reports every suite skipped (failed instead with TESSERA_REQUIRE_PGBOUNCER=1).
import { connectDirectly, connectThroughPooler, freePort, scratchDatabase, ServerProcess } from '../chaos/harness';
import { databaseUrl, SERVER_ENV, withClient } from '../helpers/env';
import { pgbouncerPath, POOLER_ENV } from '../helpers/pgbouncer';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { detectPooler } from '../../src/db/pooler';
import { CLAIM, startTestServer, TEST_DATABASE_CONFIG, type ClaimPayload } from '../helpers/testServer';

/** `npm start` with `env` (DATABASE_URL etc.), until it exits or `ms` pass: its exit code and what it wrote. */
function startAndWait(env: Record<string, string>, ms: number): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
      cwd: path.resolve(__dirname, '../..'),
      env: { ...process.env, ADMIN_API_KEY: 'pooler-admin-key-0123456789', PORT: '0', NODE_ENV: 'production', DATABASE_DIRECT_URL: '', DATABASE_POOLER: '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    const timer = setTimeout(() => child.kill('SIGTERM'), ms);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

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

  test('DATABASE_URL at PgBouncer is recognised without DATABASE_POOLER (it refuses the start-up parameters); PostgreSQL itself is not taken for one', async () => {
    const auto = { ...TEST_DATABASE_CONFIG, pooler: null };
    await expect(detectPooler(databaseUrl(poolerUrl(), 'postgres'), auto)).resolves.toBe('pgbouncer');
    await expect(detectPooler(databaseUrl(process.env[SERVER_ENV]!, 'postgres'), auto)).resolves.toBe('none');
  });

  test('npm start refuses, with one clear line, a DATABASE_URL at PgBouncer without DATABASE_DIRECT_URL (detected, and configured)', async () => {
    const runs: Array<Record<string, string>> = [{ DATABASE_URL: databaseUrl(poolerUrl(), 'postgres') }, { DATABASE_URL: databaseUrl(poolerUrl(), 'postgres'), DATABASE_POOLER: 'pgbouncer' }];
    for (const env of runs) {
      const { code, output } = await startAndWait(env, 30_000);
      expect(code).toBe(1);
      expect(output).toMatch(/DATABASE_URL points at PgBouncer in transaction mode .*DATABASE_DIRECT_URL is not set/);
      expect(output).not.toMatch(/Tessera is ready/);
    }
  }, 90_000);

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
