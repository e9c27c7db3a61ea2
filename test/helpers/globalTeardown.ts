// Once per `npm test`, after the last test file: the run's databases dropped, its temporary folder
// deleted (runTempDir.ts: what a test left there is listed), and the test server released — and,
// when root placed its data under /var/lib/tessera (src/db/embeddedPlacement.ts), that data deleted
// by the last run out: it would outlive the checkout there.
import { databaseUrl, RUN_ENV, SERVER_ENV, withClient } from './env';
import { leaveRunTempDir } from './runTempDir';

export default async function globalTeardown(): Promise<void> {
  const serverUrl = process.env[SERVER_ENV];
  const run = process.env[RUN_ENV];
  if (serverUrl && run) {
    await withClient(databaseUrl(serverUrl, 'postgres'), async (c) => {
      const { rows } = await c.query<{ datname: string }>('SELECT datname FROM pg_database WHERE datname LIKE $1', [`tessera_test_${run}_%`]);
      for (const { datname } of rows) await c.query(`DROP DATABASE IF EXISTS "${datname}" WITH (FORCE)`);
    });
  }
  const left = leaveRunTempDir();
  if (left.length > 0) {
    console.warn(`tests left ${left.length} entries in the temporary folder, deleted with the run's (a test removes what it makes: test/helpers/tempDirs.ts): ${left.sort().join(', ')}`);
  }
  // Released, not stopped: another `npm test` of this checkout may be using it (globalSetup.ts).
  const embedded = (globalThis as { __tesseraEmbedded?: { release(options: { removeRelocated: boolean }): Promise<boolean> } }).__tesseraEmbedded;
  if (embedded) await embedded.release({ removeRelocated: true });
}
