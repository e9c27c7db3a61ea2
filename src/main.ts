// `npm start`: read the configuration, start the embedded PostgreSQL when DATABASE_URL is unset,
// apply pending migrations, then serve (or, with WEB_CONCURRENCY > 1, run the workers: cluster.ts).
// SIGTERM/SIGINT stop it cleanly. A failure to start prints advice, not a stack (startupAdvice.ts).
import 'dotenv/config';
import cluster from 'node:cluster';
import path from 'node:path';
import Redis from 'ioredis';
import { Pool } from 'pg';
import { runPrimary } from './cluster';
import { adminKeyFile } from './adminKeyFile';
import { loadConfig, type Config } from './config';
import { createDatabase, poolConfig, type Database } from './db/client';
import { createDatabaseIfMissing, EmbeddedPostgresError, startEmbeddedPostgres, type EmbeddedDatabase } from './db/embedded';
import { durabilityNote, readDurability } from './db/durability';
import { appliedSummary, migrate } from './db/migrate';
import { parseHosts } from './db/hosts';
import { isTransientDbError } from './db/pgErrors';
import { detectCitus } from './db/distribute';
import { describeDialect, dialectOf, type Dialect } from './db/dialect';
import { detectPooler, PoolerWithoutDirectUrlError, type Pooler } from './db/pooler';
import { applySessionSettings, checkSessionSettings, refusal, RoleSettingsWriteError, type RoleSettings } from './db/sessionSettings';
import { createLogger, drainStdout, type Logger } from './logger';
import { createServer } from './server';
import { startTracing } from './tracing/start';
import { ListenError, PoolCheckError, startupAdvice } from './startupAdvice';
import { armShutdownWatchdog } from './watchdog';

const EMBEDDED_DATABASE = 'tessera';
/** After SHUTDOWN_GRACE_MS: the main thread's own deadline, then the watchdog's (watchdog.ts). */
export const SHUTDOWN_DEADLINE_MARGIN_MS = 1_000;
export const SHUTDOWN_WATCHDOG_MARGIN_MS = 1_500;

/** What main() has started so far: a failed start stops it again before exiting. */
const started: { config?: Config; embedded?: EmbeddedDatabase } = {};

/**
 * Redis for the rate limits shared by every instance. It never holds anything correctness depends
 * on: when it does not answer, commands fail fast (no offline queue) and each instance counts in its
 * own memory until it is back.
 */
function connectRedis(url: string, logger: Logger): Redis {
  const redis = new Redis(url, { enableOfflineQueue: false, maxRetriesPerRequest: 1, connectTimeout: 2000 });
  redis.on('error', (err) => logger.warn({ error: err.message }, 'redis error'));
  return redis;
}

/** Stops the embedded PostgreSQL unless other Tessera processes started in this folder still use it. */
async function releaseEmbedded(embedded: EmbeddedDatabase, logger: Logger): Promise<void> {
  if (await embedded.release()) logger.info('embedded PostgreSQL stopped');
  else logger.info('embedded PostgreSQL left running: other processes are using it');
}

/** `file` as the operator can use it here: relative to the current folder when inside it, else absolute. */
function shown(file: string): string {
  const relative = path.relative(process.cwd(), file);
  return relative && !relative.startsWith('..') && !path.isAbsolute(relative) ? relative : file;
}

/** The operator's banner (the admin key, when generated, is printed here once, never logged). */
function printReady(config: Config, port: number): void {
  const base = `http://localhost:${port}`;
  if (config.adminApiKeyGenerated) {
    process.stdout.write(
      `\n  Tessera is ready.\n  GraphiQL:      ${base}/graphql#admin-key=${encodeURIComponent(config.adminApiKey)}\n` +
        `  Admin API key: ${config.adminApiKey}  (generated; kept in ${shown(adminKeyFile(config.embedded.dir))}; set ADMIN_API_KEY to choose one)\n\n`,
    );
  } else {
    process.stdout.write(`\n  Tessera is ready. GraphiQL: ${base}/graphql (header Authorization: Bearer <ADMIN_API_KEY>)\n\n`);
  }
}

/** DATABASE_URL, or the `tessera` database of the embedded PostgreSQL (started, or joined). */
async function databaseUrl(config: Config, logger: Logger): Promise<string> {
  if (config.databaseUrl) return config.databaseUrl;
  const embedded = await startEmbeddedPostgres(config.embedded);
  started.embedded = embedded;
  await createDatabaseIfMissing(embedded.url, EMBEDDED_DATABASE);
  logger.info(
    { dir: embedded.dir, port: config.embedded.port },
    embedded.owned ? 'embedded PostgreSQL started (DATABASE_URL is unset)' : 'joined the embedded PostgreSQL another Tessera process started here',
  );
  return embedded.urlFor(EMBEDDED_DATABASE);
}

