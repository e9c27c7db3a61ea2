// PgBouncer 1.18 in transaction mode in front of a PostgreSQL server: what `npm run test:pgbouncer`
// (jest.pgbouncer.config.js), the bench and test/pgbouncerDoc.test.ts put between Tessera and its
// databases. Each one runs from a temporary folder of its own on a free port.
//
// Its configuration is deploy/pgbouncer/pgbouncer.ini, the file docs/SCALING.md quotes, copied
// unchanged into the folder and read through PgBouncer's `%include`; the folder's pgbouncer.ini then
// changes only what a test must: the port, the paths (no unix socket, its own auth_file, logfile and
// pidfile), the [databases] entries (every name to the server under test), and, when asked, the
// pool size or admin_users. Nothing more lenient than production: the same auth_type (clients give
// the password of auth_file), and `ignore_startup_parameters` as shipped, so a start-up parameter
// PgBouncer refuses (statement_timeout, options, …) fails the connection here as in production.
import { spawn, type ChildProcess } from 'node:child_process';
import { accessSync, chownSync, constants, copyFileSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { withClient } from './env';
import { freePort } from './process';
import { until } from './time';

/** Set by globalSetupPgbouncer.ts: a URL of the PgBouncer in front of the test server (its `postgres` database). */
export const POOLER_ENV = 'TESSERA_TEST_POOLER_URL';

/** The configuration deployments use, and docs/SCALING.md shows: every PgBouncer here starts from it. */
export const SHIPPED_INI = path.resolve(__dirname, '../../deploy/pgbouncer/pgbouncer.ini');

/** A test role's password in auth_file, when its server asks for none (trust): PgBouncer still asks the client. */
export const TEST_PASSWORD = 'tessera-test-password';

export interface PgBouncerOptions {
  /** The PostgreSQL server it pools for (default 127.0.0.1). */
  targetHost?: string;
  targetPort: number;
  /** The role clients log in as, and PgBouncer logs in to PostgreSQL as; an admin user too. Default postgres. */
  user?: string;
  /** The role's password: PostgreSQL's when it asks for one (the embedded PostgreSQL does), else TEST_PASSWORD. */
  password?: string;
  /** More roles it admits (auth_file lines), each with its password. */
  users?: Array<{ name: string; password: string }>;
  /**
   * [databases] entries besides `*` (every other name: the database of that name on the target):
   * name → connection string, with the target's host and port unless it names its own.
   */
  databases?: Record<string, string>;
  /** Server connections per database and role (default_pool_size). Default: the shipped file's. */
  poolSize?: number;
  /** A database it must reach before it counts as started. Default postgres. */
  probeDatabase?: string;
}

export interface PgBouncer {
  /** The URL of `database` through this PgBouncer (with the role, and its password if any). */
  url(database: string): string;
  readonly port: number;
  /** Its log file (connections, refusals, server errors), for a failure's diagnosis. */
  readonly logfile: string;
  /** The pgbouncer.ini it runs from: deploy/pgbouncer/pgbouncer.ini included, then the test's changes. */
  readonly ini: string;
  /** The copy of deploy/pgbouncer/pgbouncer.ini that `ini` includes. */
  readonly shipped: string;
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

/** The name of the last `[section]` of an ini text. */
function lastSection(text: string): string | undefined {
  return [...text.matchAll(/^\s*\[([^\]]+)\]/gm)].at(-1)?.[1];
}

async function startOnce(binary: string, o: PgBouncerOptions, port: number): Promise<PgBouncer> {
  const user = o.user ?? 'postgres';
  const password = o.password ?? TEST_PASSWORD;
  const target = `host=${o.targetHost ?? '127.0.0.1'} port=${o.targetPort}`;
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tessera-pgbouncer-'));
  const ini = path.join(dir, 'pgbouncer.ini');
  const shipped = path.join(dir, 'tessera.ini');
  const logfile = path.join(dir, 'pgbouncer.log');
  // PgBouncer begins [pgbouncer] from its defaults again each time the section starts (1.18, tried):
  // the changes follow the %include, still in the section the shipped file ends with.
  if (lastSection(readFileSync(SHIPPED_INI, 'utf8')) !== 'pgbouncer') throw new Error(`${SHIPPED_INI} must end with its [pgbouncer] section`);
  copyFileSync(SHIPPED_INI, shipped);
  const quote = (s: string) => `"${s.replace(/"/g, '""')}"`;
  const roles = [{ name: user, password }, ...(o.users ?? [])];
  writeFileSync(path.join(dir, 'userlist.txt'), roles.map((r) => `${quote(r.name)} ${quote(r.password)}\n`).join(''));
  const withTarget = (entry: string) => (/\bhost=/.test(entry) ? entry : `${target} ${entry}`);
  writeFileSync(
    ini,
    [
      ';; deploy/pgbouncer/pgbouncer.ini as it is, then only what a test changes.',
      '[pgbouncer]',
      `%include ${shipped}`,
      `listen_port = ${port}`,
      'unix_socket_dir =',
      `auth_file = ${path.join(dir, 'userlist.txt')}`,
      `logfile = ${logfile}`,
      `pidfile = ${path.join(dir, 'pgbouncer.pid')}`,
      ...(user === 'postgres' ? [] : [`admin_users = ${user}`]),
      ...(o.poolSize ? [`default_pool_size = ${o.poolSize}`] : []),
      '',
      '[databases]',
      // Any database name: every test database (created per test file or scenario) works unlisted;
      // the shipped entry's name too leads to the server under test.
      `* = ${target}`,
      `tessera = ${target} dbname=tessera`,
      ...Object.entries(o.databases ?? {}).map(([name, entry]) => `${name} = ${withTarget(entry)}`),
      '',
    ].join('\n'),
  );
  // PgBouncer refuses to run as root: as root it runs as an unprivileged user, which must own its folder.
  const args = [ini];
  const runAs = process.getuid?.() === 0 ? unprivilegedUser() : null;
  if (runAs) {
    for (const file of ['', 'pgbouncer.ini', 'tessera.ini', 'userlist.txt']) chownSync(path.join(dir, file), runAs.uid, runAs.gid);
    args.unshift('-u', runAs.name);
  }

  const child = spawn(binary, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-8000)));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const killOnExit = () => child.kill('SIGKILL'); // Jest ended without globalTeardown: leave no PgBouncer behind
  process.once('exit', killOnExit);
  const userinfo = `${encodeURIComponent(user)}:${encodeURIComponent(password)}`;
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
  return { url, port, logfile, ini, shipped, stop };
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

