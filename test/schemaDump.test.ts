// prisma/schema.sql is generated (npm run db:dump): the whole schema a freshly migrated database
// has, prisma/migrations/ then prisma/functions/, as src/db/schemaDump.ts prints it from the
// catalogs. This fails when the committed file and a fresh database disagree — a migration or a
// function file changed without regenerating it — and says what to run.
import { readFileSync } from 'node:fs';
import { migrate } from '../src/db/migrate';
import { dumpSchema, SCHEMA_FILE, schemaFileText } from '../src/db/schemaDump';
import { withClient } from './helpers/env';
import { createTestDatabase } from './helpers/testServer';

let db: { url: string; drop(): Promise<void> };
beforeAll(async () => {
  db = await createTestDatabase();
  // From nothing, not from the template: the file is about what the migrator builds.
  await withClient(db.url, async (c) => {
    await c.query('DROP SCHEMA public CASCADE');
    await c.query('CREATE SCHEMA public');
  });
  await migrate(db.url);
});
afterAll(() => db.drop());

/** The first line where the two texts differ, with a line before and after, for the message. */
function firstDifference(committed: string, actual: string): string {
  const a = committed.split('\n');
  const b = actual.split('\n');
  let i = 0;
  while (i < Math.max(a.length, b.length) && a[i] === b[i]) i += 1;
  const show = (lines: string[]) => lines.slice(Math.max(0, i - 1), i + 2).map((line) => `    ${line}`).join('\n');
  return `line ${i + 1}:\n  prisma/schema.sql has\n${show(a)}\n  the migrated database has\n${show(b)}`;
}

test('prisma/schema.sql is the schema of a freshly migrated database', async () => {
  const actual = schemaFileText(await withClient(db.url, (c) => dumpSchema(c)));
  const committed = readFileSync(SCHEMA_FILE, 'utf8');
  if (actual !== committed) {
    throw new Error(`prisma/schema.sql is out of date: run npm run db:dump and commit it.\nFirst difference at ${firstDifference(committed, actual)}`);
  }
});

test('the dump is the same from one run to the next, and does not depend on the session search_path', async () => {
  await withClient(db.url, async (c) => {
    const first = await dumpSchema(c);
    await c.query('SET search_path = pg_catalog');
    expect(await dumpSchema(c)).toBe(first);
  });
});

test('an object the dump does not print is refused, not silently left out', async () => {
  const scratch = await createTestDatabase();
  try {
    await withClient(scratch.url, async (c) => {
      await c.query('CREATE VIEW open_campaigns AS SELECT id FROM campaigns WHERE status = \'OPEN\'');
      await expect(dumpSchema(c)).rejects.toThrow(/does not print relation open_campaigns of kind v: extend it/);
    });
  } finally {
    await scratch.drop();
  }
});
