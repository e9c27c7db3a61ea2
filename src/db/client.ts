// The database handle: one pg pool, shared by Prisma (through its pg driver adapter) and by the
// health check. Every connection gets the timeouts that keep a stuck claim from holding locks.
import { createHash } from 'node:crypto';
import { PrismaPg } from '@prisma/adapter-pg';
import { Pool, type PoolConfig } from 'pg';
import type { Config } from '../config';
import { PrismaClient } from '../generated/prisma/client';
import { dialectOf, type Dialect } from './dialect';
import { HostSelector, parseHosts } from './hosts';
import { startupOptions } from './sessionSettings';
import { StallWatch } from './stallWatch';
import type { ReadReplicas, ReadTarget } from './replicas';

export type Prisma = PrismaClient;
/** What the SQL functions in src/db/ take: the service's transaction client (or the root client). */
export type Db = Pick<PrismaClient, '$queryRaw' | '$executeRaw'>;

export interface Database {
  readonly prisma: PrismaClient;
  readonly options: DatabaseOptions;
  /** What the database is (dialect.ts), decided once at start-up. */
  readonly dialect: Dialect;
  readonly pool: Pool;
  /** Counts statements sent to PostgreSQL (the DataLoader test reads it). */
  readonly statements: { count: number };
  /** Set while the server was found not answering (stallWatch.ts) and nothing has answered since: /healthz reads it. */
  unresponsive(): { url: string; since: number } | null;
  /** True when poolMaxWaiting requests already wait for a connection: shed load instead of queueing. */
  saturated(): boolean;
  /** Where a read that may be a moment stale runs: a replica within bounds (replicas.ts), else the primary. */
  read(): ReadTarget;
  /** Sends the stale-tolerant reads to these replicas from now on; they close with the database. */
  useReplicas(replicas: ReadReplicas): void;
  close(): Promise<void>;
}

export type DatabaseOptions = Config['database'] & {
  url: string;
  onError?: (error: Error) => void;
  /** Called once for each server the pool gives up on because it stopped answering (stallWatch.ts). */
  onUnresponsive?: (url: string, error: Error) => void;
  /** What the database is (dialect.ts); PostgreSQL, reached through `pooler`, when not given. */
  dialect?: Dialect;
};

/** The dialect `options` give, or PostgreSQL through their pooler. */
export const dialectOfOptions = (options: Pick<DatabaseOptions, 'dialect' | 'pooler'>): Dialect => options.dialect ?? dialectOf('postgresql', options.pooler ?? 'none');

/** A query outstanding this long gets its server probed (stallWatch.ts); the probe gets PROBE_TIMEOUT_MS. */
export const STALL_MS = 2_000;
export const PROBE_TIMEOUT_MS = 3_000;

export function poolConfig(options: DatabaseOptions, hosts = hostSelector(options.url)): PoolConfig {
  const list = parseHosts(options.url);
  return {
    connectionString: hosts ? hosts.url : list.urls[0],
    ...(hosts ? { Client: hosts.Client, onConnect: hosts.onConnect } : {}),
    max: options.poolSize,
    // Prisma's pg adapter waits forever for a connection by default; an exhausted pool must fail fast.
    connectionTimeoutMillis: options.poolTimeoutMs,
    idleTimeoutMillis: 30_000,
    // An idle connection to a host that vanished is found out by TCP keepalives, probing from 10 s
    // after it went quiet; one with a query outstanding is the stall watch's (stallWatch.ts).
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
    // The session settings (db/sessionSettings.ts: timeouts, READ COMMITTED, generic plans, no JIT):
    // in the start-up packet straight to PostgreSQL; behind PgBouncer, which refuses them there,
    // they are role settings of the database, applied at start (main.ts).
    ...(options.pooler === 'pgbouncer' ? {} : { options: startupOptions(options) }),
    application_name: 'tessera',
  };
}

/** Several hosts, or target_session_attrs=read-write: Tessera picks the host per connection (hosts.ts). */
function hostSelector(url: string): HostSelector | null {
  const list = parseHosts(url);
  return list.urls.length > 1 || list.readWrite ? new HostSelector(list) : null;
}

export function createDatabase(options: DatabaseOptions): Database {
  const dialect = dialectOfOptions(options);
  const onError = options.onError ?? (() => undefined);
  const hosts = hostSelector(options.url);
  const pool = new Pool(poolConfig(options, hosts));
  const statements = { count: 0 };
  const stalls = new StallWatch({
    stallMs: STALL_MS,
    probeTimeoutMs: PROBE_TIMEOUT_MS,
    hostFailed: (url) => hosts?.failed(url),
    onUnresponsive: options.onUnresponsive ?? (() => undefined),
  });
  const single = parseHosts(options.url).urls[0]!;
  // A backend terminated while idle emits 'error' on the pool; unhandled, it would crash Node
  // (docs/CORRECTNESS.md §6). The pool drops the client itself.
  pool.on('error', onError);
  pool.on('connect', (client) => {
    client.on('error', onError);
    stalls.watch(client, (client as unknown as { tesseraUrl?: string }).tesseraUrl ?? single);
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
      statements.count += 1;
      return query(...args);
    };
  });
  const adapter = new PrismaPg(pool, {
    onPoolError: onError,
    onConnectionError: onError,
    // Named (server-side prepared) statements: each connection parses and plans a statement once.
    // Not behind PgBouncer in transaction mode (1.18 has no prepared statements there: the next
    // transaction may run on another server connection); the claims then rely on their functions'
    // cached plans (docs/DESIGN.md).
    ...(!dialect.namedStatements ? {} : { statementNameGenerator: (query: { sql: string }) => `p${createHash('sha1').update(query.sql).digest('hex').slice(0, 20)}` }),
  });
  const prisma = new PrismaClient({
    adapter,
    // Batch transactions (close, quotas, loads): wait for a connection as long as any request
    // does, and let them run as long as their statements may.
    transactionOptions: { maxWait: options.poolTimeoutMs, timeout: 2 * options.statementTimeoutMs },
  });
  let replicas: ReadReplicas | null = null;
  const primary: ReadTarget = { prisma, pool, replica: false };
  return {
    prisma,
    options,
    dialect,
    pool,
    statements,
    unresponsive: () => stalls.unresponsive,
    saturated: () => options.poolMaxWaiting > 0 && pool.waitingCount >= options.poolMaxWaiting,
    read: () => replicas?.target() ?? primary,
    useReplicas(r) {
      replicas = r;
    },
    async close() {
      stalls.stop();
      await replicas?.close();
      await prisma.$disconnect().catch(() => undefined);
      await pool.end().catch(() => undefined);
    },
  };
}
