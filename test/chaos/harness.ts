// Moving parts for the chaos scenarios: a real Tessera process (spawned like `npm start`, so it can
// be SIGKILLed and restarted), a database per scenario, the storm, the stats reader and the
// retry-until-answered loop. The scenarios themselves are in scenarios.ts.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { Pool } from 'pg';
import type { EmbeddedDatabase } from '../../src/db/embedded';
import { migrate } from '../../src/db/migrate';
import { cloneCitusDatabase, dropCitusDatabase } from '../helpers/citus';
import { databaseUrl, TEMPLATE_ENV } from '../helpers/env';
import { sleep, until } from '../helpers/time';
import { gql, sendClaim, type ClaimRequest } from './client';
import { History, type Invocation, type Verdict } from './history';
import type { ScenarioResult } from './scenarios';

export const ADMIN_KEY = 'chaos-admin-key-0123456789';
const ROOT = path.resolve(__dirname, '../..');

export { freePort } from '../helpers/process';

/**
 * The Citus nodes when `serverUrl` is the coordinator of npm run test:citus's cluster
 * (TESSERA_TEST_CITUS_NODES: the coordinator's URL, then each worker's), else null.
 */
export function citusNodesOf(serverUrl: string): string[] | null {
  const nodes = JSON.parse(process.env.TESSERA_TEST_CITUS_NODES ?? '[]') as string[];
  return nodes.length > 1 && new URL(nodes[0]!).host === new URL(serverUrl).host ? nodes : null;
}

/**
 * On Citus, terminates a share of database `database`'s client backends on each worker — those the
 * coordinator holds for the claims routed there — and answers how many; `end()` closes its pools.
 */
export function workerTerminator(nodes: readonly string[], database: string): { terminate(share: number): Promise<number>; end(): Promise<void> } {
  const pools = nodes.slice(1).map((node) => {
    const pool = new Pool({ connectionString: databaseUrl(node, database), max: 1 });
    pool.on('error', () => undefined);
    return pool;
  });
  return {
    async terminate(share) {
      let n = 0;
      for (const pool of pools) {
        const { rows } = await pool.query(
          `SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity
            WHERE datname = current_database() AND backend_type = 'client backend' AND pid <> pg_backend_pid() AND random() < $1`,
          [share],
        );
        n += rows[0].n as number;
      }
      return n;
    },
    async end() {
      await Promise.all(pools.map((pool) => pool.end().catch(() => undefined)));
    },
  };
}

/**
 * A fresh, migrated database on `serverUrl`; `drop` removes it. On the Citus coordinator of
 * npm run test:citus, a clone of the suite's distributed template on every node.
 */
