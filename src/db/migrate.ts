// Brings a database to the schema of this checkout, in two steps, under one lock:
//
// 1. prisma/migrations/*/migration.sql in order — the tables, types, indexes and constraints —
//    recording each in `_prisma_migrations` exactly as `prisma migrate deploy` does (same table,
//    same sha256 checksum of the file), because Prisma's CLI needs a schema-engine binary that
//    cannot be downloaded here (docs/TOOLCHAIN.md). A user who has it can still run
//    `prisma migrate status` against the same database.
// 2. prisma/functions/*.sql — every function and trigger, one file each, written with CREATE OR
//    REPLACE — in one transaction, and only the files whose checksum differs from the one recorded
//    in `_tessera_functions` when they were last applied. A restart with unchanged files therefore
//    replaces nothing under running claims; a changed file replaces its function atomically (a
//    trigger is dropped and created again in that same transaction, so no write runs without it).
//
// Several instances may start at once: a session advisory lock (the key Prisma's engine uses)
// makes them apply each migration and each function change exactly once, one after the other;
// none serves before it returns. `pendingMigrations` (/healthz) reports what is missing of both.
//
// On a Citus coordinator, between the two steps every table not yet placed is distributed or made a
// reference table, and after them every function is propagated to the workers (src/db/distribute.ts):
// a new database, and a migration that adds a table, alike.
import { createHash, randomUUID } from 'node:crypto';
import { readdirSync, readFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import { postgreSplitterOptions, splitQuery } from 'dbgate-query-splitter';
import type { Client } from 'pg';
import type { DatabaseKind } from './dialect';
import { distributeFunctions, distributeTables, isCitus, prepareCitusSession } from './distribute';
import { connectClient } from './hosts';

export const MIGRATIONS_DIR = path.resolve(__dirname, '../../prisma/migrations');
export const FUNCTIONS_DIR = path.resolve(__dirname, '../../prisma/functions');
const PRISMA_MIGRATE_LOCK_KEY = 72707369;

/**
 * The baseline replaced four migrations that had built the same schema before 0.1.0 was released.
 * A database that has exactly those four applied (with these checksums) gets the baseline recorded
 * as applied without running it — what `prisma migrate resolve --applied` does — and keeps its four
 * rows as history. Its functions are then applied from prisma/functions/ like any database's.
 */
export const BASELINE = '20261201000000_baseline';
export const SQUASHED_INTO_BASELINE: ReadonlyMap<string, string> = new Map([
  ['20261129000000_core', '2504e5bf02c5062ced5d3feae591a3edbd87ac81945620ea1552818c58a9c389'],
  ['20261129100000_reservations', '05b86db38627f187884d0d02af12c85152b863d81a0a065535bc10bd53afae8e'],
  ['20261129200000_stats_counters', '656ac2ad7929f6c258ac9267422467e9452589040dc0fdde7affe059907fd04e'],
  ['20261129300000_security', 'd2a155d8a829863d33b02a554adca3b652e6dbe9ce3e9dce2823710fcad6d2bc'],
]);

export interface Migration {
  readonly name: string;
  readonly sql: string;
  readonly checksum: string;
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

export function readMigrations(dir = MIGRATIONS_DIR): Migration[] {
  return readdirSync(dir, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && existsSync(path.join(dir, entry.name, 'migration.sql')))
    .map((entry) => entry.name)
    .sort()
    .map((name) => {
      const sql = readFileSync(path.join(dir, name, 'migration.sql'), 'utf8');
      return { name, sql, checksum: sha256(sql) };
    });
}

/** prisma/functions/<name>.sql, in name order; `name` is the function the file defines. */
export function readFunctions(dir = FUNCTIONS_DIR): Migration[] {
  return readdirSync(dir)
    .filter((file) => file.endsWith('.sql'))
    .sort()
    .map((file) => {
      const sql = readFileSync(path.join(dir, file), 'utf8');
      return { name: file.slice(0, -'.sql'.length), sql, checksum: sha256(sql) };
    });
}

/** Every function the database must run: the files of prisma/functions/. */
export function tesseraFunctions(dir = FUNCTIONS_DIR): Migration[] {
  return readFunctions(dir);
}

/** How migrate() and pendingMigrations() name a function in their lists. */
const FUNCTION_LABEL_PREFIX = 'prisma/functions/';
export const functionLabel = (name: string) => `${FUNCTION_LABEL_PREFIX}${name}.sql`;

/**
 * What migrate() applied, for the start-up log: how many migrations and the latest, how many function
 * files — not every name (a new database gets them all, and every name in one line would make it
 * thousands of characters long).
 */
export function appliedSummary(applied: readonly string[]): { migrations: number; latest?: string; functions: number } {
  const migrations = applied.filter((name) => !name.startsWith(FUNCTION_LABEL_PREFIX));
  return { migrations: migrations.length, latest: migrations.at(-1), functions: applied.length - migrations.length };
}

const CREATE_MIGRATIONS_TABLE = `
CREATE TABLE IF NOT EXISTS "_prisma_migrations" (
    "id"                    VARCHAR(36) PRIMARY KEY NOT NULL,
    "checksum"              VARCHAR(64) NOT NULL,
    "finished_at"           TIMESTAMPTZ,
    "migration_name"        VARCHAR(255) NOT NULL,
    "logs"                  TEXT,
    "rolled_back_at"        TIMESTAMPTZ,
    "started_at"            TIMESTAMPTZ NOT NULL DEFAULT now(),
    "applied_steps_count"   INTEGER NOT NULL DEFAULT 0
)`;

// Ours, not Prisma's: which version (checksum) of each prisma/functions file the database runs.
const CREATE_FUNCTIONS_TABLE = `
CREATE TABLE IF NOT EXISTS "_tessera_functions" (
    "name"       TEXT PRIMARY KEY NOT NULL,
    "checksum"   VARCHAR(64) NOT NULL,
    "applied_at" TIMESTAMPTZ NOT NULL DEFAULT now()
)`;

interface AppliedRow {
  migration_name: string;
  checksum: string;
  finished_at: Date | null;
  rolled_back_at: Date | null;
}

/**
 * Applies pending migrations, then the changed function files; returns what it applied: migration
 * names, then `prisma/functions/<name>.sql` for each function file.
 */
export async function migrate(databaseUrl: string, dir = MIGRATIONS_DIR, functionsDir = FUNCTIONS_DIR, dialect?: DatabaseKind): Promise<string[]> {
  const migrations = readMigrations(dir);
  const functions = tesseraFunctions(functionsDir);
  // The first listed host that takes writes, when DATABASE_URL lists several (hosts.ts).
  const client = await connectClient(databaseUrl);
  try {
    await client.query('SELECT pg_advisory_lock($1)', [PRISMA_MIGRATE_LOCK_KEY]);
    // Told by the server (its dialect, decided at start-up), or asked when run on its own.
    const citus = dialect === undefined ? await isCitus(client) : dialect === 'citus';
    if (citus) await prepareCitusSession(client);
    await client.query(CREATE_MIGRATIONS_TABLE);
    const { rows } = await client.query<AppliedRow>(
      'SELECT migration_name, checksum, finished_at, rolled_back_at FROM "_prisma_migrations" WHERE rolled_back_at IS NULL',
    );
    const applied = new Map(rows.map((row) => [row.migration_name, row]));
    for (const row of rows) {
      if (row.finished_at === null) {
        throw new Error(`Migration ${row.migration_name} failed earlier and was not rolled back; fix the database, then mark it rolled back.`);
      }
    }
    const baseline = migrations.find((m) => m.name === BASELINE);
    if (baseline && !applied.has(BASELINE)) {
      const recorded = await recordBaselineIfSquashed(client, applied, baseline);
      if (recorded) applied.set(BASELINE, recorded);
    }
    const done: string[] = [];
    for (const migration of migrations) {
      const previous = applied.get(migration.name);
      if (previous) {
        if (previous.checksum !== migration.checksum) {
          throw new Error(`Migration ${migration.name} was changed after it was applied (checksum differs). Add a new migration instead.`);
        }
        continue;
      }
      const id = randomUUID();
      await client.query('BEGIN');
      try {
        await client.query(
          'INSERT INTO "_prisma_migrations" (id, checksum, migration_name, started_at) VALUES ($1, $2, $3, now())',
          [id, migration.checksum, migration.name],
        );
        await runScript(client, migration.sql);
        await client.query(
          'UPDATE "_prisma_migrations" SET finished_at = now(), applied_steps_count = 1 WHERE id = $1',
          [id],
        );
        await client.query('COMMIT');
      } catch (error) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw new Error(`Migration ${migration.name} failed: ${(error as Error).message}`, { cause: error });
      }
      done.push(migration.name);
    }
    if (citus) done.push(...(await distributeTables(client)));
    done.push(...(await applyFunctions(client, functions)));
    if (citus) done.push(...(await distributeFunctions(client)));
    return done;
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [PRISMA_MIGRATE_LOCK_KEY]).catch(() => undefined);
    await client.end().catch(() => undefined);
  }
}