/** Says where an acknowledged claim lives, where that can matter: a standby exists, or production. */
async function logDurability(db: ReturnType<typeof createDatabase>, logger: Logger, production: boolean): Promise<void> {
  try {
    const d = await onSomeHost(db.options.url, () => readDurability(db.pool));
    const note = durabilityNote(d, production);
    if (note) logger.info(d, note);
  } catch (error) {
    logger.warn({ error: (error as Error).message }, 'could not read the replication settings');
  }
}

/**
 * What DATABASE_URL points at (db/pooler.ts), and where migrations run: behind a transaction pooler,
 * only DATABASE_DIRECT_URL will do (the migration lock is a session lock), and without it Tessera
 * refuses to start rather than half-work.
 */
async function connections(config: Config, url: string): Promise<{ pooler: Pooler; directUrl: string }> {
  const pooler = config.databaseUrl ? await detectPooler(url, config.database) : 'none';
  if (pooler === 'none') return { pooler, directUrl: config.databaseDirectUrl ?? url };
  if (!config.databaseDirectUrl) throw new PoolerWithoutDirectUrlError(config.database.pooler ? 'configured' : 'detected');
  return { pooler, directUrl: config.databaseDirectUrl };
}

/**
 * `work` on the pool, tried once more per listed host when a connection fails transiently: with
 * several hosts the first connection may reach a standby (hosts.ts refuses it and moves on), and
 * the next one the primary.
 */
async function onSomeHost<T>(url: string, work: () => Promise<T>): Promise<T> {
  const tries = parseHosts(url).urls.length + 1;
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await work();
    } catch (error) {
      if (attempt >= tries || !isTransientDbError(error)) throw error;
    }
  }
}

/** What this process wrote as role settings behind PgBouncer (or why it could not); undefined when nothing. */
type Written = RoleSettings | RoleSettingsWriteError | undefined;

/**
 * Runs a query on the pool before anything is served (so "ready" means the pool works), says which
 * session settings its connections run with — timeouts above all — and where they come from, and
 * refuses to serve (sessionSettings.ts, `refusal`) when one of them is not in force.
 */
async function checkPool(pool: Pick<Pool, 'query'>, options: Database['options'], pooler: Pooler, logger: Logger, written: Written): Promise<void> {
  let check;
  try {
    check = await onSomeHost(options.url, () => checkSessionSettings(pool, options));
  } catch (error) {
    throw new PoolCheckError(pooler, { cause: error });
  }
  const source = pooler === 'pgbouncer' ? 'role settings of this database (behind PgBouncer)' : 'connection start-up parameters';
  logger.info(
    { ...check.inForce, database: check.database, role: check.role, from: source },
    `session settings in force: statement_timeout ${check.inForce.statement_timeout}, lock_timeout ${check.inForce.lock_timeout}, idle_in_transaction_session_timeout ${check.inForce.idle_in_transaction_session_timeout}`,
  );
  const refused = refusal(check, pooler, options.url, written);
  if (refused) throw refused;
}

/**
 * Behind PgBouncer, the role settings of DATABASE_URL's role in the direct connection's database,
 * written once by the primary process. A role that may not write them is not yet a failure: they
 * may be set already (by an operator), which the check of the pool decides.
 */
async function writeRoleSettings(config: Config, url: string, directUrl: string, dialect: Dialect, logger: Logger): Promise<Written> {
  try {
    const written = await applySessionSettings(directUrl, url, { ...config.database, dialect });
    logger.info({ role: written.role, database: written.database }, 'session settings written as role settings (behind PgBouncer)');
    return written;
  } catch (error) {
    if (!(error instanceof RoleSettingsWriteError)) throw error;
    logger.warn({ error: error.message }, 'could not write the session settings as role settings: serving only if they are in force already');
    return error;
  }
}

/** The check of checkPool on one pooled connection of the primary, before any worker is started. */
async function checkBeforeWorkers(config: Config, url: string, dialect: Dialect, logger: Logger, written: Written): Promise<void> {
  const pooler = dialect.pooler;
  const options = { ...config.database, pooler, url, dialect };
  const pool = new Pool({ ...poolConfig(options), max: 1 });
  pool.on('error', () => undefined);
  try {
    await checkPool(pool, options, pooler, logger, written);
  } finally {
    await pool.end().catch(() => undefined);
  }
}