export async function scratchDatabase(serverUrl: string, label: string): Promise<{ url: string; name: string; sql: Pool; drop(): Promise<void> }> {
  const name = `tessera_chaos_${label}_${randomBytes(3).toString('hex')}`;
  const citus = citusNodesOf(serverUrl);
  let dropDatabase: () => Promise<void>;
  if (citus) {
    await cloneCitusDatabase(citus, process.env[TEMPLATE_ENV]!, name);
    dropDatabase = () => dropCitusDatabase(citus, name);
  } else {
    const admin = new Pool({ connectionString: databaseUrl(serverUrl, 'postgres'), max: 1 });
    admin.on('error', () => undefined);
    await admin.query(`CREATE DATABASE "${name}"`);
    dropDatabase = async () => {
      await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`).catch(() => undefined);
      await admin.end().catch(() => undefined);
    };
  }
  const url = databaseUrl(serverUrl, name);
  await migrate(url);
  const sql = new Pool({ connectionString: url, max: 4 });
  sql.on('error', () => undefined);
  return {
    url,
    name,
    sql,
    async drop() {
      await sql.end().catch(() => undefined);
      await dropDatabase().catch(() => undefined);
    },
  };
}

/**
 * PgBouncers the Tessera processes connect through (chaos.test.ts under npm run test:pgbouncer),
 * by the host:port of the PostgreSQL server each stands in front of. None: processes connect directly.
 */
const poolers = new Map<string, string>();

/** From now on a ServerProcess whose DATABASE_URL is on `serverUrl`'s server connects through the PgBouncer at `poolerUrl`. */
export function connectThroughPooler(serverUrl: string, poolerUrl: string): void {
  poolers.set(new URL(serverUrl).host, poolerUrl);
}

export function connectDirectly(): void {
  poolers.clear();
}

/**
 * A Tessera process's environment behind PgBouncer: DATABASE_URL the same database through the
 * pooler, DATABASE_DIRECT_URL the direct one (migrations, session settings), DATABASE_POOLER=pgbouncer.
 * Unchanged without poolers; a database on a server with no PgBouncer in front of it is an error, not
 * a silent direct connection.
 */
function throughPooler(env: Record<string, string>): Record<string, string> {
  if (poolers.size === 0 || !env.DATABASE_URL) return env;
  const direct = new URL(env.DATABASE_URL);
  const pooler = poolers.get(direct.host);
  if (!pooler) throw new Error(`no PgBouncer in front of ${direct.host} (DATABASE_URL of a Tessera process under test:pgbouncer)`);
  return {
    ...env,
    DATABASE_URL: databaseUrl(pooler, decodeURIComponent(direct.pathname.slice(1))),
    DATABASE_DIRECT_URL: env.DATABASE_URL,
    DATABASE_POOLER: 'pgbouncer',
  };
}

/** A Tessera process, started as `npm start` starts it (through PgBouncer after connectThroughPooler). */
export class ServerProcess {
  private child: ChildProcess | null = null;
  private output = '';
  readonly url: string;
  readonly base: string;

  constructor(
    readonly port: number,
    private readonly env: Record<string, string>,
  ) {
    this.base = `http://127.0.0.1:${port}`;
    this.url = `${this.base}/graphql`;
  }

  async start(): Promise<void> {
    this.output = '';
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
      cwd: ROOT,
      env: { ...process.env, ADMIN_API_KEY: ADMIN_KEY, PORT: String(this.port), LOG_LEVEL: 'warn', NODE_ENV: 'development', ...throughPooler(this.env) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child = child;
    child.stdout!.on('data', (d: Buffer) => (this.output = (this.output + d.toString()).slice(-4000)));
    child.stderr!.on('data', (d: Buffer) => (this.output = (this.output + d.toString()).slice(-4000)));
    try {
      await until(
        async () => {
          if (child.exitCode !== null) throw new Error(`Tessera exited with ${child.exitCode} while starting:\n${this.output}`);
          try {
            return (await fetch(`${this.base}/healthz`, { signal: AbortSignal.timeout(1000) })).status === 200;
          } catch {
            return false; // not listening yet
          }
        },
        { message: 'Tessera to answer /healthz', timeoutMs: 30_000, intervalMs: 100 },
      );
    } catch (error) {
      if (child.exitCode !== null) throw error;
      throw new Error(`${(error as Error).message}:\n${this.output}`, { cause: error });
    }
  }

  /** SIGKILL: no shutdown, no flushing — the process is gone mid-request. */
  kill(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null) return Promise.resolve();
    return new Promise((resolve) => {
      child.once('exit', () => resolve());
      child.kill('SIGKILL');
    });
  }

  async stop(): Promise<number | null> {
    const child = this.child;
    if (!child || child.exitCode !== null) return child?.exitCode ?? null;
    return new Promise((resolve) => {
      child.once('exit', (code) => resolve(code));
      child.kill('SIGTERM');
    });
  }

  get log(): string {
    return this.output;
  }
}

export interface Fixture {
  campaignId: string;
  partnerKeys: string[];
}

/** Partners and an OPEN campaign with `tickets` tickets, made through the API. */
export async function setUpCampaign(server: ServerProcess, tickets: number, partners = 3): Promise<Fixture> {
  const partnerKeys: string[] = [];
  for (let i = 0; i < partners; i += 1) {
    const data = await gql(server.url, ADMIN_KEY, 'mutation($n: String!) { createPartner(input: { name: $n }) { apiKey } }', { n: `chaos-${i}` });
    partnerKeys.push(data.createPartner.apiKey);
  }
  const { createCampaign } = await gql(server.url, ADMIN_KEY, 'mutation { createCampaign(input: { name: "chaos" }) { campaign { id } } }');
  const campaignId = createCampaign.campaign.id as string;
  await gql(server.url, ADMIN_KEY, 'mutation($id: ID!, $n: Int!) { generateTickets(campaignId: $id, count: $n, prefix: "C-") { loaded } }', { id: campaignId, n: tickets });
  await gql(server.url, ADMIN_KEY, 'mutation($id: ID!) { openCampaign(id: $id) { campaign { id } } }', { id: campaignId });
  return { campaignId, partnerKeys };
}

export interface StormOptions {
  server: ServerProcess;
  fixture: Fixture;
  history: History;
  label: string;
  claims: number;
  concurrency: number;
  timeoutMs?: number;
  /** Called after each claim is sent with how many were sent so far (faults hook in here). */
  onSent?: (sent: number) => void;
  /** Aborts a request after this many ms (the client hangs up); the outcome is then unknown. */
  hangUpAfterMs?: () => number | null;
  /** How often a client retries an unknown outcome before moving on (default 40; 0 = never). */
  inlineRetries?: number;
}

/** Sends `claims` claims, `concurrency` at a time, recording each outcome. */
export async function storm(o: StormOptions): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < o.claims) {
      const i = next++;
      const request: ClaimRequest = {
        campaignId: o.fixture.campaignId,
        holder: `${o.label}-holder-${i}`,
        metadata: { scenario: o.label, i },
        idempotencyKey: `${o.label}-${i}-${randomBytes(4).toString('hex')}`,
      };
      const partnerKey = o.fixture.partnerKeys[i % o.fixture.partnerKeys.length]!;
      const invocation = o.history.add(request, partnerKey);
      o.onSent?.(i + 1);
      const hangUp = o.hangUpAfterMs?.() ?? null;
      if (hangUp !== null) {
        // This client hangs up and replays later (retryUnknowns), like a client that crashed.
        const controller = new AbortController();
        const timer = setTimeout(() => controller.abort(), hangUp);
        const startedAt = Date.now();
        const outcome = await sendClaim(o.server.url, partnerKey, request, { timeoutMs: o.timeoutMs ?? 15_000, signal: controller.signal });
        clearTimeout(timer);
        invocation.attempts.push({ startedAt, endedAt: Date.now(), outcome, retry: false });
        continue;
      }
      // A real client: it retries its request, with its key, until it gets an answer — backing off
      // while the server or the database is down instead of burning through its queue.
      for (let attempt = 0; attempt < (o.inlineRetries ?? 40); attempt += 1) {
        const startedAt = Date.now();
        const outcome = await sendClaim(o.server.url, partnerKey, request, { timeoutMs: o.timeoutMs ?? 15_000 });
        invocation.attempts.push({ startedAt, endedAt: Date.now(), outcome, retry: attempt > 0 });
        if (outcome.kind !== 'unknown') break;
        await sleep(Math.min(1000, 50 * 2 ** Math.min(attempt, 4)) + Math.random() * 50);
      }
    }
  };
  await Promise.all(Array.from({ length: o.concurrency }, worker));
}

