// `npm start`: read the configuration, start the embedded PostgreSQL when DATABASE_URL is unset,
// apply pending migrations, then serve. SIGTERM/SIGINT stop it cleanly.
import 'dotenv/config';
import cluster from 'node:cluster';
import Redis from 'ioredis';
import { Client } from 'pg';
import { RateLimiterClusterMaster } from 'rate-limiter-flexible';
import { ConfigError, loadConfig, type Config } from './config';
import { createDatabase } from './db/client';
import { startEmbeddedPostgres, type EmbeddedDatabase } from './db/embedded';
import { migrate } from './db/migrate';
import { relayLiveUpdatesBetweenWorkers } from './live';
import { createLogger } from './logger';
import { createServer } from './server';

const EMBEDDED_DATABASE = 'tessera';

async function embeddedDatabaseUrl(config: Config): Promise<{ url: string; embedded: EmbeddedDatabase }> {
  const embedded = await startEmbeddedPostgres(config.embedded);
  const admin = new Client({ connectionString: embedded.url });
  await admin.connect();
  try {
    // Processes started together may both find it missing: the loser's CREATE fails (42P04, 23505
    // on pg_database's unique name, or 55006 while the winner copies template1) and finds it there
    // on the next look.
    for (let attempt = 1; ; attempt += 1) {
      const { rowCount } = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [EMBEDDED_DATABASE]);
      if (rowCount) break;
      try {
        await admin.query(`CREATE DATABASE "${EMBEDDED_DATABASE}"`);
        break;
      } catch (error) {
        const code = (error as { code?: string }).code;
        if (!['42P04', '23505', '55006'].includes(code ?? '') || attempt >= 50) throw error;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
  } finally {
    await admin.end();
  }
  return { url: embedded.urlFor(EMBEDDED_DATABASE), embedded };
}

/**
 * Redis for the rate limits shared by every instance. It never holds anything correctness depends
 * on: when it does not answer, commands fail fast (no offline queue) and each instance counts in its
 * own memory until it is back.
 */
function connectRedis(url: string, logger: ReturnType<typeof createLogger>): Redis {
  const redis = new Redis(url, { enableOfflineQueue: false, maxRetriesPerRequest: 1, connectTimeout: 2000 });
  redis.on('error', (err) => logger.warn({ error: err.message }, 'redis error'));
  return redis;
}

/**
 * WEB_CONCURRENCY > 1: this process only prepares the database (embedded PostgreSQL, migrations) and
 * keeps that many workers serving on the shared port, each a whole Tessera with its own pool. A
 * worker that dies is replaced; SIGTERM/SIGINT stop every worker gracefully, then the database.
 * Without Redis, the primary also keeps the rate-limit buckets and relays live signals, so the
 * cluster behaves as one instance; with REDIS_URL, Redis does both for every instance.
 */
async function runPrimary(config: Config, logger: ReturnType<typeof createLogger>, url: string, embedded?: EmbeddedDatabase): Promise<void> {
  let stopping = false;
  if (!config.redisUrl) {
    new RateLimiterClusterMaster(); // answers the workers' RateLimiterCluster (a singleton, kept by the library)
    relayLiveUpdatesBetweenWorkers();
  }
  const env = { DATABASE_URL: url, ADMIN_API_KEY: config.adminApiKey, TESSERA_CLUSTER_WORKER: '1' };
  const fork = () => cluster.fork(env);
  const served = new Set<number>();
  cluster.on('listening', (worker) => served.add(worker.id));
  cluster.on('exit', (worker, code, signal) => {
    if (stopping) {
      if (Object.keys(cluster.workers ?? {}).length === 0) void stopped();
      return;
    }
    if (!served.has(worker.id)) {
      // It never served (bad port, unreachable database): replacing it would only spin.
      logger.error({ pid: worker.process.pid, code, signal }, 'a worker failed to start; stopping');
      process.exitCode = 1;
      shutdown('SIGTERM');
      return;
    }
    logger.warn({ pid: worker.process.pid, code, signal }, 'worker died; starting another');
    fork();
  });
  cluster.once('listening', (_worker, address) => printReady(config, address.port));
  for (let i = 0; i < config.webConcurrency; i += 1) fork();
  logger.info({ workers: config.webConcurrency }, 'cluster started');
  const stopped = async () => {
    if (embedded) await releaseEmbedded(embedded, logger);
    logger.info('stopped');
    process.exit(process.exitCode ?? 0);
  };
  function shutdown(signal: NodeJS.Signals): void {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down the workers');
    for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill('SIGTERM');
    if (Object.keys(cluster.workers ?? {}).length === 0) void stopped();
    setTimeout(() => process.exit(1), config.shutdownGraceMs + 10_000).unref();
  }
  process.on('SIGTERM', shutdown);
  process.on('SIGINT', shutdown);
}

/** Stops the embedded PostgreSQL unless other Tessera processes started in this folder still use it. */
async function releaseEmbedded(embedded: EmbeddedDatabase, logger: ReturnType<typeof createLogger>): Promise<void> {
  if (await embedded.release()) logger.info('embedded PostgreSQL stopped');
  else logger.info('embedded PostgreSQL left running: other processes are connected to it');
}

/** The operator's banner (the admin key, when generated, is printed here once, never logged). */
function printReady(config: Config, port: number): void {
  const base = `http://localhost:${port}`;
  if (config.adminApiKeyGenerated) {
    process.stdout.write(
      `\n  Tessera is ready.\n  GraphiQL:      ${base}/graphql#admin-key=${encodeURIComponent(config.adminApiKey)}\n` +
        `  Admin API key: ${config.adminApiKey}  (generated; kept in ${config.embedded.dir}/../admin-api-key; set ADMIN_API_KEY to choose one)\n\n`,
    );
  } else {
    process.stdout.write(`\n  Tessera is ready. GraphiQL: ${base}/graphql (header Authorization: Bearer <ADMIN_API_KEY>)\n\n`);
  }
}

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger({ env: config.env, level: process.env.LOG_LEVEL });
  const started = Date.now();
  const isWorker = cluster.isWorker;
  let embedded: EmbeddedDatabase | undefined;
  let url = config.databaseUrl;
  if (!url) {
    ({ url, embedded } = await embeddedDatabaseUrl(config));
    logger.info(
      { dir: config.embedded.dir, port: config.embedded.port },
      embedded.owned ? 'embedded PostgreSQL started (DATABASE_URL is unset)' : 'joined the embedded PostgreSQL another Tessera process started here',
    );
  }
  // Under the migration lock: instances starting together apply them once, and none serves first.
  const applied = await migrate(url);
  if (applied.length > 0) logger.info({ applied }, 'migrations applied');
  if (config.webConcurrency > 1 && cluster.isPrimary) {
    await runPrimary(config, logger, url, embedded);
    return;
  }

  // A dropped connection is expected (restarts, terminated backends): one line, not the client object.
  const onDatabaseError = (err: Error & { code?: string }) => logger.warn({ code: err.code, error: err.message }, 'database connection error');
  const db = createDatabase({ ...config.database, url, onError: onDatabaseError });
  const redis = config.redisUrl ? connectRedis(config.redisUrl, logger) : undefined;
  const server = await createServer({ config, db, logger, redis, clusterWorker: isWorker });
  const { port } = await server.listen(config.port, config.host);
  logger.info({ port, ms: Date.now() - started }, 'Tessera is serving POST /graphql');

  if (!isWorker) printReady(config, port);

  let stopping = false;
  const shutdown = async (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down: no new requests, finishing the ones in flight');
    const deadline = setTimeout(() => {
      logger.error('shutdown took too long; exiting');
      process.exit(1);
    }, config.shutdownGraceMs + 5_000);
    deadline.unref();
    try {
      await server.stop();
      logger.info('HTTP server stopped');
      await db.close();
      logger.info('database pool closed');
      if (redis) await redis.quit().catch(() => redis.disconnect());
      if (embedded) await releaseEmbedded(embedded, logger);
      logger.info('stopped');
      process.exit(0);
    } catch (err) {
      logger.error({ err }, 'shutdown failed');
      process.exit(1);
    }
  };
  process.on('SIGTERM', (signal) => void shutdown(signal));
  process.on('SIGINT', (signal) => void shutdown(signal));
}

main().catch((error: unknown) => {
  if (error instanceof ConfigError) {
    process.stderr.write(`${error.message}\n`);
  } else {
    process.stderr.write(`Tessera failed to start: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  }
  process.exit(1);
});
