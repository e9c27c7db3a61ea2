// `npm run db:dump`: regenerates prisma/schema.sql — the schema of a database freshly built by the
// migrator (prisma/migrations/, then prisma/functions/), as src/db/schemaDump.ts prints it. Builds
// it in a scratch database on DATABASE_URL's server (created and dropped here), or without
// DATABASE_URL on the embedded PostgreSQL (EMBEDDED_PG_DIR, EMBEDDED_PG_PORT: the one npm start uses).
//
// `npm run db:dump -- --print <url>` prints the schema of an existing database instead (to compare
// a deployed database with prisma/schema.sql); it changes nothing there.
import 'dotenv/config';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { Client } from 'pg';
import { startEmbeddedPostgres, type EmbeddedDatabase } from '../src/db/embedded';
import { migrate } from '../src/db/migrate';
import { dumpSchema, SCHEMA_FILE, schemaFileText } from '../src/db/schemaDump';

async function withClient<T>(url: string, work: (client: Client) => Promise<T>): Promise<T> {
  const client = new Client({ connectionString: url });
  client.on('error', () => undefined);
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end().catch(() => undefined);
  }
}

function withDatabase(serverUrl: string, name: string): string {
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

async function regenerate(): Promise<void> {
  let embedded: EmbeddedDatabase | undefined;
  let serverUrl = process.env.DATABASE_URL;
  if (!serverUrl) {
    embedded = await startEmbeddedPostgres({
      dir: path.resolve(process.env.EMBEDDED_PG_DIR ?? '.tessera/pgdata'),
      port: Number(process.env.EMBEDDED_PG_PORT ?? 54329),
    });
    serverUrl = embedded.url;
  }
  const name = `tessera_schema_dump_${randomBytes(4).toString('hex')}`;
  const admin = withDatabase(serverUrl, 'postgres');
  try {
    await withClient(admin, (c) => c.query(`CREATE DATABASE "${name}" TEMPLATE template0`));
    try {
      await migrate(withDatabase(serverUrl, name));
      const text = await withClient(withDatabase(serverUrl, name), (c) => dumpSchema(c));
      writeFileSync(SCHEMA_FILE, schemaFileText(text));
      process.stdout.write(`wrote ${path.relative(process.cwd(), SCHEMA_FILE)}\n`);
    } finally {
      await withClient(admin, (c) => c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`));
    }
  } finally {
    if (embedded) await embedded.release();
  }
}

async function main(): Promise<void> {
  const at = process.argv.indexOf('--print');
  if (at >= 0) {
    const url = process.argv[at + 1];
    if (!url) throw new Error('--print needs a database URL');
    process.stdout.write(await withClient(url, (c) => dumpSchema(c)));
    return;
  }
  await regenerate();
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
