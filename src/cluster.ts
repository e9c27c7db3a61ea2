// WEB_CONCURRENCY > 1: the primary process only prepares the database (embedded PostgreSQL,
// migrations, done by main.ts) and keeps that many workers serving on the shared port, each a whole
// Tessera with its own pool. A worker that dies is replaced; SIGTERM/SIGINT stop every worker
// gracefully, then the database. Without Redis, the primary also keeps the rate-limit buckets and
// relays live signals, so the cluster behaves as one instance; with REDIS_URL, Redis does both for
// every instance.
import cluster from 'node:cluster';
import { RateLimiterClusterMaster } from 'rate-limiter-flexible';
import type { Config } from './config';
import { relayLiveUpdatesBetweenWorkers } from './live';
import { drainStdout, type Logger } from './logger';
import { armShutdownWatchdog } from './watchdog';

export async function runPrimary(
  config: Config,
  logger: Logger,
  url: string,
  pooler: 'pgbouncer' | 'none',
  hooks: { deadlineMarginMs: number; watchdogMarginMs: number; ready(port: number): void; stopped(): Promise<void> },
): Promise<void> {
  let stopping = false;
  if (!config.redisUrl) {
    new RateLimiterClusterMaster(); // answers the workers' RateLimiterCluster (a singleton, kept by the library)
    relayLiveUpdatesBetweenWorkers();
  }
  // The workers need not find out again what DATABASE_URL points at (db/pooler.ts).
  const env = { DATABASE_URL: url, DATABASE_POOLER: pooler, ADMIN_API_KEY: config.adminApiKey, TESSERA_CLUSTER_WORKER: '1' };
  const fork = () => cluster.fork(env);
  const served = new Set<number>();
  const workers = () => Object.values(cluster.workers ?? {}).filter((worker) => worker !== undefined);
  let finishing = false;
  const finish = async () => {
    if (finishing) return;
    finishing = true;
    await hooks.stopped();
    logger.info('stopped');
    await drainStdout();
    process.exit(process.exitCode ?? 0);
  };
  cluster.on('listening', (worker) => served.add(worker.id));
  cluster.on('exit', (worker, code, signal) => {
    if (stopping) {
      if (workers().length === 0) void finish();
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
  cluster.once('listening', (_worker, address) => hooks.ready(address.port));
  for (let i = 0; i < config.webConcurrency; i += 1) fork();
  logger.info({ workers: config.webConcurrency }, 'cluster started');

  function shutdown(signal: NodeJS.Signals): void {
    if (stopping) return;
    stopping = true;
    logger.info({ signal, graceMs: config.shutdownGraceMs }, 'shutting down the workers');
    armShutdownWatchdog(config.shutdownGraceMs + hooks.watchdogMarginMs);
    for (const worker of workers()) worker.process.kill('SIGTERM');
    if (workers().length === 0) void finish();
    // Workers bound their own shutdown; whatever is still there at the deadline is killed, and the
    // primary stops (releasing the embedded database) without waiting for more.
    setTimeout(() => {
      const left = workers();
      if (left.length > 0) logger.error({ pids: left.map((w) => w.process.pid) }, 'workers still running after the grace period; killing them');
      for (const worker of left) worker.process.kill('SIGKILL');
      process.exitCode = left.length > 0 ? 1 : (process.exitCode ?? 0);
      void finish();
    }, config.shutdownGraceMs + hooks.deadlineMarginMs).unref();
  }
  process.on('SIGTERM', shutdown);
  process.on('SIGINT', shutdown);
}
