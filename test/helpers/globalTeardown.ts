import { databaseUrl, RUN_ENV, SERVER_ENV, withClient } from './env';

export default async function globalTeardown(): Promise<void> {
  const serverUrl = process.env[SERVER_ENV];
  const run = process.env[RUN_ENV];
  if (serverUrl && run) {
    await withClient(databaseUrl(serverUrl, 'postgres'), async (c) => {
      const { rows } = await c.query<{ datname: string }>('SELECT datname FROM pg_database WHERE datname LIKE $1', [`tessera_test_${run}_%`]);
      for (const { datname } of rows) await c.query(`DROP DATABASE IF EXISTS "${datname}" WITH (FORCE)`);
    });
  }
  // Released, not stopped: another `npm test` of this checkout may be using it (globalSetup.ts).
  const embedded = (globalThis as { __tesseraEmbedded?: { release(): Promise<boolean> } }).__tesseraEmbedded;
  if (embedded) await embedded.release();
}
