// Running the embedded PostgreSQL's programs: initdb, and the server itself.
import { spawn, type ChildProcess } from 'node:child_process';
import { chownSync, closeSync, mkdirSync, openSync, readFileSync, realpathSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client } from 'pg';
import { describedDir, EmbeddedPostgresError, OS_USER, type Placement } from './embeddedPlacement';

export const USER = 'postgres';
export const PASSWORD = 'tessera';
const READY_TIMEOUT_MS = 60_000;
// Long enough for a 1,000,000-ticket campaign without a checkpoint storm; fsync stays on. TCP only:
// no Unix socket left in a shared folder. 127.0.0.1 only, where Tessera connects: with the default
// (localhost, IPv4 and IPv6) a server whose IPv4 port another one holds starts on ::1 alone, and
// Tessera's connections reach the other one.
const SERVER_SETTINGS = ['-c', 'max_connections=200', '-c', 'max_wal_size=2GB', '-c', 'unix_socket_directories=', '-c', 'listen_addresses=127.0.0.1'];

/** The `postgres` database of the embedded server on `port`. */
export const urlOn = (port: number) => `postgresql://${USER}:${PASSWORD}@127.0.0.1:${port}/postgres`;

/**
 * initdb into a folder beside the data directory, renamed into place only when it succeeded: a
 * failed start never leaves a half-made data directory behind.
 */
export async function initialise({ binaries, dir, user }: Placement): Promise<void> {
  const partial = `${dir}.initdb-${process.pid}`;
  const passwordFile = path.join(os.tmpdir(), `tessera-pg-password-${process.pid}-${Date.now()}`);
  rmSync(partial, { recursive: true, force: true });
  mkdirSync(partial, { mode: 0o700 });
  writeFileSync(passwordFile, `${PASSWORD}\n`, { mode: 0o600 });
  if (user) {
    chownSync(partial, user.uid, user.gid);
    chownSync(passwordFile, user.uid, user.gid);
  }
  try {
    const args = [`--pgdata=${partial}`, '--auth=password', `--username=${USER}`, `--pwfile=${passwordFile}`, '--encoding=UTF8', '--no-locale'];
    const output = await run(path.join(binaries, 'bin', 'initdb'), args, user);
    if (output.code !== 0) throw new EmbeddedPostgresError(failure(`initdb failed for ${dir}`, user), output.text);
    renameSync(partial, dir);
  } finally {
    rmSync(partial, { recursive: true, force: true });
    rmSync(passwordFile, { force: true });
  }
}

/** Runs a program to its end; its output, and a spawn failure, come back as text, never thrown. */
function run(file: string, args: string[], user: Placement['user']): Promise<{ code: number; text: string }> {
  return new Promise((resolve) => {
    // From '/': the project's folder may be one the `postgres` OS user cannot enter, and PostgreSQL's
    // programs look up their current directory.
    const child = spawn(file, args, { ...user, cwd: '/', stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, LC_ALL: 'C' } });
    let text = '';
    child.stdout.on('data', (chunk: Buffer) => (text += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (text += chunk.toString()));
    child.once('error', (error) => resolve({ code: -1, text: `${text}${error.message}` }));
    child.once('close', (code) => resolve({ code: code ?? -1, text }));
  });
}

function failure(what: string, user: Placement['user']): string {
  const who = user ? ` It runs as the OS user "${OS_USER}", which must be able to enter every folder above the data directory and the binaries.` : '';
  return `${what}.${who} Set EMBEDDED_PG_DIR to another folder, or DATABASE_URL to a PostgreSQL server of your own (LOG_LEVEL=debug shows PostgreSQL's own messages).`;
}

/**
 * Starts the server in a process group of its own (a Ctrl-C in the terminal reaches Tessera, which
 * stops it last, after the requests in flight) with its log in a file beside the data directory —
 * never a pipe to this process, which would block or break the server once this process is gone.
 * Ready once the server on `port` proves to be this one (its data_directory): a server of another
 * data directory answers there as soon as ours fails to bind, with the same user and password.
 */
