import { CITUS_NODES_ENV, dropCitusDatabase } from './citus';
import { RUN_ENV, withClient } from './env';

export default async function globalTeardownCitus(): Promise<void> {
  const nodes = process.env[CITUS_NODES_ENV];
  const run = process.env[RUN_ENV];
  if (!nodes || !run) return;
  const all = JSON.parse(nodes) as string[];
  const names = await withClient(all[0]!, async (c) => {
    const { rows } = await c.query<{ datname: string }>('SELECT datname FROM pg_database WHERE datname LIKE $1', [`tessera_test_${run}_%`]);
    return rows.map((row) => row.datname);
  });
  for (const name of names) await dropCitusDatabase(all, name);
}
