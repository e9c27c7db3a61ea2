// PgBouncer 1.18 in transaction mode in front of a PostgreSQL server: what `npm run test:pgbouncer`
// (jest.pgbouncer.config.js) puts between the servers under test and their databases. Each one runs
// from a temporary folder of its own (pgbouncer.ini, userlist.txt, pgbouncer.log) on a free port.
//
// The configuration is a production one for transaction pooling, on purpose nothing more lenient:
// `ignore_startup_parameters` is extra_float_digits only, so a start-up parameter PgBouncer refuses
// (statement_timeout, options, …) fails the connection here as it would in production.
import { spawn, type ChildProcess } from 'node:child_process';
import { accessSync, chownSync, constants, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { withClient } from './env';
import { freePort } from './process';
import { until } from './time';

/** Set by globalSetupPgbouncer.ts: a URL of the PgBouncer in front of the test server (its `postgres` database). */
export const POOLER_ENV = 'TESSERA_TEST_POOLER_URL';

export interface PgBouncerOptions {
  /** The PostgreSQL server it pools for (default 127.0.0.1). */
  targetHost?: string;
  targetPort: number;
  /** The only role it admits (trust: it asks clients for no password), and logs in to PostgreSQL as. Default postgres. */
  user?: string;
  /** The role's password, when PostgreSQL asks for one (the embedded PostgreSQL does). */
  password?: string;
  /** Server connections per database and role (default_pool_size). Default 40. */
  poolSize?: number;
  /** Client connections it accepts in all (max_client_conn). Default 2000. */
  maxClientConnections?: number;
  /** A database it must reach before it counts as started. Default postgres. */
  probeDatabase?: string;
}

export interface PgBouncer {
  /** The URL of `database` through this PgBouncer (with the role, and its password if any). */
  url(database: string): string;
  readonly port: number;
  /** Its log file (connections, refusals, server errors), for a failure's diagnosis. */
  readonly logfile: string;
  /** Stops it (immediate shutdown) and removes its folder. */
  stop(): Promise<void>;
}

/** The pgbouncer binary (Debian's /usr/sbin, else on PATH), or null when it is not installed. */
export function pgbouncerPath(): string | null {
  const candidates = ['/usr/sbin/pgbouncer', ...(process.env.PATH ?? '').split(path.delimiter).filter(Boolean).map((dir) => path.join(dir, 'pgbouncer'))];
  for (const candidate of candidates) {
    try {
      accessSync(candidate, constants.X_OK);
      if (statSync(candidate).isFile()) return candidate;
    } catch {
      // not here
    }
  }
  return null;
}

/** A PgBouncer in front of the server of `serverUrl` (a postgresql:// URL), with that URL's role and password. */
export function startPgBouncerFor(serverUrl: string, options: Omit<PgBouncerOptions, 'targetHost' | 'targetPort' | 'user' | 'password'> = {}): Promise<PgBouncer> {
  const url = new URL(serverUrl);
  return startPgBouncer({
    ...options,
    targetHost: url.hostname || '127.0.0.1',
    targetPort: Number(url.port || 5432),
    user: decodeURIComponent(url.username) || 'postgres',
    password: decodeURIComponent(url.password) || undefined,
  });
}

export async function startPgBouncer(o: PgBouncerOptions): Promise<PgBouncer> {
  const binary = pgbouncerPath();
  if (!binary) throw new Error('pgbouncer is not installed (looked in /usr/sbin and on PATH); on Debian: apt-get install pgbouncer');
  // A port free a moment ago may be taken by the time PgBouncer binds it: a few attempts.
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await startOnce(binary, o, await freePort());
    } catch (error) {
      if (attempt >= 3 || !/Address already in use/i.test((error as Error).message)) throw error;
    }
  }
}

