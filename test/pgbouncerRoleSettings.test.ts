// Behind PgBouncer the session settings are role settings (src/db/sessionSettings.ts), and Tessera
// serves only when they are in force on the server connection it is given: otherwise one line, exit 1.
// Each case is a PgBouncer entry whose name is not the database's, as a deployment may name it:
// a server connection opened before the settings were written (RECONNECT on the admin console,
// then Tessera serves), and a DATABASE_DIRECT_URL role that may not write DATABASE_URL's role's
// settings. The other refusals' lines are checked on `refusal` itself.
//
// Where PgBouncer is not installed the PgBouncer tests are skipped with a warning, and fail with
// TESSERA_REQUIRE_PGBOUNCER=1.
import { randomBytes } from 'node:crypto';
import { refusal, RoleSettingsWriteError, sessionSettings, type SettingsCheck } from '../src/db/sessionSettings';
import { databaseUrl, SERVER_ENV, withClient } from './helpers/env';
import { pgbouncerPath, startPgBouncerFor, type PgBouncer } from './helpers/pgbouncer';
import { runToExit, startProcess } from './helpers/process';
import { createTestDatabase } from './helpers/testServer';

const installed = pgbouncerPath() !== null;
if (!installed && process.env.TESSERA_REQUIRE_PGBOUNCER !== '1') {
  console.warn('SKIPPED: PgBouncer is not installed (no /usr/sbin/pgbouncer, none on PATH): the PgBouncer tests of test/pgbouncerRoleSettings.test.ts did not run. apt-get install pgbouncer to run them.');
}
/** Runs where PgBouncer is installed, or where it is required (and then fails without it). */
const withPgBouncer = installed || process.env.TESSERA_REQUIRE_PGBOUNCER === '1' ? test : test.skip;

