// Building blocks of `npm run bench`: a PostgreSQL to measure on, a Tessera process started the way
// `npm start` starts it, the other servers the bench compares it with (child processes of their
// own), HTTP load with autocannon, SQL load with pgbench or with pg.
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { Pool } from 'pg';
import { until } from '../test/helpers/time';

export const ROOT = path.resolve(__dirname, '..');
export const ADMIN_KEY = 'bench-admin-key-0123456789';

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
    srv.on('error', reject);
  });
}

export class Server {
  private child: ChildProcess | null = null;
  private output = '';
  readonly url: string;
  constructor(
    readonly port: number,
    private readonly env: Record<string, string>,
    /** Options for node itself (--cpu-prof: not allowed in NODE_OPTIONS). */
    private readonly nodeOptions: readonly string[] = [],
  ) {
    this.url = `http://127.0.0.1:${port}/graphql`;
  }
  /** The server process's id while it runs (`npm run soak` reads its RSS from /proc). */
  get pid(): number | undefined {
    const child = this.child;
    return child && child.exitCode === null && child.signalCode === null ? child.pid : undefined;
  }
  async start(): Promise<void> {
    this.child = spawn(process.execPath, [...this.nodeOptions, '--import', 'tsx', 'src/main.ts'], {
      cwd: ROOT,
      env: { ...process.env, ADMIN_API_KEY: ADMIN_KEY, PORT: String(this.port), LOG_LEVEL: 'warn', NODE_ENV: 'production', ...this.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child.stdout!.on('data', (d: Buffer) => (this.output = (this.output + d.toString()).slice(-4000)));
    this.child.stderr!.on('data', (d: Buffer) => (this.output = (this.output + d.toString()).slice(-4000)));
    const child = this.child;
    try {
      await until(
        async () => {
          if (child.exitCode !== null) throw new Error(`server exited: ${this.output}`);
          try {
            return (await fetch(this.url.replace('/graphql', '/readyz'))).status === 200;
          } catch {
            return false; // not yet
          }
        },
        { message: 'the server to answer /readyz', timeoutMs: 30_000, intervalMs: 100 },
      );
    } catch (error) {
      if (child.exitCode !== null) throw error;
      throw new Error(`server did not start: ${this.output}`, { cause: error });
    }
  }
  async stop(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null) return;
    await new Promise((resolve) => {
      child.once('exit', resolve);
      child.kill('SIGTERM');
    });
  }
}

/**
 * Another HTTP server to measure against (bench/ceilings/): `node --import tsx <script>` with PORT,
 * in a process of its own, ready when it prints `ready`.
 */
export class ChildServer {
  private child: ChildProcess | null = null;
  private output = '';
  readonly url: string;
  constructor(
    private readonly script: string,
    readonly port: number,
  ) {
    this.url = `http://127.0.0.1:${port}/graphql`;
  }
  async start(): Promise<void> {
    const child = spawn(process.execPath, ['--import', 'tsx', this.script], {
      cwd: ROOT,
      env: { ...process.env, PORT: String(this.port), NODE_ENV: 'production' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child = child;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${this.script} did not start: ${this.output}`)), 30_000);
      const onData = (d: Buffer) => {
        this.output = (this.output + d.toString()).slice(-4000);
        if (/^ready$/m.test(this.output)) {
          clearTimeout(timer);
          resolve();
        }
      };
      child.stdout!.on('data', onData);
      child.stderr!.on('data', onData);
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`${this.script} exited with ${code}: ${this.output}`));
      });
    });
  }
  async stop(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    await new Promise((resolve) => {
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      child.once('exit', () => {
        clearTimeout(timer);
        resolve(undefined);
      });
      child.kill('SIGTERM');
    });
  }
}

export async function gql<T = any>(url: string, key: string, query: string, variables?: Record<string, unknown>): Promise<T> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ query, variables }),
  });
  const body = (await res.json()) as { data?: T; errors?: unknown };
  if (!body.data || body.errors) throw new Error(`GraphQL failed: ${JSON.stringify(body).slice(0, 400)}`);
  return body.data;
}

export interface LoadResult {
  requestsPerSecond: number;
  p50: number;
  p99: number;
  requests: number;
  non2xx: number;
  errors: number;
  /** Responses whose body matched `okPattern`. */
  ok: number;
}

/**
 * HTTP load with autocannon: `connections` clients for `seconds`, the same body each time — or, with
 * `bodies`, the next of them in turn for every request; with `rate`, at that many requests a second.
 */
export function httpLoad(o: {
  url: string;
  key: string;
  body: string;
  bodies?: string[];
  connections: number;
  seconds: number;
  okPattern?: string;
  /** Requests per second offered over all connections (autocannon's overallRate): open-loop at a fixed rate rather than as fast as answers come. */
  rate?: number;
  /** This many requests in all, then stop (autocannon's amount: `seconds` is then ignored). */
  amount?: number;
}): Promise<LoadResult> {
  let ok = 0;
  let sent = 0;
  const bodies = o.bodies;
  return new Promise((resolve, reject) => {
    autocannon(
      {
        url: o.url,
        connections: o.connections,
        duration: o.seconds,
        ...(o.rate ? { overallRate: o.rate } : {}),
        ...(o.amount ? { amount: o.amount } : {}),
        requests: [
          {
            method: 'POST',
            headers: { 'content-type': 'application/json', authorization: `Bearer ${o.key}` },
            body: o.body,
            ...(bodies ? { setupRequest: (req: autocannon.Request) => ({ ...req, body: bodies[sent++ % bodies.length]! }) } : {}),
            onResponse: (status: number, body: string) => {
              if (status === 200 && o.okPattern && body.includes(o.okPattern)) ok += 1;
            },
          },
        ],
      },
      (error, result) => {
        if (error) return reject(error);
        resolve({
          requestsPerSecond: result.requests.average,
          p50: result.latency.p50,
          p99: result.latency.p99,
          requests: result.requests.total,
          non2xx: result.non2xx,
          errors: result.errors + result.timeouts,
          ok,
        });
      },
    );
  });
}

/**
 * SQL load: `connections` pg clients running `text` in a loop for `seconds`, as one named (server-side
 * prepared) statement; `options` are the connections' startup options (like PGOPTIONS).
 */
export async function sqlLoad(o: { url: string; connections: number; seconds: number; text: string; params: () => unknown[]; options?: string }): Promise<LoadResult> {
  const pool = new Pool({ connectionString: o.url, max: o.connections, ...(o.options ? { options: o.options } : {}) });
  pool.on('error', () => undefined);
  const latencies: number[] = [];
  let errors = 0;
  let ok = 0;
  const until = Date.now() + o.seconds * 1000;
  const name = `bench_${Math.random().toString(36).slice(2)}`;
  await Promise.all(
    Array.from({ length: o.connections }, async () => {
      const client = await pool.connect();
      try {
        while (Date.now() < until) {
          const t0 = performance.now();
          try {
            const res = await client.query({ name, text: o.text, values: o.params() });
            if ((res.rowCount ?? 0) > 0) ok += 1;
          } catch {
            errors += 1;
          }
          latencies.push(performance.now() - t0);
        }
      } finally {
        client.release();
      }
    }),
  );
  await pool.end();
  latencies.sort((a, b) => a - b);
  const at = (q: number) => Math.round((latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0) * 100) / 100;
  return { requestsPerSecond: latencies.length / o.seconds, p50: at(0.5), p99: at(0.99), requests: latencies.length, non2xx: 0, errors, ok };
}

/** Latency of one GraphQL request repeated sequentially (ms). */
export async function sequentialLatency(url: string, key: string, query: string, variables: Record<string, unknown>, times: number): Promise<{ p50: number; p99: number }> {
  const samples: number[] = [];
  for (let i = 0; i < times; i += 1) {
    const t0 = performance.now();
    await gql(url, key, query, variables);
    samples.push(performance.now() - t0);
  }
  samples.sort((a, b) => a - b);
  const at = (q: number) => Math.round(samples[Math.min(samples.length - 1, Math.floor(q * samples.length))]! * 100) / 100;
  return { p50: at(0.5), p99: at(0.99) };
}

/** pgbench's version line, or null when it is not installed. */
export function pgbenchVersion(): string | null {
  try {
    const r = spawnSync('pgbench', ['--version'], { encoding: 'utf8' });
    return r.status === 0 ? r.stdout.trim() : null;
  } catch {
    return null;
  }
}

export interface PgbenchResult {
  /** Transactions completed (pgbench's count). */
  transactions: number;
  failed: number;
  /** pgbench's tps, without the initial connection time. */
  tps: number;
  /** Per-transaction latency from pgbench's transaction log (ms). */
  p50: number;
  p99: number;
}

/**
 * `pgbench -n -M prepared -c clients -j 2 -T seconds -f script` (with `rate`, `-R rate`: that many
 * transactions a second, scheduled), with a per-transaction log for the percentiles. `env` adds to the environment (PGOPTIONS). Fails when pgbench does (a client
 * aborted on an error, for instance), with what it said.
 */
export async function pgbenchLoad(o: { url: string; clients: number; seconds: number; script: string; env?: Record<string, string>; rate?: number }): Promise<PgbenchResult> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tessera-pgbench-'));
  try {
    const scriptFile = path.join(dir, 'script.sql');
    writeFileSync(scriptFile, o.script);
    const args = ['-n', '-M', 'prepared', '-c', String(o.clients), '-j', String(Math.min(2, o.clients)), '-T', String(o.seconds), '-f', scriptFile, '-l', `--log-prefix=${path.join(dir, 'log')}`, ...(o.rate ? ['-R', String(o.rate)] : []), o.url];
    const { code, stdout, stderr } = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
      const child = spawn('pgbench', args, { env: { ...process.env, ...o.env }, stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      let err = '';
      child.stdout.on('data', (d: Buffer) => (out += d.toString()));
      child.stderr.on('data', (d: Buffer) => (err = (err + d.toString()).slice(-8000)));
      child.on('error', reject);
      child.on('close', (c) => resolve({ code: c, stdout: out, stderr: err }));
    });
    const number = (re: RegExp) => Number(re.exec(stdout)?.[1] ?? NaN);
    const transactions = number(/number of transactions actually processed: (\d+)/);
    const tps = number(/tps = ([\d.]+) \(without initial connection time\)/);
    const failed = number(/number of failed transactions: (\d+)/) || 0;
    if (code !== 0 || !Number.isFinite(transactions) || !Number.isFinite(tps)) {
      throw new Error(`pgbench failed (exit ${code}): ${stderr.trim().split('\n').slice(-5).join(' | ')} ${stdout.slice(-800)}`);
    }
    // Log lines: client_id transaction_no time script_no time_epoch time_us, time in µs (or
    // "failed" / "skipped").
    const latencies: number[] = [];
    for (const file of readdirSync(dir).filter((f) => f.startsWith('log.'))) {
      for (const line of readFileSync(path.join(dir, file), 'utf8').split('\n')) {
        const us = Number(line.split(' ')[2]);
        if (line && Number.isFinite(us)) latencies.push(us / 1000);
      }
    }
    latencies.sort((a, b) => a - b);
    const at = (q: number) => Math.round((latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0) * 100) / 100;
    return { transactions, failed, tps, p50: at(0.5), p99: at(0.99) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The commit measured, and whether src/, prisma/ or the packages had uncommitted changes. */
export function codeVersion(): string {
  const git = (...a: string[]) => execFileSync('git', a, { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  try {
    const sha = git('rev-parse', '--short', 'HEAD');
    const dirty = git('status', '--porcelain', '--', 'src', 'prisma', 'package.json', 'package-lock.json');
    return dirty ? `${sha} with uncommitted changes to src/, prisma/ or the packages` : sha;
  } catch {
    return 'unknown (not a git checkout)';
  }
}
