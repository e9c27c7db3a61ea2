// The migrator (src/db/migrate.ts): migrations recorded as Prisma records them, function files
// applied once per change, the upgrade of a database built by the four migrations the baseline
// replaced — and drift between prisma/schema.prisma (what the Prisma client believes) and the
// database the SQL migrations build (what PostgreSQL enforces). Prisma's own `migrate diff` needs an
// engine binary that cannot be downloaded here, so that comparison is done against
// information_schema directly, using Prisma's DMMF from its WASM schema parser.
import { createHash } from 'node:crypto';
import { cpSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { get_dmmf } from '@prisma/prisma-schema-wasm';
import type { Client } from 'pg';
import {
  BASELINE,
  FUNCTIONS_DIR,
  functionLabel,
  migrate,
  MIGRATIONS_DIR,
  pendingMigrations,
  readFunctions,
  readMigrations,
  SQUASHED_INTO_BASELINE,
  tesseraFunctions,
} from '../src/db/migrate';
import { dumpSchema, SCHEMA_FILE, schemaFileText } from '../src/db/schemaDump';
import { withClient } from './helpers/env';
import { tempDir } from './helpers/tempDirs';
import { createTestDatabase, startTestServer } from './helpers/testServer';

interface DmmfField { name: string; dbName?: string | null; kind: string; type: string; isRequired: boolean; isList: boolean; nativeType?: [string, string[]] | null }
interface DmmfModel { name: string; dbName?: string | null; fields: DmmfField[] }
interface DmmfIndex { model: string; type: 'id' | 'unique' | 'normal' | 'fulltext'; fields: { name: string }[] }
interface Dmmf { datamodel: { models: DmmfModel[]; enums: { name: string; dbName?: string | null; values: { name: string }[] }[]; indexes: DmmfIndex[] } }

const dmmf: Dmmf = JSON.parse(
  get_dmmf(JSON.stringify({ prismaSchema: [['schema.prisma', readFileSync(path.resolve(__dirname, '../prisma/schema.prisma'), 'utf8')]] })),
);
const enumDbName = new Map(dmmf.datamodel.enums.map((e) => [e.name, e.dbName ?? e.name]));

/** information_schema's data_type (or udt_name for enums) for a Prisma field. */
function expectedType(field: DmmfField): string {
  if (field.isList) return 'ARRAY'; // information_schema names every array type so
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

const everything = () => [...readMigrations().map((m) => m.name), ...tesseraFunctions().map((f) => functionLabel(f.name))];
const pending = (c: Client) => pendingMigrations(async (sql) => (await c.query(sql)).rows);
/** A database of its own with nothing in it (the template is already migrated). */
async function emptyDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const fresh = await createTestDatabase();
  await withClient(fresh.url, async (c) => {
    await c.query('DROP SCHEMA public CASCADE');
    await c.query('CREATE SCHEMA public');
  });
  return fresh;
}
/** A copy of prisma/functions/ to edit. */
function functionsCopy(): string {
  const dir = tempDir('tessera-functions-');
  cpSync(FUNCTIONS_DIR, dir, { recursive: true });
  return dir;
}
const procXmin = async (c: Client, name: string) =>
  (await c.query<{ xmin: string }>('SELECT xmin::text FROM pg_proc WHERE proname = $1', [name])).rows.map((r) => r.xmin);

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
    await expect(pending(c)).resolves.toEqual([]);
  });
  await expect(migrate(url)).resolves.toEqual([]);
});

test('every function file is recorded with its checksum; a restart with unchanged files replaces no function', async () => {
  await withClient(url, async (c) => {
    const { rows } = await c.query('SELECT name, checksum FROM "_tessera_functions" ORDER BY name');
    const files = readFunctions().map((f) => ({ name: f.name, checksum: createHash('sha256').update(readFileSync(path.join(FUNCTIONS_DIR, `${f.name}.sql`))).digest('hex') }));
    expect(rows).toEqual(files.sort((a, b) => (a.name < b.name ? -1 : 1)));
    const before = await procXmin(c, 'tessera_claim_gate');
    await expect(migrate(url)).resolves.toEqual([]);
    expect(await procXmin(c, 'tessera_claim_gate')).toEqual(before); // not even rewritten with the same text
  });
});