/**
 * Runs a file's statements one by one, in the caller's transaction. One query string holding several
 * commands would do on one server, but Citus sends a DDL command on a distributed table to the
 * workers as the whole query string it came in, in a prepared statement: "cannot insert multiple
 * commands into a prepared statement". dbgate-query-splitter knows PostgreSQL's quoting (dollar
 * quotes, comments), so a function body stays one statement.
 */
async function runScript(client: Client, sql: string): Promise<void> {
  for (const statement of splitQuery(sql, postgreSplitterOptions)) {
    const text = typeof statement === 'string' ? statement : statement.text;
    if (text.trim()) await client.query(text);
  }
}

/**
 * A database built by the four migrations the baseline replaced: records the baseline as applied
 * (applied_steps_count 0, and a line in `logs` saying why). Any other mix of those four is refused:
 * the baseline cannot be run over part of their tables, nor skipped.
 */
async function recordBaselineIfSquashed(client: Client, applied: Map<string, AppliedRow>, baseline: Migration): Promise<AppliedRow | null> {
  const found = [...SQUASHED_INTO_BASELINE.keys()].filter((name) => applied.has(name));
  if (found.length === 0) return null;
  const differing = found.filter((name) => applied.get(name)!.checksum !== SQUASHED_INTO_BASELINE.get(name));
  if (found.length !== SQUASHED_INTO_BASELINE.size || differing.length > 0) {
    throw new Error(
      `This database has ${found.join(', ')} applied${differing.length ? ` (${differing.join(', ')} with a different checksum)` : ''}: ` +
        `${BASELINE} replaced exactly ${[...SQUASHED_INTO_BASELINE.keys()].join(', ')} and can only be recorded over all four as released. ` +
        'Migrate it with the Tessera version it was made by first, or recreate it (for the embedded database: delete .tessera/pgdata).',
    );
  }
  const logs = `Recorded as applied without running: the database already had ${found.join(', ')}, which ${BASELINE} replaced.`;
  const { rows } = await client.query<AppliedRow>(
    `INSERT INTO "_prisma_migrations" (id, checksum, migration_name, logs, started_at, finished_at, applied_steps_count)
     VALUES ($1, $2, $3, $4, now(), now(), 0)
     RETURNING migration_name, checksum, finished_at, rolled_back_at`,
    [randomUUID(), baseline.checksum, baseline.name, logs],
  );
  return rows[0]!;
}

