// Probes and metrics:
//   GET /healthz   200 while the process serves and can serve claims (database answers, migrations applied)
//   GET /readyz    the same, and 503 as soon as a shutdown begins (take the instance out of rotation)
//   GET /metrics   Prometheus metrics; with METRICS_TOKEN set, only for `Authorization: Bearer <token>`
import { createHash, timingSafeEqual } from 'node:crypto';
import type express from 'express';
import { PROBE_TIMEOUT_MS, type Database } from './db/client';
import { pendingMigrations } from './db/migrate';
import type { Logger } from './logger';
import type { Metrics } from './metrics';
import type { Reachability } from './reachability';

const sha256 = (text: string): Buffer => createHash('sha256').update(text, 'utf8').digest();

/**
 * Whether `authorization` is `Bearer <token>`. Compared in constant time: both sides are hashed
 * first, so neither the token's characters nor its length show in the time taken.
 */
export function bearerMatches(authorization: string | undefined, token: string): boolean {
  const presented = /^Bearer +(\S+) *$/i.exec(authorization ?? '')?.[1] ?? '';
  return timingSafeEqual(sha256(presented), sha256(token));
}

export function healthRoutes(
  app: express.Express,
  options: { db: Database; metrics: Metrics; logger: Logger; reachability: Reachability; draining(): boolean; metricsToken?: string; production?: boolean },
): void {
  const { db, metrics, logger } = options;
  // Open by default, production too: Prometheus scrapes inside a private network without
  // credentials as a rule, and the figures carry no id, key, name or holder (labels: outcome, code,
  // operation, pool state) — but they do tell claim volumes to whoever reaches the port, so a
  // production server without METRICS_TOKEN says so once at start-up.
  if (options.production && options.metricsToken === undefined) {
    logger.warn({ route: '/metrics' }, '/metrics is open to anyone who reaches this port: set METRICS_TOKEN, or keep the port private');
  }
  // What claims see: a server the pool gave up on because it stopped answering (db/stallWatch.ts)
  // is unavailable until something answers again, and a check that gets no answer within the
  // probe's budget says so rather than wait as long as the caller does.
  const databaseReady = async (): Promise<{ ready: boolean; body: Record<string, unknown> }> => {
    if (db.unresponsive()) return { ready: false, body: { status: 'unavailable', database: 'not answering' } };
    let timer: NodeJS.Timeout | undefined;
    try {
      const answer = pendingMigrations(async (sql) => (await db.pool.query(sql)).rows);
      const deadline = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), PROBE_TIMEOUT_MS)));
      const pending = await Promise.race([answer, deadline]);
      if (pending === 'late') return { ready: false, body: { status: 'unavailable', database: 'not answering' } };
      options.reachability.answered();
      return pending.length > 0 ? { ready: false, body: { status: 'migrating', pending } } : { ready: true, body: { status: 'ok' } };
    } catch (error) {
      if (!options.reachability.failed(error, 'health check')) logger.warn({ err: error }, 'health check failed');
      return { ready: false, body: { status: 'unavailable', database: 'unreachable' } };
    } finally {
      clearTimeout(timer);
    }
  };
  app.get('/healthz', async (_req, res) => {
    const { ready, body } = await databaseReady();
    res.status(ready ? 200 : 503).json(body);
  });
  app.get('/readyz', async (_req, res) => {
    if (options.draining()) {
      res.status(503).json({ status: 'draining' });
      return;
    }
    const { ready, body } = await databaseReady();
    res.status(ready ? 200 : 503).json(body);
  });
  app.get('/metrics', async (req, res) => {
    if (options.metricsToken !== undefined && !bearerMatches(req.get('authorization'), options.metricsToken)) {
      res.status(401).set('WWW-Authenticate', 'Bearer realm="metrics"').type('text').send('/metrics requires Authorization: Bearer <METRICS_TOKEN>.\n');
      return;
    }
    res.type(metrics.registry.contentType).send(await metrics.registry.metrics());
  });
}
