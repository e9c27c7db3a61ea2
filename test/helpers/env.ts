// Where the test databases live. With DATABASE_URL set, the tests create and drop their own
// databases on that server; without it, on an embedded PostgreSQL of their own (.tessera/test-pgdata).
import { Client } from 'pg';

export const TEMPLATE_ENV = 'TESSERA_TEST_TEMPLATE_DB';
export const SERVER_ENV = 'TESSERA_TEST_SERVER_URL';
export const RUN_ENV = 'TESSERA_TEST_RUN';

/** The URL of `database` on the test server (same credentials as `serverUrl`). */
export function databaseUrl(serverUrl: string, database: string): string {
  const url = new URL(serverUrl);
  url.pathname = `/${database}`;
  return url.toString();
}

export async function withClient<T>(url: string, work: (client: Client) => Promise<T>): Promise<T> {
  const client = new Client({ connectionString: url });
  client.on('error', () => undefined);
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end().catch(() => undefined);
  }
}
