// Probes and metrics:
//   GET /healthz   200 while the process serves and can serve claims (database answers, migrations applied)
//   GET /readyz    the same, and 503 as soon as a shutdown begins (take the instance out of rotation)
//   GET /metrics   Prometheus metrics
import type express from 'express';
import type { Database } from './db/client';
import { pendingMigrations } from './db/migrate';
import type { Logger } from './logger';
import type { Metrics } from './metrics';

export function healthRoutes(app: express.Express, options: { db: Database; metrics: Metrics; logger: Logger; draining(): boolean }): void {
  const { db, metrics, logger } = options;
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
  app.get('/metrics', async (_req, res) => {
    res.type(metrics.registry.contentType).send(await metrics.registry.metrics());
  });
}