/** One process serving HTTP and WebSocket, until SIGTERM/SIGINT. */
async function serve(config: Config, logger: Logger, url: string, dialect: Dialect, startedAt: number, written?: Written): Promise<void> {
  const pooler = dialect.pooler;
  // A dropped connection is expected (restarts, terminated backends): one line, not the client object.
  const onDatabaseError = (err: Error & { code?: string }) => logger.warn({ code: err.code, error: err.message }, 'database connection error');
  const onUnresponsive = (host: string, error: Error) =>
    logger.error({ host: host.replace(/\/\/[^@/]*@/, '//'), error: error.message }, 'the database server stopped answering: its connections are closed and new ones try the next host');
  const db = createDatabase({ ...config.database, pooler, url, dialect, onError: onDatabaseError, onUnresponsive });
  try {
    await checkPool(db.pool, db.options, pooler, logger, written);
  } catch (error) {
    await db.close().catch(() => undefined);
    throw error;
  }
  const redis = config.redisUrl ? connectRedis(config.redisUrl, logger) : undefined;
  // OpenTelemetry, when the OTEL_* variables turn it on; before the server, so its first request is traced.
  const tracing = config.tracing ? startTracing(config.tracing, { logger }) : undefined;
  if (config.tracing) logger.info({ exporter: config.tracing.exporter, ratio: config.tracing.ratio, parentBased: config.tracing.parentBased, service: config.tracing.serviceName }, 'tracing on');
  const server = await createServer({ config, db, logger, redis, clusterWorker: cluster.isWorker });
  let port: number;
  try {
    ({ port } = await server.listen(config.port, config.host));
  } catch (error) {
    await server.stop().catch(() => undefined);
    await tracing?.stop();
    await db.close().catch(() => undefined);
    redis?.disconnect();
    throw new ListenError(config.port, config.host, { cause: error });
  }
  logger.info({ port, ms: Date.now() - startedAt }, 'Tessera is serving POST /graphql');
  if (!cluster.isWorker || cluster.worker?.id === 1) void logDurability(db, logger, config.env === 'production');

  if (!cluster.isWorker) printReady(config, port);

  let stopping = false;
  const shutdown = async (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal, graceMs: config.shutdownGraceMs }, 'shutting down: no new requests, finishing the ones in flight');
    // In-flight requests get the grace period (Apollo's drain cuts them off then); the pool and the
    // database have a second more, and past that the watchdog ends the process from another thread.
    armShutdownWatchdog(config.shutdownGraceMs + SHUTDOWN_WATCHDOG_MARGIN_MS);
    setTimeout(() => {
      logger.error('shutdown took too long; exiting');
      process.exit(1);
    }, config.shutdownGraceMs + SHUTDOWN_DEADLINE_MARGIN_MS).unref();
    try {
      await server.stop();
      logger.info('HTTP server stopped');
      await tracing?.stop();
      await db.close();
      logger.info('database pool closed');
      if (redis) await redis.quit().catch(() => redis.disconnect());
      if (started.embedded) await releaseEmbedded(started.embedded, logger);
      logger.info('stopped');
      await drainStdout();
      process.exit(0);
    } catch (err) {
      logger.error({ err }, 'shutdown failed');
      await drainStdout();
      process.exit(1);
    }
  };
  process.on('SIGTERM', (signal) => void shutdown(signal));
  process.on('SIGINT', (signal) => void shutdown(signal));
}

async function main(): Promise<void> {
  const startedAt = Date.now();
  const config = loadConfig();
  started.config = config;
  const logger = createLogger({ env: config.env, level: process.env.LOG_LEVEL });
  const url = await databaseUrl(config, logger);
  const { pooler, directUrl } = await connections(config, url);
  // What the database is, asked once; everything below is handed the answer.
  const dialect = dialectOf((await detectCitus(directUrl)) ? 'citus' : 'postgresql', pooler);
  logger.info({ database: dialect.kind, pooler: dialect.pooler }, `database: ${describeDialect(dialect)}`);
  // Under the migration lock: instances starting together apply them once, and none serves first.
  const applied = await migrate(directUrl, undefined, undefined, dialect.kind);
  if (applied.length > 0) logger.info(appliedSummary(applied), 'migrations applied');
  const written = pooler === 'pgbouncer' && cluster.isPrimary ? await writeRoleSettings(config, url, directUrl, dialect, logger) : undefined;
  if (config.webConcurrency > 1 && cluster.isPrimary) {
    if (pooler === 'pgbouncer') await checkBeforeWorkers(config, url, dialect, logger, written);
    const embedded = started.embedded;
    await runPrimary(config, logger, url, pooler, {
      deadlineMarginMs: SHUTDOWN_DEADLINE_MARGIN_MS,
      watchdogMarginMs: SHUTDOWN_WATCHDOG_MARGIN_MS,
      ready: (port) => printReady(config, port),
      stopped: async () => {
        if (embedded) await releaseEmbedded(embedded, logger);
      },
    });
    return;
  }
  await serve(config, logger, url, dialect, startedAt, written);
}

main().catch(async (error: unknown) => {
  process.stderr.write(`${startupAdvice(error, started.config?.databaseUrl)}\n`);
  if (process.env.LOG_LEVEL === 'debug' || process.env.LOG_LEVEL === 'trace') {
    process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    if (error instanceof EmbeddedPostgresError && error.details) process.stderr.write(`${error.details}\n`);
  }
  if (started.embedded) await started.embedded.release().catch(() => undefined);
  process.exit(1);
});
