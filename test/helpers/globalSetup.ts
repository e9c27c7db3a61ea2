// Once per `npm test`: find or start PostgreSQL, build a migrated template database that every
// test file clones (CREATE DATABASE … TEMPLATE, as graphile-worker does): fast and isolated; and
// give the run a temporary folder of its own (runTempDir.ts).
import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { startEmbeddedPostgres } from '../../src/db/embedded';
import { migrate } from '../../src/db/migrate';
import { databaseUrl, RUN_ENV, SERVER_ENV, TEMPLATE_ENV, withClient } from './env';
import { enterRunTempDir } from './runTempDir';

export default async function globalSetup(): Promise<void> {
  // `npm test` writes Jest's JSON results here (read by .ci/run); Jest does not create the folder.
  mkdirSync(path.resolve(__dirname, '../../test-results'), { recursive: true });
  let serverUrl = process.env.DATABASE_URL;
  if (!serverUrl) {
    // Two `npm test` of one checkout at once share this server: the second joins it (proven to be
    // this folder's) and each run's databases carry its own name; globalTeardown releases it, and
    // only the last run out stops it. A server of another folder on the port is refused.
    const embedded = await startEmbeddedPostgres({
      dir: path.resolve(__dirname, '../../.tessera/test-pgdata'),
      port: Number(process.env.TESSERA_TEST_EMBEDDED_PORT ?? 54339),
      portSetting: 'TESSERA_TEST_EMBEDDED_PORT',
    });
    (globalThis as { __tesseraEmbedded?: typeof embedded }).__tesseraEmbedded = embedded;
    serverUrl = embedded.url;
  }
  const run = `${Date.now().toString(36)}${randomBytes(3).toString('hex')}`;
  const template = `tessera_test_${run}_template`;
  await withClient(databaseUrl(serverUrl, 'postgres'), (c) => c.query(`CREATE DATABASE "${template}"`));
  await migrate(databaseUrl(serverUrl, template));
  process.env[SERVER_ENV] = serverUrl;
  process.env[TEMPLATE_ENV] = template;
  process.env[RUN_ENV] = run;
  enterRunTempDir(run);
}