export async function startServer({ binaries, dir, user }: Placement, port: number, portSetting: string): Promise<ChildProcess> {
  const logFile = `${dir}.log`;
  const log = openSync(logFile, 'a');
  const child = spawn(path.join(binaries, 'bin', 'postgres'), ['-D', dir, '-p', String(port), ...SERVER_SETTINGS], {
    ...user,
    cwd: '/',
    detached: true,
    stdio: ['ignore', log, log],
    env: { ...process.env, LC_ALL: 'C' },
  });
  closeSync(log);
  let exited: string | undefined;
  child.once('error', (error) => (exited = error.message));
  child.once('exit', (code, signal) => (exited ??= `exited with ${signal ?? `code ${code}`}`));
  child.unref();
  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    const holder = await holderOf(port);
    if (holder.kind === 'postgres' && sameDir(holder.dataDir, dir)) return child;
    if (holder.kind === 'postgres' || exited !== undefined || Date.now() > deadline) {
      if (exited === undefined && child.pid) await stopPid(child.pid);
      if (holder.kind !== 'none') throw new EmbeddedPostgresError(await portTaken(dir, port, holder, portSetting), tail(logFile));
      const reason = exited ?? `did not accept connections within ${READY_TIMEOUT_MS / 1000} s`;
      throw new EmbeddedPostgresError(failure(`The embedded PostgreSQL in ${dir} on port ${port} ${reason}`, user), tail(logFile));
    }
    await sleep(50);
  }
}

/** What listens on 127.0.0.1:`port`: nothing, a PostgreSQL that lets in the embedded superuser (and its data directory), or something else. */
export type Holder = { kind: 'none' } | { kind: 'postgres'; dataDir: string } | { kind: 'other' };

export async function holderOf(port: number): Promise<Holder> {
  if (!(await accepts(port))) return { kind: 'none' };
  const client = new Client({ connectionString: urlOn(port), connectionTimeoutMillis: 1000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    // Superusers only (or pg_read_all_settings): the embedded server's user is its superuser.
    const { rows } = await client.query<{ data_directory: string }>('SHOW data_directory');
    return { kind: 'postgres', dataDir: rows[0]!.data_directory };
  } catch {
    return { kind: 'other' };
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** Whether two paths name one folder (symbolic links followed where they can be). */
export function sameDir(a: string, b: string): boolean {
  const real = (p: string) => {
    try {
      return realpathSync.native(p);
    } catch {
      return path.resolve(p);
    }
  };
  return real(a) === real(b);
}

/** The one line that says who holds `port`, and what to set instead. */
export async function portTaken(dir: string, port: number, holder: Holder, portSetting: string): Promise<string> {
  const free = await nextFreePort(port);
  const instead = `Set ${portSetting} to a free port${free ? ` (e.g. ${portSetting}=${free})` : ''}`;
  if (holder.kind === 'postgres') {
    return `The embedded PostgreSQL of ${describedDir(dir)} cannot use port ${port}: the PostgreSQL of ${describedDir(holder.dataDir)} already listens there. ${instead}, or stop that one.`;
  }
  return `The embedded PostgreSQL cannot use port ${port}: it is in use by another program. ${instead}.`;
}

/** The first of the next 20 ports nothing accepts connections on, for the advice. */
async function nextFreePort(port: number): Promise<number | undefined> {
  for (let p = port + 1; p <= Math.min(port + 20, 65535); p += 1) if (!(await accepts(p))) return p;
  return undefined;
}

function tail(file: string): string {
  try {
    return readFileSync(file, 'utf8').split('\n').slice(-10).join('\n');
  } catch {
    return '';
  }
}

/** Fast shutdown (SIGINT), then waits for the postmaster to be gone. */
export async function stopPid(pid: number): Promise<void> {
  if (!alive(pid)) return;
  process.kill(pid, 'SIGINT');
  for (let i = 0; i < 600 && alive(pid); i += 1) await sleep(50);
}

export const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
};

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
