// Tessera as operators run it: `node --import tsx src/main.ts` in a child process, for the tests of
// start-up, shutdown and several instances on one database.
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { ADMIN_KEY } from './graphql';
import { until, type UntilOptions } from './time';

export { accepts } from '../../src/db/embedded';

export const ROOT = path.resolve(__dirname, '../..');

export interface TesseraProcess {
  child: ChildProcess;
  port: number;
  /** Resolves with the exit code once the process has exited and its output has been read. */
  exited: Promise<number | null>;
  /** Everything it printed so far (pino's JSON lines and the banner). */
  output(): string;
}

/** `npm start`'s entry point in a child process, its output piped; `databaseUrl` null: no DATABASE_URL at all. */
function spawnMain(databaseUrl: string | null, extraEnv: Record<string, string>) {
  const env: NodeJS.ProcessEnv = { ...process.env, ADMIN_API_KEY: ADMIN_KEY, PORT: '0', NODE_ENV: 'development', LOG_LEVEL: 'info', ...extraEnv };
  if (databaseUrl) env.DATABASE_URL = databaseUrl;
  else delete env.DATABASE_URL;
  return spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
}

/**
 * Starts `npm start`'s entry point and resolves once it logs that it serves (its port read from that
 * line, so PORT=0 works); rejects if it exits first. `databaseUrl` null: no DATABASE_URL at all.
 */
export function startProcess(databaseUrl: string | null, extraEnv: Record<string, string> = {}): Promise<TesseraProcess> {
  const child = spawnMain(databaseUrl, extraEnv);
  // 'close', not 'exit': by then everything it printed has been read (its last log lines too).
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  let output = '';
  return new Promise((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const match = /"port":(\d+),"ms"/.exec(output);
      if (match) resolve({ child, port: Number(match[1]), exited, output: () => output });
    });
    child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('exit', (code) => reject(new Error(`server exited with ${code} before it was ready:\n${output}`)));
  });
}

/**
 * A port nothing listens on right now, below the kernel's ephemeral range (32768 and up here): a
 * port the kernel hands out to a `listen(0)` — a test server on PORT=0, a client's socket — could be
 * handed to another process between this call and the bind of whoever asked for it (the chaos
 * harness once took another test file's server, admin key and all, for its own).
 */
export async function freePort(): Promise<number> {
  for (let attempt = 0; ; attempt += 1) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    const free = await new Promise<boolean>((resolve) => {
      const server = net.createServer();
      server.once('error', () => resolve(false));
      server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
    });
    if (free) return port;
    if (attempt > 100) throw new Error('no free port between 20000 and 32000');
  }
}

/**
 * Runs `npm start`'s entry point expecting it to fail: resolves with its exit code and everything it
 * printed. `databaseUrl` null: no DATABASE_URL at all. Killed after `timeoutMs` (a hang fails).
 */
export function runToExit(
  databaseUrl: string | null,
  extraEnv: Record<string, string> = {},
  timeoutMs = 30_000,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawnMain(databaseUrl, extraEnv);
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  return new Promise((resolve) =>
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    }),
  );
}

/** Process ids whose parent is `pid` (from /proc, so no procps needed). */
export function childrenOf(pid: number): number[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .filter((entry) => {
      try {
        // /proc/N/stat: "N (comm) state ppid ..."; comm may contain spaces, so split after the last ')'.
        const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
        return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1] === String(pid);
      } catch {
        return false;
      }
    })
    .map(Number);
}

/**
 * Waits until a WEB_CONCURRENCY=`workers` Tessera (its primary `primaryPid`, serving `port` on this
 * machine) has `workers` workers and every one of them serves: holds `workers` connections open at
 * once — the primary hands new connections round-robin to the workers that listen, so each serving
 * worker gets one — and looks in /proc for a worker that owns none. Resolves with the workers' ids.
 */
export async function untilEveryWorkerServes(primaryPid: number, port: number, workers: number, options: Partial<UntilOptions> = {}): Promise<number[]> {
  return until(
    async () => {
      const pids = childrenOf(primaryPid);
      if (pids.length !== workers) return null;
      const agent = new http.Agent({ keepAlive: true });
      try {
        await Promise.all(Array.from({ length: workers }, () => readyz(port, agent)));
        const accepted = acceptedSockets(port);
        return pids.every((pid) => socketsOf(pid).some((inode) => accepted.has(inode))) ? pids : null;
      } finally {
        agent.destroy();
      }
    },
    { timeoutMs: 30_000, intervalMs: 50, ...options, message: options.message ?? `all ${workers} workers of process ${primaryPid} to serve port ${port}` },
  );
}

/** GET /readyz on a connection of `agent`'s, answered (whatever its status). */
function readyz(port: number, agent: http.Agent): Promise<void> {
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, path: '/readyz', agent }, (res) => {
        res.resume();
        res.on('end', () => resolve());
      })
      .on('error', reject);
  });
}

/** Socket inodes of the established TCP connections whose local port is `port` (IPv4 and IPv6). */
function acceptedSockets(port: number): Set<string> {
  const inodes = new Set<string>();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = readFileSync(table, 'utf8');
    } catch {
      continue; // no IPv6 here
    }
    // "sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode ...", addresses as HEX:PORT.
    for (const line of text.split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      if (fields.length < 10 || fields[3] !== '01') continue; // 01: ESTABLISHED
      if (parseInt(fields[1]!.split(':')[1]!, 16) === port) inodes.add(fields[9]!);
    }
  }
  return inodes;
}

/** Socket inodes among `pid`'s open files. */
function socketsOf(pid: number): string[] {
  try {
    return readdirSync(`/proc/${pid}/fd`).flatMap((fd) => {
      try {
        const inode = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`))?.[1];
        return inode ? [inode] : [];
      } catch {
        return []; // closed meanwhile
      }
    });
  } catch {
    return []; // exited meanwhile
  }
}
