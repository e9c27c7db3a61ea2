// After `npm run test:pgbouncer`: PgBouncer's log kept as test-results/pgbouncer.log (refused
// start-up parameters, server errors), PgBouncer stopped, then the test databases dropped as after `npm test`.
import { copyFileSync } from 'node:fs';
import path from 'node:path';
import globalTeardown from './globalTeardown';
import type { PgBouncer } from './pgbouncer';

export default async function globalTeardownPgbouncer(): Promise<void> {
  const bouncer = (globalThis as { __tesseraPgBouncer?: PgBouncer }).__tesseraPgBouncer;
  if (bouncer) {
    try {
      copyFileSync(bouncer.logfile, path.resolve(__dirname, '../../test-results/pgbouncer.log'));
    } catch {
      // no log written
    }
    await bouncer.stop();
  }
  await globalTeardown();
}