const serverUrl = () => process.env[SERVER_ENV]!;
const STACK = /\n\s+at [^\n]+\(|\n\s+at node:/;
const nameOf = (url: string) => decodeURIComponent(new URL(url).pathname.slice(1));

/** A start that refused: exit 1, one line on stderr, no stack, never ready. */
function expectOneLine(result: { code: number | null; stdout: string; stderr: string }, mention: RegExp): void {
  expect(result.code).toBe(1);
  expect(result.stderr.trim().split('\n')).toHaveLength(1);
  expect(result.stderr).toMatch(mention);
  expect(result.stderr).not.toMatch(STACK);
  expect(result.stdout).not.toMatch(/Tessera is serving|Tessera is ready/);
}

/** What the pooled connection found, statement_timeout and jit at PostgreSQL's defaults. */
function found(over: Partial<SettingsCheck> = {}): SettingsCheck {
  return {
    inForce: { statement_timeout: '0ms', jit: 'on' },
    wrong: [
      { name: 'statement_timeout', wanted: '5000ms', found: '0ms' },
      { name: 'jit', wanted: 'off', found: 'on' },
    ],
    role: 'tessera',
    database: 'tessera_prod',
    backendStart: new Date('2030-01-01T00:00:10Z'),
    ...over,
  };
}
const POOLED = 'postgresql://tessera:secret@pgbouncer.internal:6432/tessera';
const written = { role: 'tessera', database: 'tessera_prod', writtenAt: new Date('2030-01-01T00:00:05Z') };

test('every setting in force: no refusal, behind PgBouncer or not', () => {
  expect(refusal(found({ wrong: [] }), 'pgbouncer', POOLED, written)).toBeNull();
  expect(refusal(found({ wrong: [] }), 'none', 'postgresql://tessera@db.internal:5432/tessera_prod')).toBeNull();
});

test('a refusal names each setting, its value and the one wanted, the database and the role, in one line', () => {
  const message = refusal(found({ backendStart: new Date('2030-01-01T00:00:01Z') }), 'pgbouncer', POOLED, written)!.message;
  expect(message).toContain('statement_timeout 0ms (not 5000ms), jit on (not off) (database "tessera_prod", role "tessera")');
  expect(message).toMatch(/opened before .*psql -h pgbouncer\.internal -p 6432 -U <one of its admin_users> pgbouncer -c 'RECONNECT tessera'.*restart PgBouncer/);
  expect(message).not.toContain('secret');
  expect(message).not.toContain('\n');
});

test('an entry that leads to another database than DATABASE_DIRECT_URL is named, with both databases', () => {
  const message = refusal(found({ database: 'tessera_staging' }), 'pgbouncer', POOLED, written)!.message;
  expect(message).toMatch(/entry "tessera" leads to database "tessera_staging", but DATABASE_DIRECT_URL to "tessera_prod".*same database/);
});

test('an entry that logs in as another role than DATABASE_URL names both roles', () => {
  const message = refusal(found({ role: 'pgbouncer_app' }), 'pgbouncer', POOLED, written)!.message;
  expect(message).toMatch(/logs in to PostgreSQL as "pgbouncer_app", but the role settings were written for DATABASE_URL's user "tessera"/);
});

test('settings that could not be written name the cause and the role and database to write them for', () => {
  const error = new RoleSettingsWriteError('tessera', 'tessera_prod', new Date('2030-01-01T00:00:05Z'), { cause: new Error('permission denied to alter role') });
  const message = refusal(found(), 'pgbouncer', POOLED, error)!.message;
  expect(message).toMatch(/could not write them .*\(permission denied to alter role\).*ALTER ROLE "tessera" IN DATABASE "tessera_prod" SET/);
  expect(message).not.toContain('RECONNECT');
  // A server connection older than the attempt may be older than settings an operator wrote: RECONNECT is named too.
  expect(refusal(found({ backendStart: new Date('2030-01-01T00:00:01Z') }), 'pgbouncer', POOLED, error)!.message).toMatch(/If they are written already.*RECONNECT tessera/);
});

describe('through PgBouncer, an entry named otherwise than its database', () => {
  // Undone last first: Tessera, then PgBouncer, then the databases and roles.
  const cleanups: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
  });

  async function pgbouncer(options: Parameters<typeof startPgBouncerFor>[1]): Promise<PgBouncer> {
    const bouncer = await startPgBouncerFor(serverUrl(), options);
    cleanups.push(() => bouncer.stop());
    return bouncer;
  }

  withPgBouncer(
    'a server connection opened before the settings were written: one line naming RECONNECT; after RECONNECT Tessera serves with them',
    async () => {
      const database = await createTestDatabase();
      cleanups.push(() => database.drop());
      const bouncer = await pgbouncer({ databases: { shop: `dbname=${nameOf(database.url)}` } });
      // Something used the entry before Tessera's first start: PgBouncer keeps its server connection.
      const before = await withClient(bouncer.url('shop'), (c) => c.query<{ timeout: string }>("SELECT current_setting('statement_timeout') AS timeout"));
      expect(before.rows[0]!.timeout).toBe('0');

      const env = { DATABASE_DIRECT_URL: database.url, DATABASE_POOLER: '' };
      const refused = await runToExit(bouncer.url('shop'), env, 60_000);
      expectOneLine(refused, /^Behind PgBouncer, Tessera's connections run with statement_timeout 0ms \(not 5000ms\).*opened before .*RECONNECT shop'/);
      // With workers, the primary refuses before it starts any.
      const cluster = await runToExit(bouncer.url('shop'), { ...env, WEB_CONCURRENCY: '2' }, 60_000);
      expectOneLine(cluster, /opened before .*RECONNECT shop'/);
      expect(cluster.stdout).not.toMatch(/cluster started/);

      await withClient(bouncer.url('pgbouncer'), (c) => c.query('RECONNECT shop'));
      const tessera = await startProcess(bouncer.url('shop'), env);
      cleanups.push(async () => {
        tessera.child.kill('SIGTERM');
        await tessera.exited;
      });
      expect(tessera.output()).toMatch(/session settings in force: statement_timeout 5000ms, lock_timeout 3000ms/);
      const after = await withClient(bouncer.url('shop'), (c) => c.query<{ timeout: string; jit: string }>("SELECT current_setting('statement_timeout') AS timeout, current_setting('jit') AS jit"));
      expect(after.rows[0]).toEqual({ timeout: '5s', jit: 'off' });
    },
    120_000,
  );

  withPgBouncer(
    "a DATABASE_DIRECT_URL role that may not set DATABASE_URL's role's settings: one line naming the cause and what to run, exit 1; once a superuser ran it, Tessera serves",
    async () => {
      const suffix = randomBytes(4).toString('hex');
      const owner = `tessera_owner_${suffix}`;
      const app = `tessera_app_${suffix}`;
      const name = `tessera_roles_${suffix}`;
      const admin = databaseUrl(serverUrl(), 'postgres');
      // The database's owner migrates it (DATABASE_DIRECT_URL); the application logs in through PgBouncer as a role of its own.
      await withClient(admin, async (c) => {
        // Passwords for a server that asks for them (the embedded PostgreSQL); a trust server ignores them.
        await c.query(`CREATE ROLE "${owner}" LOGIN PASSWORD 'owner-password'`);
        await c.query(`CREATE ROLE "${app}" LOGIN PASSWORD 'app-password'`);
        await c.query(`CREATE DATABASE "${name}" OWNER "${owner}"`);
      });
      cleanups.push(() =>
        withClient(admin, async (c) => {
          await c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
          await c.query(`DROP ROLE IF EXISTS "${app}"`);
          await c.query(`DROP ROLE IF EXISTS "${owner}"`);
        }),
      );
      const bouncer = await pgbouncer({ databases: { shop: `dbname=${name}` }, users: [{ name: app, password: 'app-password' }] });
      const direct = new URL(databaseUrl(serverUrl(), name));
      direct.username = owner;
      direct.password = 'owner-password';
      const pooled = new URL(bouncer.url('shop'));
      pooled.username = app;
      pooled.password = 'app-password';

      const refused = await runToExit(pooled.toString(), { DATABASE_DIRECT_URL: direct.toString(), DATABASE_POOLER: '' }, 90_000);
      expectOneLine(refused, new RegExp(`database "${name}", role "${app}"\\): Tessera could not write them as role settings on DATABASE_DIRECT_URL \\(permission denied.*ALTER ROLE "${app}" IN DATABASE "${name}" SET`));
      expect(refused.stderr).not.toContain('app-password');

      // What the line says: a superuser writes them (and the tables are granted), PgBouncer's older
      // server connection is replaced, and Tessera serves with them though it still cannot write them.
      await withClient(admin, async (c) => {
        for (const s of sessionSettings({ statementTimeoutMs: 5000, lockTimeoutMs: 3000, idleInTransactionTimeoutMs: 10000 })) {
          await c.query(`ALTER ROLE "${app}" IN DATABASE "${name}" SET ${s.name} = '${s.value}'`);
        }
      });
      await withClient(direct.toString(), (c) =>
        c.query(`GRANT ALL ON ALL TABLES IN SCHEMA public TO "${app}"; GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO "${app}"; GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA public TO "${app}"`),
      );
      await withClient(bouncer.url('pgbouncer'), (c) => c.query('RECONNECT shop'));
      const tessera = await startProcess(pooled.toString(), { DATABASE_DIRECT_URL: direct.toString(), DATABASE_POOLER: '' });
      cleanups.push(async () => {
        tessera.child.kill('SIGTERM');
        await tessera.exited;
      });
      expect(tessera.output()).toMatch(/could not write the session settings as role settings/);
      expect(tessera.output()).toMatch(/session settings in force: statement_timeout 5000ms, lock_timeout 3000ms, idle_in_transaction_session_timeout 10000ms/);
    },
    120_000,
  );
});