test('the database code is in one place: every function of the schema has its file in prisma/functions/, every trigger sits in the file of its function, and no migration creates either', async () => {
  await withClient(url, async (c) => {
    const functions = await c.query<{ name: string }>(
      `SELECT p.proname AS name FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = 'public' ORDER BY 1`,
    );
    expect(functions.rows.map((r) => r.name)).toEqual(tesseraFunctions().map((f) => f.name).sort());
    const triggers = await c.query<{ trigger: string; function: string }>(
      `SELECT t.tgname AS trigger, p.proname AS function FROM pg_trigger t JOIN pg_proc p ON p.oid = t.tgfoid WHERE NOT t.tgisinternal ORDER BY 1`,
    );
    expect(triggers.rows.length).toBeGreaterThan(0);
    for (const { trigger, function: fn } of triggers.rows) {
      const file = readFileSync(path.join(FUNCTIONS_DIR, `${fn}.sql`), 'utf8');
      expect({ trigger, createdInItsFunctionsFile: file.includes(`CREATE TRIGGER "${trigger}"`) }).toEqual({ trigger, createdInItsFunctionsFile: true });
    }
  });
  for (const m of readMigrations()) {
    expect({ migration: m.name, creates: /CREATE\s+(OR\s+REPLACE\s+)?(FUNCTION|TRIGGER)\b/i.test(m.sql) }).toEqual({ migration: m.name, creates: false });
  }
});

test('a changed function file is applied once, alone; /healthz reports function files never applied', async () => {
  const db = await createTestDatabase();
  try {
    await withClient(db.url, async (c) => {
      // As if prisma/functions/tessera_claim_gate.sql had changed since it was applied.
      await c.query(`UPDATE "_tessera_functions" SET checksum = 'another version' WHERE name = 'tessera_claim_gate'`);
      // Another release's version (a rolling deploy): not this process's to wait for.
      await expect(pending(c)).resolves.toEqual([]);
      const others = await procXmin(c, 'tessera_expire_holds');
      await expect(migrate(db.url)).resolves.toEqual([functionLabel('tessera_claim_gate')]);
      expect(await procXmin(c, 'tessera_expire_holds')).toEqual(others);
      // A file never applied (a new one) is pending until it is.
      await c.query(`DELETE FROM "_tessera_functions" WHERE name = 'tessera_fold_counters'`);
      await expect(pending(c)).resolves.toEqual([functionLabel('tessera_fold_counters')]);
      await expect(migrate(db.url)).resolves.toEqual([functionLabel('tessera_fold_counters')]);
      await expect(pending(c)).resolves.toEqual([]);
      // Before the table of function checksums exists (the migrations done, the functions not yet):
      await c.query('DROP TABLE "_tessera_functions"');
      await expect(pending(c)).resolves.toEqual(tesseraFunctions().map((f) => functionLabel(f.name)));
    });
  } finally {
    await db.drop();
  }
});

test('/healthz answers 503, naming what is missing, until the function files are applied', async () => {
  const db = await createTestDatabase();
  const server = await startTestServer({ databaseUrl: db.url, config: { holdSweepIntervalMs: 0 } });
  try {
    const health = async () => {
      const res = await fetch(server.url.replace(/\/graphql$/, '/healthz'));
      return { status: res.status, body: await res.json() };
    };
    expect((await health()).status).toBe(200);
    await withClient(db.url, (c) => c.query('DROP TABLE "_tessera_functions"'));
    expect(await health()).toEqual({ status: 503, body: { status: 'migrating', pending: tesseraFunctions().map((f) => functionLabel(f.name)) } });
    await migrate(db.url);
    expect((await health()).status).toBe(200);
  } finally {
    await server.stop();
    await db.drop();
  }
});

test('the function files are applied in one transaction: one that fails leaves every function as it was', async () => {
  const db = await createTestDatabase();
  const dir = functionsCopy();
  try {
    const gate = path.join(dir, 'tessera_claim_gate.sql');
    writeFileSync(gate, readFileSync(gate, 'utf8').replace(`verdict := 'OK'; RETURN NEXT;`, `verdict := 'OK'; RETURN NEXT; -- changed`));
    expect(readFileSync(gate, 'utf8')).toContain('-- changed');
    writeFileSync(path.join(dir, 'tessera_zz_broken.sql'), 'CREATE OR REPLACE FUNCTION "tessera_zz_broken"() RETURNS integer LANGUAGE sql AS $$ SELECT nope $$;');
    await expect(migrate(db.url, MIGRATIONS_DIR, dir)).rejects.toThrow(/prisma\/functions\/tessera_zz_broken\.sql failed: column "nope" does not exist/);
    await withClient(db.url, async (c) => {
      const { rows } = await c.query(`SELECT prosrc FROM pg_proc WHERE proname = 'tessera_claim_gate'`);
      expect(rows[0].prosrc).not.toContain('-- changed');
      await expect(pending(c)).resolves.toEqual([]);
    });
  } finally {
    await db.drop();
  }
});

