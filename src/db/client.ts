// The database handle: one pg pool, shared by Prisma (through its pg driver adapter) and by the
// health check. Every connection gets the timeouts that keep a stuck claim from holding locks.
import { createHash } from 'node:crypto';
import { PrismaPg } from '@prisma/adapter-pg';
import { Pool, type PoolConfig } from 'pg';
import type { Config } from '../config';
import { PrismaClient } from '../generated/prisma/client';
import { HostSelector, parseHosts } from './hosts';
import type { ReadReplicas, ReadTarget } from './replicas';

export type Prisma = PrismaClient;
/** What the SQL functions in src/db/ take: the service's transaction client (or the root client). */
export type Db = Pick<PrismaClient, '$queryRaw' | '$executeRaw'>;

export interface Database {
  readonly prisma: PrismaClient;
  readonly options: DatabaseOptions;
  readonly pool: Pool;
  /** Counts statements sent to PostgreSQL (the DataLoader test reads it). */
  readonly statements: { count: number };
  /** True when poolMaxWaiting requests already wait for a connection: shed load instead of queueing. */
  saturated(): boolean;
  /** Where a read that may be a moment stale runs: a replica within bounds (replicas.ts), else the primary. */
  read(): ReadTarget;
  /** Sends the stale-tolerant reads to these replicas from now on; they close with the database. */
  useReplicas(replicas: ReadReplicas): void;
  close(): Promise<void>;
}

export type DatabaseOptions = Config['database'] & { url: string; onError?: (error: Error) => void };

export function poolConfig(options: DatabaseOptions): PoolConfig {
  // Several hosts, or target_session_attrs=read-write: Tessera picks the host per connection (hosts.ts).
  const list = parseHosts(options.url);
  const hosts = list.urls.length > 1 || list.readWrite ? new HostSelector(list) : null;
  return {
    connectionString: hosts ? hosts.url : list.urls[0],
    ...(hosts ? { Client: hosts.Client, onConnect: hosts.onConnect } : {}),
    max: options.poolSize,
    // Prisma's pg adapter waits forever for a connection by default; an exhausted pool must fail fast.
    connectionTimeoutMillis: options.poolTimeoutMs,
    idleTimeoutMillis: 30_000,
    // Per-connection limits, so that no claim can hold a ticket row or a gate lock indefinitely.
    statement_timeout: options.statementTimeoutMs,
    lock_timeout: options.lockTimeoutMs,
    idle_in_transaction_session_timeout: options.idleInTransactionTimeoutMs,
    // The claim's correctness argument is written for READ COMMITTED (re-checked predicates,
    // fresh snapshots in the gate function); pin it rather than inherit a server default.
    // Generic plans for prepared statements: left to itself PostgreSQL re-plans the claim for every
    // execution (its custom plans look cheaper than the generic one), and planning that statement
    // took 1.1 ms of its 2.4 ms here; with the generic plan a claim took 1.0 ms. Safe because every
    // statement's plan is decided by its shape, not by statistics of one campaign: the claim's
    // pick_order exists only in its partial index (test/plan.test.ts checks the generic plan too).
    // No JIT: PostgreSQL compiles a plan whose estimated cost passes jit_above_cost with LLVM at
    // every execution, and the group claim's plan does (its LIMITs are parameters): JIT turned its
    // 5 ms for 32 claims into 1.3–2.1 s (2026-12-01). An OLTP statement never runs long enough to
    // repay compiling it.
    options: '-c default_transaction_isolation=read\\ committed -c plan_cache_mode=force_generic_plan -c jit=off',
    application_name: 'tessera',
  };
}

export function createDatabase(options: DatabaseOptions): Database {
  const onError = options.onError ?? (() => undefined);
  const pool = new Pool(poolConfig(options));
  const statements = { count: 0 };
  // A backend terminated while idle emits 'error' on the pool; unhandled, it would crash Node
  // (docs/CORRECTNESS.md §6). The pool drops the client itself.
  pool.on('error', onError);
  pool.on('connect', (client) => {
    client.on('error', onError);
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
      statements.count += 1;
      return query(...args);
    };
  });
  const adapter = new PrismaPg(pool, {
    onPoolError: onError,
    onConnectionError: onError,
    // Named (server-side prepared) statements: each connection parses and plans the claim once.
    statementNameGenerator: (query) => `p${createHash('sha1').update(query.sql).digest('hex').slice(0, 20)}`,
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
    pool,
    statements,
    saturated: () => options.poolMaxWaiting > 0 && pool.waitingCount >= options.poolMaxWaiting,
    read: () => replicas?.target() ?? primary,
    useReplicas(r) {
      replicas = r;
    },
    async close() {
      await replicas?.close();
      await prisma.$disconnect().catch(() => undefined);
      await pool.end().catch(() => undefined);
    },
  };
}
