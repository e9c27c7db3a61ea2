// A start-up failure reads as advice: one short message naming what to change, exit code 1, no
// stack trace (unless LOG_LEVEL=debug).
import net from 'node:net';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { durabilityNote, type Durability } from '../src/db/durability';
import { readMigrations, tesseraFunctions } from '../src/db/migrate';
import { databaseUrl, SERVER_ENV } from './helpers/env';
import { freePort, ROOT, runToExit, startProcess } from './helpers/process';
import { createTestDatabase } from './helpers/testServer';
import { sleep, until } from './helpers/time';

const serverUrl = () => process.env[SERVER_ENV]!;
const STACK = /\n\s+at [^\n]+\(|\n\s+at node:/;

/** The failure's whole output, and that it is short advice. */
async function expectAdvice(result: { code: number | null; stdout: string; stderr: string }, mention: RegExp): Promise<void> {
  expect(result.code).toBe(1);
  expect(result.stderr).toMatch(mention);
  expect(result.stderr).not.toMatch(STACK);
  expect(result.stderr.trim().split('\n').length).toBeLessThanOrEqual(3);
}

test('an unreachable database names DATABASE_URL and the address tried', async () => {
  const port = await freePort();
  const result = await runToExit(`postgresql://postgres@127.0.0.1:${port}/tessera`);
  await expectAdvice(result, new RegExp(`Cannot reach PostgreSQL at 127\\.0\\.0\\.1:${port}.*DATABASE_URL`));
});

test('an unknown host names the host and DATABASE_URL', async () => {
  const result = await runToExit('postgresql://postgres@tessera-no-such-host.invalid:5432/tessera');
  await expectAdvice(result, /host "tessera-no-such-host\.invalid" in DATABASE_URL is unknown/);
});

test('credentials the server refuses name the user and DATABASE_URL', async () => {
  const url = new URL(databaseUrl(serverUrl(), 'postgres'));
  url.username = 'tessera_no_such_role';
  url.password = 'wrong-password';
  const result = await runToExit(url.toString());
  await expectAdvice(result, /refused the user "tessera_no_such_role".*DATABASE_URL/);
  expect(result.stderr).not.toContain('wrong-password');
});

test('a database that does not exist offers the createdb line', async () => {
  const url = databaseUrl(serverUrl(), 'tessera_startup_missing');
  const { hostname, port, username } = new URL(url);
  const result = await runToExit(url);
  await expectAdvice(result, new RegExp(`"tessera_startup_missing" does not exist.*createdb -h ${hostname} -p ${port || 5432} -U ${username || 'postgres'} tessera_startup_missing.*DATABASE_URL`));
});

test('a port in use names PORT, with one message and no trace of the WebSocket server', async () => {
  const database = await createTestDatabase();
  const blocker = net.createServer();
  await new Promise<void>((resolve) => blocker.listen(0, resolve));
  const { port } = blocker.address() as net.AddressInfo;
  try {
    const result = await runToExit(database.url, { PORT: String(port) });
    await expectAdvice(result, new RegExp(`port ${port}: another program is already listening there.*set PORT`));
    expect(result.stderr + result.stdout).not.toMatch(/WebSocket/);
  } finally {
    blocker.close();
    await database.drop();
  }
});

test('LOG_LEVEL=debug adds the stack trace to the advice', async () => {
  const port = await freePort();
  const result = await runToExit(`postgresql://postgres@127.0.0.1:${port}/tessera`, { LOG_LEVEL: 'debug' });
  expect(result.code).toBe(1);
  expect(result.stderr).toMatch(/Cannot reach PostgreSQL/);
  expect(result.stderr).toMatch(STACK);
});

test('an embedded PostgreSQL that cannot start says what to do and leaves no half-made data directory or lock', async () => {
  // The embedded database's port is taken by something that is not PostgreSQL.
  const blocker = net.createServer((socket) => socket.destroy());
  await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
  const { port } = blocker.address() as net.AddressInfo;
  mkdirSync(path.join(ROOT, '.tessera'), { recursive: true });
  const parent = mkdtempSync(path.join(ROOT, '.tessera', 'startup-'));
  chmodSync(parent, 0o755);
  try {
    const result = await runToExit(null, { EMBEDDED_PG_DIR: path.join(parent, 'pgdata'), EMBEDDED_PG_PORT: String(port) }, 60_000);
    await expectAdvice(result, new RegExp(`cannot use port ${port}: it is in use by another program. Set EMBEDDED_PG_PORT`));
    // Refused before initdb (or after a whole one): what must never be left is a lock or a partial folder.
    expect(readdirSync(parent).filter((f) => /start-lock|initdb-|partial/.test(f))).toEqual([]);
  } finally {
    blocker.close();
    rmSync(parent, { recursive: true, force: true });
  }
});

test('a development start prints what helps: the migrations in one short line, the real path of the generated key, no failover warning without a standby', async () => {
  const database = await createTestDatabase({ migrated: false });
  const parent = mkdtempSync(path.join(tmpdir(), 'tessera-startup-'));
  try {
    // The key is kept beside the data directory's folder, wherever that is: printed normalized.
    const p = await startProcess(database.url, { ADMIN_API_KEY: '', EMBEDDED_PG_DIR: path.join(parent, 'x', '..', 'pgdata') });
    await until(() => p.output().includes('Admin API key: '), { message: 'the banner', timeoutMs: 10_000, intervalMs: 20 });
    await sleep(500); // the durability line is logged just after the banner, when there is one
    p.child.kill('SIGTERM');
    expect(await p.exited).toBe(0);
    const output = p.output();

    const key = readFileSync(path.join(parent, 'admin-api-key'), 'utf8').trim();
    expect(output).toContain(`Admin API key: ${key}  (generated; kept in ${path.join(parent, 'admin-api-key')}; set ADMIN_API_KEY to choose one)`);

    const migrations = readMigrations();
    const line = output.split('\n').find((l) => l.includes('"msg":"migrations applied"'))!;
    expect(JSON.parse(line)).toMatchObject({ migrations: migrations.length, latest: migrations.at(-1)!.name, functions: tesseraFunctions().length });
    expect(line.length).toBeLessThan(300);

    expect(output).not.toMatch(/failover/);
  } finally {
    rmSync(parent, { recursive: true, force: true });
    await database.drop();
  }
});

test('the durability line is written where a failover can happen: a standby, or production', () => {
  const alone: Durability = { synchronousCommit: 'on', synchronousStandbyNames: '', standbys: 0, synchronousStandbys: 0, onTwoServers: false };
  expect(durabilityNote(alone, false)).toBeUndefined();
  expect(durabilityNote(alone, true)).toMatch(/no synchronous standby, so a failover can lose the last moment of claims/);
  expect(durabilityNote({ ...alone, standbys: 1 }, false)).toMatch(/its standby is asynchronous, so a failover can lose/);
  expect(durabilityNote({ ...alone, standbys: 2, synchronousStandbys: 1, synchronousStandbyNames: 'b', onTwoServers: true }, false)).toMatch(/once a synchronous standby has them/);
});