test('a function file that changes the arguments without dropping the old version is refused, not left as two overloads', async () => {
  const db = await createTestDatabase();
  const dir = functionsCopy();
  try {
    const file = path.join(dir, 'tessera_expire_holds.sql');
    writeFileSync(file, readFileSync(file, 'utf8').replace('"tessera_expire_holds"(p_batch INTEGER)', '"tessera_expire_holds"(p_batch INTEGER, p_campaigns INTEGER)'));
    await expect(migrate(db.url, MIGRATIONS_DIR, dir)).rejects.toThrow(/has 2 functions named tessera_expire_holds .*DROP FUNCTION IF EXISTS/);
    await withClient(db.url, async (c) => {
      const { rows } = await c.query(`SELECT count(*)::int AS n FROM pg_proc WHERE proname = 'tessera_expire_holds'`);
      expect(rows[0].n).toBe(1);
    });
    // With the old version dropped at the top of the file, as the message says, it goes through.
    writeFileSync(file, `DROP FUNCTION IF EXISTS "tessera_expire_holds"(INTEGER);\n${readFileSync(file, 'utf8')}`);
    await expect(migrate(db.url, MIGRATIONS_DIR, dir)).resolves.toEqual([functionLabel('tessera_expire_holds')]);
  } finally {
    await db.drop();
  }
});

test('a deleted function file is forgotten, and its function left to the migration that drops it', async () => {
  const db = await createTestDatabase();
  const dir = functionsCopy();
  try {
    rmSync(path.join(dir, 'tessera_fold_counters.sql'));
    await expect(migrate(db.url, MIGRATIONS_DIR, dir)).resolves.toEqual([]);
    await withClient(db.url, async (c) => {
      const { rows } = await c.query(`SELECT name FROM "_tessera_functions" WHERE name = 'tessera_fold_counters'`);
      expect(rows).toEqual([]);
      expect(await procXmin(c, 'tessera_fold_counters')).toHaveLength(1);
    });
  } finally {
    await db.drop();
  }
});

test('a migration edited after it was applied is refused, not silently skipped', async () => {
  const dir = tempDir('tessera-migrations-');
  cpSync(MIGRATIONS_DIR, dir, { recursive: true });
  const first = readMigrations(dir)[0]!;
  writeFileSync(path.join(dir, first.name, 'migration.sql'), `${first.sql}\n-- edited\n`);
  await expect(migrate(url, dir)).rejects.toThrow(/was changed after it was applied/);
});

/**
 * A developer's database from before the squash (.tessera/pgdata): the schema the four old
 * migrations built — the same as the baseline's, which prisma/schema.sql and the comparison made
 * when they were squashed attest — with those four recorded, and no record of function files.
 */
async function databaseFromBeforeTheSquash(names = [...SQUASHED_INTO_BASELINE.keys()]): Promise<{ url: string; drop(): Promise<void> }> {
  // The schema the four old migrations made is the baseline's: migrate with the baseline alone
  // (not the migrations that came after it), then record the four old names instead.
  const db = await createTestDatabase({ migrated: false });
  const baselineOnly = tempDir('tessera-baseline-');
  cpSync(path.join(MIGRATIONS_DIR, BASELINE), path.join(baselineOnly, BASELINE), { recursive: true });
  await migrate(db.url, baselineOnly);
  await withClient(db.url, async (c) => {
    await c.query('DROP TABLE "_tessera_functions"');
    await c.query('DELETE FROM "_prisma_migrations"');
    for (const name of names) {
      await c.query(
        `INSERT INTO "_prisma_migrations" (id, checksum, migration_name, started_at, finished_at, applied_steps_count)
         VALUES (gen_random_uuid()::text, $1, $2, now(), now(), 1)`,
        [SQUASHED_INTO_BASELINE.get(name), name],
      );
    }
    // Some work done before the upgrade.
    await c.query(`INSERT INTO campaigns (id, name, status) VALUES ('11111111-1111-1111-1111-111111111111', 'Before', 'OPEN')`);
    await c.query(`INSERT INTO tickets (campaign_id, code) SELECT '11111111-1111-1111-1111-111111111111', 'T-' || i FROM generate_series(1, 3) i`);
  });
  return db;
}

