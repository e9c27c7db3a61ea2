// Probes and metrics:
//   GET /healthz   200 while the process serves and can serve claims (database answers, migrations applied)
//   GET /readyz    the same, and 503 as soon as a shutdown begins (take the instance out of rotation)
//   GET /metrics   Prometheus metrics; with METRICS_TOKEN set, only for `Authorization: Bearer <token>`
import { createHash, timingSafeEqual } from 'node:crypto';
import type express from 'express';
import type { Database } from './db/client';
import { pendingMigrations } from './db/migrate';
import type { Logger } from './logger';
import type { Metrics } from './metrics';

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
  options: { db: Database; metrics: Metrics; logger: Logger; draining(): boolean; metricsToken?: string; production?: boolean },
): void {
  const { db, metrics, logger } = options;
  // Open by default, production too: Prometheus scrapes inside a private network without
  // credentials as a rule, and the figures carry no id, key, name or holder (labels: outcome, code,
  // operation, pool state) — but they do tell claim volumes to whoever reaches the port, so a
  // production server without METRICS_TOKEN says so once at start-up (docs/SECURITY.md, "Metrics").
  if (options.production && options.metricsToken === undefined) {
    logger.warn({ route: '/metrics' }, '/metrics is open to anyone who reaches this port: set METRICS_TOKEN, or keep the port private');
  }
  const databaseReady = async (): Promise<{ ready: boolean; body: Record<string, unknown> }> => {
    try {
      const pending = await pendingMigrations(async (sql) => (await db.pool.query(sql)).rows);
      return pending.length > 0 ? { ready: false, body: { status: 'migrating', pending } } : { ready: true, body: { status: 'ok' } };
    } catch (error) {
      logger.warn({ err: error }, 'health check: database unreachable');
      return { ready: false, body: { status: 'unavailable', database: 'unreachable' } };
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
