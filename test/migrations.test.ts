// Drift between prisma/schema.prisma (what the Prisma client believes) and the database the SQL
// migrations build (what PostgreSQL enforces). Prisma's own `migrate diff` needs an engine binary
// that cannot be downloaded here, so the comparison is done against information_schema directly,
// using Prisma's DMMF from its WASM schema parser.
import { createHash } from 'node:crypto';
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { get_dmmf } from '@prisma/prisma-schema-wasm';
import { migrate, MIGRATIONS_DIR, readMigrations } from '../src/db/migrate';
import { withClient } from './helpers/env';
import { createTestDatabase } from './helpers/testServer';

interface DmmfField { name: string; dbName?: string | null; kind: string; type: string; isRequired: boolean; nativeType?: [string, string[]] | null }
interface DmmfModel { name: string; dbName?: string | null; fields: DmmfField[] }
interface DmmfIndex { model: string; type: 'id' | 'unique' | 'normal' | 'fulltext'; fields: { name: string }[] }
interface Dmmf { datamodel: { models: DmmfModel[]; enums: { name: string; dbName?: string | null; values: { name: string }[] }[]; indexes: DmmfIndex[] } }

const dmmf: Dmmf = JSON.parse(
  get_dmmf(JSON.stringify({ prismaSchema: [['schema.prisma', readFileSync(path.resolve(__dirname, '../prisma/schema.prisma'), 'utf8')]] })),
);
const enumDbName = new Map(dmmf.datamodel.enums.map((e) => [e.name, e.dbName ?? e.name]));

/** information_schema's data_type (or udt_name for enums) for a Prisma field. */
function expectedType(field: DmmfField): string {
  if (field.kind === 'enum') return `enum:${enumDbName.get(field.type)}`;
  const native = field.nativeType?.[0];
  if (native === 'Uuid') return 'uuid';
  if (native === 'SmallInt') return 'smallint';
  if (native === 'JsonB' || field.type === 'Json') return 'jsonb';
  switch (field.type) {
    case 'String': return 'text';
    case 'Int': return 'integer';
    case 'BigInt': return 'bigint';
    case 'Boolean': return 'boolean';
    case 'DateTime': return native === 'Timestamp' ? 'timestamp without time zone' : 'timestamp with time zone';
    default: return `unmapped:${field.type}`;
  }
}

let url: string;
let drop: () => Promise<void>;
beforeAll(async () => {
  ({ url, drop } = await createTestDatabase());
});
afterAll(() => drop());

test('every table and column of the Prisma schema exists in the migrated database with the same type and nullability, and no other', async () => {
  await withClient(url, async (c) => {
    for (const model of dmmf.datamodel.models) {
      const table = model.dbName ?? model.name;
      const { rows } = await c.query(
        `SELECT column_name, is_nullable, CASE WHEN data_type = 'USER-DEFINED' THEN 'enum:' || udt_name ELSE data_type END AS type
           FROM information_schema.columns WHERE table_schema = 'public' AND table_name = $1`,
        [table],
      );
      const actual = Object.fromEntries(rows.map((r) => [r.column_name, `${r.type} ${r.is_nullable === 'NO' ? 'NOT NULL' : 'NULL'}`]));
      const expected = Object.fromEntries(
        model.fields
          .filter((f) => f.kind === 'scalar' || f.kind === 'enum')
          .map((f) => [f.dbName ?? f.name, `${expectedType(f)} ${f.isRequired ? 'NOT NULL' : 'NULL'}`]),
      );
      expect({ table, columns: actual }).toEqual({ table, columns: expected });
    }
  });
});

test('every enum of the Prisma schema has the same values in the database', async () => {
  await withClient(url, async (c) => {
    for (const e of dmmf.datamodel.enums) {
      const { rows } = await c.query(
        `SELECT e.enumlabel FROM pg_enum e JOIN pg_type t ON t.oid = e.enumtypid WHERE t.typname = $1 ORDER BY e.enumsortorder`,
        [e.dbName ?? e.name],
      );
      expect(rows.map((r) => r.enumlabel)).toEqual(e.values.map((v) => v.name));
    }
  });
});

test('every primary key, unique constraint and index of the Prisma schema exists in the database', async () => {
  await withClient(url, async (c) => {
    const { rows } = await c.query(`
      SELECT t.relname AS table, ix.indisunique AS unique, ix.indisprimary AS primary, ix.indpred IS NOT NULL AS partial,
             array_agg(a.attname::text ORDER BY k.ord) AS columns
        FROM pg_index ix
        JOIN pg_class t ON t.oid = ix.indrelid
        JOIN pg_namespace n ON n.oid = t.relnamespace AND n.nspname = 'public'
        CROSS JOIN LATERAL unnest(ix.indkey) WITH ORDINALITY AS k(attnum, ord)
        JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum
       GROUP BY t.relname, ix.indexrelid, ix.indisunique, ix.indisprimary, ix.indpred`);
    const present = new Set(rows.filter((r) => !r.partial).map((r) => `${r.table}(${r.columns.join(',')}) ${r.primary ? 'id' : r.unique ? 'unique' : 'normal'}`));
    for (const index of dmmf.datamodel.indexes) {
      const model = dmmf.datamodel.models.find((m) => m.name === index.model)!;
      const column = (name: string) => model.fields.find((f) => f.name === name)!.dbName ?? name;
      const key = `${model.dbName ?? model.name}(${index.fields.map((f) => column(f.name)).join(',')}) ${index.type}`;
      expect(present).toContain(key);
    }
  });
});

test('migrations are recorded in _prisma_migrations with the checksum Prisma computes, and a second run applies nothing', async () => {
  await withClient(url, async (c) => {
    const { rows } = await c.query('SELECT migration_name, checksum, finished_at, applied_steps_count FROM "_prisma_migrations" ORDER BY migration_name');
    const onDisk = readMigrations();
    expect(rows.map((r) => r.migration_name)).toEqual(onDisk.map((m) => m.name));
    for (const [i, m] of onDisk.entries()) {
      const sha = createHash('sha256').update(readFileSync(path.join(MIGRATIONS_DIR, m.name, 'migration.sql'))).digest('hex');
      expect(rows[i]).toMatchObject({ checksum: sha, applied_steps_count: 1 });
      expect(rows[i].finished_at).toBeInstanceOf(Date);
    }
  });
  await expect(migrate(url)).resolves.toEqual([]);
});

test('a migration edited after it was applied is refused, not silently skipped', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'tessera-migrations-'));
  cpSync(MIGRATIONS_DIR, dir, { recursive: true });
  const first = readMigrations(dir)[0]!;
  writeFileSync(path.join(dir, first.name, 'migration.sql'), `${first.sql}\n-- edited\n`);
  await expect(migrate(url, dir)).rejects.toThrow(/was changed after it was applied/);
});

test('several instances migrating one fresh database at once apply each migration exactly once', async () => {
  const fresh = await createTestDatabase();
  try {
    // The template is already migrated: start from an empty database instead.
    await withClient(fresh.url, async (c) => {
      await c.query('DROP SCHEMA public CASCADE');
      await c.query('CREATE SCHEMA public');
    });
    const results = await Promise.all([migrate(fresh.url), migrate(fresh.url), migrate(fresh.url)]);
    expect(results.flat()).toEqual(readMigrations().map((m) => m.name));
    await withClient(fresh.url, async (c) => {
      const { rows } = await c.query('SELECT count(*)::int AS n FROM "_prisma_migrations"');
      expect(rows[0].n).toBe(readMigrations().length);
    });
  } finally {
    await fresh.drop();
  }
});
