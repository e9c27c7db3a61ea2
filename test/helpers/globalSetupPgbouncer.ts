// Once per `npm run test:pgbouncer`: the test server and its migrated template as for `npm test`
// (globalSetup.ts), and a PgBouncer in transaction mode in front of that server, its URL exported in
// TESSERA_TEST_POOLER_URL: test servers (testServer.ts) and the chaos scenarios' Tessera processes
// (chaos/harness.ts) then reach their databases through it. Without pgbouncer nothing starts:
// jest.pgbouncer.config.js then runs only test/pooler/pgbouncer.pooler.ts, which reports the skip.
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { SERVER_ENV } from './env';
import globalSetup from './globalSetup';
import { pgbouncerPath, POOLER_ENV, startPgBouncerFor, type PgBouncer } from './pgbouncer';

export default async function globalSetupPgbouncer(): Promise<void> {
  if (!pgbouncerPath()) {
    mkdirSync(path.resolve(__dirname, '../../test-results'), { recursive: true });
    return;
  }
  await globalSetup();
  const bouncer = await startPgBouncerFor(process.env[SERVER_ENV]!);
  (globalThis as { __tesseraPgBouncer?: PgBouncer }).__tesseraPgBouncer = bouncer;
  process.env[POOLER_ENV] = bouncer.url('postgres');
}