async function startOnce(binary: string, o: PgBouncerOptions, port: number): Promise<PgBouncer> {
  const user = o.user ?? 'postgres';
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tessera-pgbouncer-'));
  const ini = path.join(dir, 'pgbouncer.ini');
  const logfile = path.join(dir, 'pgbouncer.log');
  const quote = (s: string) => `"${s.replace(/"/g, '""')}"`;
  writeFileSync(path.join(dir, 'userlist.txt'), `${quote(user)} ${quote(o.password ?? '')}\n`);
  writeFileSync(
    ini,
    [
      '[databases]',
      // Any database name: every test database (created per test file or scenario) works unlisted.
      `* = host=${o.targetHost ?? '127.0.0.1'} port=${o.targetPort}`,
      '',
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      // trust: PgBouncer asks the client for no password, but admits only the role in auth_file, and
      // logs in to PostgreSQL with that file's password (cleartext, MD5 or SCRAM, as the server asks).
      'auth_type = trust',
      `auth_file = ${path.join(dir, 'userlist.txt')}`,
      `admin_users = ${user}`,
      'pool_mode = transaction',
      `max_client_conn = ${o.maxClientConnections ?? 2000}`,
      `default_pool_size = ${o.poolSize ?? 40}`,
      // Transaction pooling: nothing to reset between clients (DISCARD ALL is for session pooling).
      'server_reset_query =',
      'ignore_startup_parameters = extra_float_digits',
      // After a failed connection to PostgreSQL (scenario c restarts it) retry after 1 s, not 15 s.
      'server_login_retry = 1',
      `logfile = ${logfile}`,
      '',
    ].join('\n'),
  );
  // PgBouncer refuses to run as root: as root it runs as an unprivileged user, which must own its folder.
  const args = [ini];
  const runAs = process.getuid?.() === 0 ? unprivilegedUser() : null;
  if (runAs) {
    for (const file of ['', 'pgbouncer.ini', 'userlist.txt']) chownSync(path.join(dir, file), runAs.uid, runAs.gid);
    args.unshift('-u', runAs.name);
  }

  const child = spawn(binary, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-8000)));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const killOnExit = () => child.kill('SIGKILL'); // Jest ended without globalTeardown: leave no PgBouncer behind
  process.once('exit', killOnExit);
  const userinfo = encodeURIComponent(user) + (o.password ? `:${encodeURIComponent(o.password)}` : '');
  const url = (database: string) => `postgresql://${userinfo}@127.0.0.1:${port}/${encodeURIComponent(database)}`;

  const stop = async () => {
    process.off('exit', killOnExit);
    await stopChild(child, exited);
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await until(
      async () => {
        if (child.exitCode !== null || child.signalCode !== null) {
          throw new Error(`pgbouncer exited (${child.exitCode ?? child.signalCode}) while starting:\n${stderr || readLog(logfile)}`);
        }
        // Its own line, not a connection accepted: another process may hold the port it failed to bind.
        return stderr.includes(`listening on 127.0.0.1:${port}`);
      },
      { message: `pgbouncer to listen on 127.0.0.1:${port}`, timeoutMs: 15_000, intervalMs: 50 },
    );
    // Listening is not working: one statement through it proves the route and the login to PostgreSQL.
    await withClient(url(o.probeDatabase ?? 'postgres'), (c) => c.query('SELECT 1'));
  } catch (error) {
    const log = readLog(logfile);
    await stop();
    throw new Error(`${(error as Error).message}${log ? `\n--- pgbouncer.log ---\n${log}` : ''}`, { cause: error });
  }
  return { url, port, logfile, stop };
}

async function stopChild(child: ChildProcess, exited: Promise<void>): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM'); // PgBouncer's immediate shutdown (SIGINT would wait for every client)
  const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
  await exited;
  clearTimeout(timer);
}

/** The last lines of PgBouncer's log, or '' when there is none (yet). */
export function readLog(logfile: string, chars = 6000): string {
  try {
    return readFileSync(logfile, 'utf8').slice(-chars);
  } catch {
    return '';
  }
}

/** postgres (Debian's package runs PgBouncer as that user), else nobody: from /etc/passwd. */
function unprivilegedUser(): { name: string; uid: number; gid: number } {
  const lines = readFileSync('/etc/passwd', 'utf8').split('\n');
  for (const name of ['postgres', 'nobody']) {
    const fields = lines.find((line) => line.startsWith(`${name}:`))?.split(':');
    if (fields) return { name, uid: Number(fields[2]), gid: Number(fields[3]) };
  }
  throw new Error('running as root, and neither a postgres nor a nobody user exists for pgbouncer to run as');
}