/**
 * Applies the function files whose checksum differs from the recorded one (all of them on a new
 * database), in name order, in one transaction; forgets the records of files that were deleted
 * (dropping a function is a migration's job: other objects may depend on it).
 */
async function applyFunctions(client: Client, functions: Migration[]): Promise<string[]> {
  await client.query(CREATE_FUNCTIONS_TABLE);
  const { rows } = await client.query<{ name: string; checksum: string }>('SELECT name, checksum FROM "_tessera_functions"');
  const recorded = new Map(rows.map((row) => [row.name, row.checksum]));
  // Recorded but gone (dropped by hand, or with a table's row type when Citus placed the table):
  // applied again.
  const { rows: present } = await client.query<{ name: string }>(
    'SELECT DISTINCT proname AS name FROM pg_proc WHERE pronamespace = (SELECT oid FROM pg_namespace WHERE nspname = current_schema())',
  );
  const exists = new Set(present.map((row) => row.name));
  const changed = functions.filter((f) => recorded.get(f.name) !== f.checksum || !exists.has(f.name));
  const onDisk = new Set(functions.map((f) => f.name));
  const deleted = rows.map((row) => row.name).filter((name) => !onDisk.has(name));
  if (changed.length === 0 && deleted.length === 0) return [];
  await client.query('BEGIN');
  try {
    for (const f of changed) {
      try {
        await runScript(client, f.sql);
      } catch (error) {
        throw new Error(`${functionLabel(f.name)} failed: ${(error as Error).message}`, { cause: error });
      }
      // CREATE OR REPLACE with other argument types adds an overload instead of replacing: the old
      // one would linger and be called by whoever still matches it.
      const { rows: versions } = await client.query<{ signature: string }>(
        `SELECT p.oid::regprocedure::text AS signature FROM pg_proc p
          WHERE p.proname = $1 AND p.pronamespace = (SELECT oid FROM pg_namespace WHERE nspname = current_schema()) ORDER BY 1`,
        [f.name],
      );
      if (versions.length !== 1) {
        throw new Error(
          versions.length === 0
            ? `${functionLabel(f.name)} does not create a function named ${f.name}: a file is named after its function.`
            : `After ${functionLabel(f.name)} the database has ${versions.length} functions named ${f.name} (${versions.map((v) => v.signature).join('; ')}): ` +
              'its arguments changed, so drop the old one at the top of the file (DROP FUNCTION IF EXISTS with the old argument types).',
        );
      }
      await client.query(
        `INSERT INTO "_tessera_functions" (name, checksum, applied_at) VALUES ($1, $2, now())
         ON CONFLICT (name) DO UPDATE SET checksum = EXCLUDED.checksum, applied_at = EXCLUDED.applied_at`,
        [f.name, f.checksum],
      );
    }
    if (deleted.length > 0) await client.query('DELETE FROM "_tessera_functions" WHERE name = ANY($1)', [deleted]);
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  }
  return changed.map((f) => functionLabel(f.name));
}