/** Reads the campaign's stats through the API every `everyMs` until stopped; failed reads are skipped. */
export function statsReader(server: ServerProcess, campaignId: string, history: History, everyMs = 25): { stop(): Promise<void> } {
  let running = true;
  const loop = (async () => {
    while (running) {
      try {
        const at = Date.now();
        const data = await gql(server.url, ADMIN_KEY, 'query($id: ID!) { campaign(id: $id) { stats { total allocated held allotted available void } } }', { id: campaignId }, 3000);
        history.statsReads.push({ at, ...data.campaign.stats });
      } catch {
        // the server may be down in this scenario
      }
      await sleep(everyMs);
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
    },
  };
}

/** Retries every invocation whose last outcome is unknown, with its key, until it is answered. */
export async function retryUnknowns(server: ServerProcess, history: History, options: { maxRounds?: number } = {}): Promise<void> {
  const maxRounds = options.maxRounds ?? 60;
  for (let round = 0; round < maxRounds; round += 1) {
    const pending = history.invocations.filter((inv) => History.last(inv)?.kind === 'unknown');
    if (pending.length === 0) return;
    // At most 32 retries in flight: the clients are many, but they do not all retry in one instant.
    let next = 0;
    const worker = async () => {
      while (next < pending.length) {
        const inv: Invocation = pending[next++]!;
        const startedAt = Date.now();
        const outcome = await sendClaim(server.url, inv.partnerKey, inv.request, { timeoutMs: 15_000 });
        inv.attempts.push({ startedAt, endedAt: Date.now(), outcome, retry: true });
      }
    };
    await Promise.all(Array.from({ length: Math.min(32, pending.length) }, worker));
    if (history.invocations.some((inv) => History.last(inv)?.kind === 'unknown')) await sleep(Math.min(1000, 100 * (round + 1)));
  }
}

/** closeCampaign as an operator does it: retried until acknowledged (it is idempotent). */
export async function closeCampaign(server: ServerProcess, history: History, sql: Pool, campaignId: string): Promise<void> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      await gql(server.url, ADMIN_KEY, 'mutation($id: ID!) { closeCampaign(id: $id) { campaign { status } } }', { id: campaignId }, 30_000);
      break;
    } catch (error) {
      if (attempt >= 30) throw error;
      await sleep(100 * Math.min(attempt, 10));
    }
  }
  const { rows } = await sql.query('SELECT count(*)::int AS n FROM allocations WHERE campaign_id = $1', [campaignId]);
  history.closeAck = { at: Date.now(), storedAtAck: rows[0].n };
}