test('a database with exactly the four squashed migrations gets the baseline recorded as applied, not run, and keeps working', async () => {
  const db = await databaseFromBeforeTheSquash();
  try {
    await withClient(db.url, async (c) => {
      await expect(pending(c)).resolves.toEqual(everything()); // not ready before the upgrade
    });
    const applied = await migrate(db.url);
    const after = readMigrations().map((m) => m.name).filter((name) => name > BASELINE);
    expect(applied).toEqual([...after, ...tesseraFunctions().map((f) => functionLabel(f.name))]); // the baseline was not run
    await withClient(db.url, async (c) => {
      const { rows } = await c.query('SELECT migration_name, checksum, applied_steps_count, logs FROM "_prisma_migrations" ORDER BY migration_name');
      expect(rows.map((r) => r.migration_name)).toEqual([...SQUASHED_INTO_BASELINE.keys(), BASELINE, ...after]);
      const baseline = rows.find((r) => r.migration_name === BASELINE);
      expect(baseline).toMatchObject({ checksum: readMigrations().find((m) => m.name === BASELINE)!.checksum, applied_steps_count: 0 });
      expect(baseline.logs).toMatch(/Recorded as applied without running/);
      await expect(pending(c)).resolves.toEqual([]);
      // The same schema as a fresh database's, and the work done before is still there and counted.
      expect(schemaFileText(await dumpSchema(c))).toBe(readFileSync(SCHEMA_FILE, 'utf8'));
      await c.query(`INSERT INTO tickets (campaign_id, code) VALUES ('11111111-1111-1111-1111-111111111111', 'T-4')`);
      const counted = await c.query(`SELECT sum(total)::int AS total FROM campaign_counters WHERE campaign_id = '11111111-1111-1111-1111-111111111111'`);
      expect(counted.rows[0].total).toBe(4);
      const gate = await c.query(
        `SELECT verdict FROM tessera_claim_gate('11111111-1111-1111-1111-111111111111', '00000000-0000-0000-0000-000000000000', 'h', NULL, 1, 1, true)`,
      );
      expect(gate.rows[0].verdict).toBe('OK');
    });
    await expect(migrate(db.url)).resolves.toEqual([]);
  } finally {
    await db.drop();
  }
});

test('a database with only some of the squashed migrations, or one of them changed, is refused with what to do', async () => {
  const partial = await databaseFromBeforeTheSquash(['20261129000000_core', '20261129100000_reservations']);
  try {
    await expect(migrate(partial.url)).rejects.toThrow(
      /has 20261129000000_core, 20261129100000_reservations applied: 20261201000000_baseline replaced exactly .* Migrate it with the Tessera version it was made by first, or recreate it/,
    );
  } finally {
    await partial.drop();
  }
  const changed = await databaseFromBeforeTheSquash();
  try {
    await withClient(changed.url, (c) => c.query(`UPDATE "_prisma_migrations" SET checksum = 'x' WHERE migration_name = '20261129300000_security'`));
    await expect(migrate(changed.url)).rejects.toThrow(/\(20261129300000_security with a different checksum\)/);
    await withClient(changed.url, async (c) => {
      const { rows } = await c.query('SELECT count(*)::int AS n FROM "_prisma_migrations" WHERE migration_name = $1', [BASELINE]);
      expect(rows[0].n).toBe(0);
    });
  } finally {
    await changed.drop();
  }
});

test('several instances migrating one fresh database at once apply each migration and each function file exactly once', async () => {
  const fresh = await emptyDatabase();
  try {
    const results = await Promise.all([migrate(fresh.url), migrate(fresh.url), migrate(fresh.url)]);
    expect(results.flat()).toEqual(everything());
    await withClient(fresh.url, async (c) => {
      const { rows } = await c.query('SELECT count(*)::int AS n FROM "_prisma_migrations"');
      expect(rows[0].n).toBe(readMigrations().length);
      await expect(pending(c)).resolves.toEqual([]);
    });
  } finally {
    await fresh.drop();
  }
});