/**
 * What this process needs and the database lacks (used by /healthz, which answers 503 while this is
 * not empty): migrations not recorded as applied, and function files never applied — none is while
 * `_tessera_functions` does not exist yet (a database that has the migrations but not the functions,
 * e.g. one another instance is upgrading). A file recorded with another checksum is not reported:
 * that is the version of another release, applied by an instance of that release — during a rolling
 * deploy the first new instance applies its versions while old ones still serve, as with migrations
 * (docs/SCALING.md: changes must be additive) — and this process applied its own before it served.
 * An old instance that restarts while new ones serve puts its versions back, until a new one
 * restarts: a function's new body must therefore still serve the previous release's callers.
 */
export async function pendingMigrations(query: (sql: string) => Promise<unknown[]>): Promise<string[]> {
  const rows = (await query(
    'SELECT migration_name FROM "_prisma_migrations" WHERE finished_at IS NOT NULL AND rolled_back_at IS NULL',
  )) as { migration_name: string }[];
  const applied = new Set(rows.map((row) => row.migration_name));
  const pending = readMigrations().map((m) => m.name).filter((name) => !applied.has(name));
  let recorded: { name: string }[];
  try {
    recorded = (await query('SELECT name FROM "_tessera_functions"')) as typeof recorded;
  } catch (error) {
    if ((error as { code?: string }).code !== '42P01') throw error; // undefined_table: none applied yet
    recorded = [];
  }
  const present = new Set(recorded.map((row) => row.name));
  for (const f of tesseraFunctions()) if (!present.has(f.name)) pending.push(functionLabel(f.name));
  return pending;
}
