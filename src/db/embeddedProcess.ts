// Running the embedded PostgreSQL's programs: initdb, and the server itself.
import { spawn, type ChildProcess } from 'node:child_process';
import { chownSync, closeSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client } from 'pg';
import { EmbeddedPostgresError, OS_USER, type Placement } from './embeddedPlacement';

export const USER = 'postgres';
export const PASSWORD = 'tessera';
const READY_TIMEOUT_MS = 60_000;
// Long enough for a 1,000,000-ticket campaign without a checkpoint storm; fsync stays on. TCP only:
// no Unix socket left in a shared folder.
const SERVER_SETTINGS = ['-c', 'max_connections=200', '-c', 'max_wal_size=2GB', '-c', 'unix_socket_directories='];

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
 */
export async function startServer({ binaries, dir, user }: Placement, port: number): Promise<ChildProcess> {
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
  while (!(await answers(`postgresql://${USER}:${PASSWORD}@127.0.0.1:${port}/postgres`))) {
    if (exited !== undefined || Date.now() > deadline) {
      if (exited === undefined) child.kill('SIGKILL');
      const reason = exited ?? `did not accept connections within ${READY_TIMEOUT_MS / 1000} s`;
      if (await accepts(port)) {
        throw new EmbeddedPostgresError(`The embedded PostgreSQL cannot use port ${port}: it is in use by another program. Set EMBEDDED_PG_PORT to a free port.`, tail(logFile));
      }
      throw new EmbeddedPostgresError(failure(`The embedded PostgreSQL in ${dir} on port ${port} ${reason}`, user), tail(logFile));
    }
    await sleep(50);
  }
  return child;
}

function tail(file: string): string {
  try {
    return readFileSync(file, 'utf8').split('\n').slice(-10).join('\n');
  } catch {
    return '';
  }
}

async function answers(url: string): Promise<boolean> {
  const client = new Client({ connectionString: url, connectionTimeoutMillis: 1000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query('SELECT 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
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
