// Building blocks of `npm run bench`: a PostgreSQL to measure on, a Tessera process started the way
// `npm start` starts it, HTTP load with autocannon, SQL load with pg.
import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
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
  ) {
    this.url = `http://127.0.0.1:${port}/graphql`;
  }
  /** The server process's id while it runs (`npm run soak` reads its RSS from /proc). */
  get pid(): number | undefined {
    const child = this.child;
    return child && child.exitCode === null && child.signalCode === null ? child.pid : undefined;
  }
  async start(): Promise<void> {
    this.child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
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
 * `bodies`, the next of them in turn for every request.
 */
export function httpLoad(o: { url: string; key: string; body: string; bodies?: string[]; connections: number; seconds: number; okPattern?: string }): Promise<LoadResult> {
  let ok = 0;
  let sent = 0;
  const bodies = o.bodies;
  return new Promise((resolve, reject) => {
    autocannon(
      {
        url: o.url,
        connections: o.connections,
        duration: o.seconds,
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

/** SQL load: `connections` pg clients running `text` in a loop for `seconds`. */
export async function sqlLoad(o: { url: string; connections: number; seconds: number; text: string; params: () => unknown[] }): Promise<LoadResult> {
  const pool = new Pool({ connectionString: o.url, max: o.connections });
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