/** An embedded PostgreSQL in its own process (embeddedHost.ts), for code running inside Jest. */
export async function spawnEmbeddedHost(dir: string, port: number): Promise<EmbeddedDatabase> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/chaos/embeddedHost.ts', dir, String(port)], {
    cwd: ROOT,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  const waiters: ((line: string) => void)[] = [];
  let buffer = '';
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  child.stdout!.on('data', (d: Buffer) => {
    buffer += d.toString();
    let newline: number;
    while ((newline = buffer.indexOf('\n')) >= 0) {
      const line = buffer.slice(0, newline);
      buffer = buffer.slice(newline + 1);
      const waiter = waiters.shift();
      if (waiter) waiter(line);
      else lines.push(line);
    }
  });
  const nextLine = () =>
    new Promise<string>((resolve, reject) => {
      const queued = lines.shift();
      if (queued !== undefined) return resolve(queued);
      const onExit = () => reject(new Error(`embedded PostgreSQL host exited: ${stderr}`));
      child.once('exit', onExit);
      waiters.push((line) => {
        child.off('exit', onExit);
        resolve(line);
      });
    });
  const command = async (cmd: string) => {
    child.stdin!.write(`${cmd}\n`);
    const answer = await nextLine();
    if (answer !== 'ok') throw new Error(`embedded PostgreSQL host: ${cmd}: ${answer}`);
  };
  const { url } = JSON.parse(await nextLine()) as { url: string };
  return {
    url,
    urlFor: (database) => databaseUrl(url, database),
    stop: () => command('stop'),
    start: () => command('start'),
    async [Symbol.asyncDispose]() {
      await command('exit');
    },
  } as EmbeddedDatabase & { [Symbol.asyncDispose](): Promise<void> };
}

/** A scenario's line of the results table, from its history and the checker's verdict. */
export function scenarioResult(o: { id: string; name: string; history: History; verdict: Verdict; violations: string[]; notes: string[]; started: number }): ScenarioResult {
  return {
    id: o.id,
    name: o.name,
    claims: o.history.invocations.length,
    ...o.history.firstPass(),
    retries: o.history.retries(),
    stored: o.verdict.final.stored,
    total: o.verdict.final.total,
    available: o.verdict.final.available,
    violations: o.violations,
    notes: o.notes,
    seconds: Math.round((Date.now() - o.started) / 100) / 10,
  };
}
