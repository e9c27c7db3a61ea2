// docs/SCALING.md's PgBouncer configuration is deploy/pgbouncer/pgbouncer.ini, byte for byte, and that
// file is what runs: Debian's PgBouncer starts from it (as a user other than root, as it must) with
// only a test's changes — port, paths, the [databases] entry — and Tessera, its DATABASE_URL at
// PgBouncer's entry `tessera` (leading to a database of another name) and DATABASE_DIRECT_URL at
// PostgreSQL, serves a claim through it with every session setting in force on the server backend.
//
// Where PgBouncer is not installed the PgBouncer tests are skipped with a warning, and fail with
// TESSERA_REQUIRE_PGBOUNCER=1.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { sessionSettings } from '../src/db/sessionSettings';
import { databaseUrl, SERVER_ENV, withClient } from './helpers/env';
import { graphqlData } from './helpers/graphql';
import { pgbouncerPath, SHIPPED_INI, startPgBouncerFor, type PgBouncer } from './helpers/pgbouncer';
import { startProcess, type TesseraProcess } from './helpers/process';
import { ADMIN_KEY, CLAIM, createTestDatabase, type ClaimPayload } from './helpers/testServer';

const SCALING = readFileSync(path.resolve(__dirname, '../docs/SCALING.md'), 'utf8');
const INI = readFileSync(SHIPPED_INI, 'utf8');

const installed = pgbouncerPath() !== null;
if (!installed && process.env.TESSERA_REQUIRE_PGBOUNCER !== '1') {
  console.warn('SKIPPED: PgBouncer is not installed (no /usr/sbin/pgbouncer, none on PATH): test/pgbouncerDoc.test.ts started none. apt-get install pgbouncer to run them.');
}
/** Runs where PgBouncer is installed, or where it is required (and then fails without it). */
const withPgBouncer = installed || process.env.TESSERA_REQUIRE_PGBOUNCER === '1' ? test : test.skip;

/** The settings of one section of an ini text: name → value, comments and blank lines left out. */
function section(text: string, name: string): Map<string, string> {
  const settings = new Map<string, string>();
  let current = '';
  for (const line of text.split('\n')) {
    const header = /^\s*\[([^\]]+)\]\s*$/.exec(line);
    if (header) current = header[1]!;
    else if (current === name && /^\s*[^;\s%][^=]*=/.test(line)) {
      const at = line.indexOf('=');
      settings.set(line.slice(0, at).trim(), line.slice(at + 1).trim());
    }
  }
  return settings;
}

test("docs/SCALING.md quotes deploy/pgbouncer/pgbouncer.ini byte for byte, and the file's comments stand on lines of their own", () => {
  const blocks = [...SCALING.matchAll(/```ini\n([\s\S]*?)```/g)].map((m) => m[1]);
  expect(blocks).toHaveLength(1);
  expect(blocks[0]).toBe(INI);
  // PgBouncer reads "value ; comment" as the value: no setting line may carry a comment.
  for (const line of INI.split('\n')) if (!/^\s*(;|$|\[)/.test(line)) expect(line).not.toMatch(/[;#]/);
  // What the newcomer's trial found missing is there.
  const settings = section(INI, 'pgbouncer');
  for (const name of ['listen_addr', 'listen_port', 'auth_type', 'auth_file', 'admin_users', 'pool_mode']) expect(settings.get(name)).toBeTruthy();
  expect(settings.get('pool_mode')).toBe('transaction');
});

describe('Debian PgBouncer from deploy/pgbouncer/pgbouncer.ini', () => {
  let bouncer: PgBouncer | undefined;
  let tessera: TesseraProcess | undefined;
  let database: { url: string; drop(): Promise<void> } | undefined;

  afterAll(async () => {
    if (tessera) {
      tessera.child.kill('SIGTERM');
      await tessera.exited;
    }
    await bouncer?.stop();
    await database?.drop();
  });

  withPgBouncer(
    'starts as a user other than root with only the port, paths and [databases] changed, and Tessera serves a claim through it with every session setting in force',
    async () => {
      const serverUrl = process.env[SERVER_ENV]!;
      database = await createTestDatabase();
      const name = decodeURIComponent(new URL(database.url).pathname.slice(1));
      bouncer = await startPgBouncerFor(serverUrl, { databases: { tessera: `dbname=${name}` } });

      // The file it ran from includes the shipped file, copied unchanged, and changes only what a test must.
      expect(readFileSync(bouncer.shipped, 'utf8')).toBe(INI);
      const changed = [...section(readFileSync(bouncer.ini, 'utf8'), 'pgbouncer').keys()];
      expect(changed.every((key) => ['listen_port', 'unix_socket_dir', 'auth_file', 'logfile', 'pidfile', 'admin_users', 'default_pool_size'].includes(key))).toBe(true);
      // Every other setting of the file is in force, as PgBouncer's admin console reports it.
      const config = await withClient(bouncer.url('pgbouncer'), async (c) => {
        const { rows } = await c.query<{ key: string; value: string }>('SHOW CONFIG');
        return new Map(rows.map((r) => [r.key, r.value]));
      });
      for (const [key, value] of section(INI, 'pgbouncer')) if (!changed.includes(key)) expect([key, config.get(key)]).toEqual([key, value]);
      // Not as root: PgBouncer refuses to.
      const pid = Number(readFileSync(path.join(path.dirname(bouncer.ini), 'pgbouncer.pid'), 'utf8').trim());
      expect(readFileSync(`/proc/${pid}/status`, 'utf8')).toMatch(/^Uid:\s+(?!0\s)\d+/m);

      // Tessera as the doc says: DATABASE_URL at PgBouncer's entry, DATABASE_DIRECT_URL at PostgreSQL.
      const timeouts = { statementTimeoutMs: 4321, lockTimeoutMs: 2345, idleInTransactionTimeoutMs: 6789 };
      tessera = await startProcess(bouncer.url('tessera'), {
        DATABASE_DIRECT_URL: database.url,
        DATABASE_POOLER: '',
        DATABASE_STATEMENT_TIMEOUT_MS: String(timeouts.statementTimeoutMs),
        DATABASE_LOCK_TIMEOUT_MS: String(timeouts.lockTimeoutMs),
        DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS: String(timeouts.idleInTransactionTimeoutMs),
      });
      expect(tessera.output()).not.toMatch(/could not write|"level":(40|50)/);
      const url = `http://127.0.0.1:${tessera.port}/graphql`;
      const { createPartner } = await graphqlData(url, ADMIN_KEY, 'mutation { createPartner(input: { name: "doc" }) { apiKey } }');
      const { createCampaign } = await graphqlData(url, ADMIN_KEY, 'mutation { createCampaign(input: { name: "doc" }) { campaign { id } } }');
      const campaignId = createCampaign.campaign.id as string;
      await graphqlData(url, ADMIN_KEY, 'mutation($id: ID!) { generateTickets(campaignId: $id, count: 1, prefix: "D-") { loaded } }', { id: campaignId });
      await graphqlData(url, ADMIN_KEY, 'mutation($id: ID!) { openCampaign(id: $id) { campaign { id } } }', { id: campaignId });
      const claim = await graphqlData<ClaimPayload>(url, createPartner.apiKey, CLAIM, { input: { campaignId, holder: 'h', metadata: { through: 'pgbouncer' } } });
      expect(claim.claimTicket.allocation?.ticket.code).toMatch(/^D-/);

      // Through PgBouncer, on the server backend: every setting sessionSettings.ts defines, at Tessera's values.
      const shown = await withClient(bouncer.url('tessera'), async (c) => {
        const values: Record<string, string> = { database: (await c.query<{ db: string }>('SELECT current_database() AS db')).rows[0]!.db };
        for (const s of sessionSettings(timeouts)) values[s.name] = (await c.query<Record<string, string>>(`SHOW ${s.name}`)).rows[0]![s.name]!;
        return values;
      });
      expect(shown).toEqual({ database: name, ...Object.fromEntries(sessionSettings(timeouts).map((s) => [s.name, s.value])) });
      expect(shown).toMatchObject({ statement_timeout: '4321ms', lock_timeout: '2345ms', jit: 'off', plan_cache_mode: 'force_generic_plan' });
      // The claim went through PgBouncer: its pool for the entry has served.
      const pools = await withClient(bouncer.url('pgbouncer'), (c) => c.query<{ database: string }>('SHOW POOLS'));
      expect(pools.rows.map((r) => r.database)).toContain('tessera');
      // The role settings are written in the database itself, whatever PgBouncer calls it.
      const written = await withClient(databaseUrl(serverUrl, 'postgres'), (c) =>
        c.query<{ role: string }>('SELECT r.rolname AS role FROM pg_db_role_setting s JOIN pg_database d ON d.oid = s.setdatabase JOIN pg_roles r ON r.oid = s.setrole WHERE d.datname = $1', [name]),
      );
      expect(written.rows.map((r) => r.role)).toEqual(['postgres']);
    },
    120_000,
  );
});
