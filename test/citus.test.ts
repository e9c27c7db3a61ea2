// Ready for Citus, on one server: the placement the migrator applies on a Citus coordinator
// (src/db/distribute.ts) covers every table, and the catalog obeys Citus's rules for it: primary and
// unique keys of distributed tables include the distribution column; foreign keys between
// distributed tables include it on both sides; no reference table points at a distributed one. The
// placement itself, on a real cluster: test/citus/distribution.citus.ts (npm run test:citus).
import { BOOKKEEPING_TABLES as BOOKKEEPING, DISTRIBUTION_COLUMN, PLACEMENT } from '../src/db/distribute';
import { withClient } from './helpers/env';
import { createTestDatabase } from './helpers/testServer';

interface Key { table_name: string; index_name: string; columns: string[] }
interface ForeignKey { name: string; from_table: string; from_columns: string[]; to_table: string; to_columns: string[] }

let tables: string[];
let uniqueKeys: Key[];
let foreignKeys: ForeignKey[];

beforeAll(async () => {
  const db = await createTestDatabase();
  try {
    await withClient(db.url, async (c) => {
      const listed = await c.query<{ t: string }>(
        `SELECT c.relname AS t FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
          WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') AND c.relname <> ALL ($1) ORDER BY 1`,
        [BOOKKEEPING],
      );
      tables = listed.rows.map((row) => row.t);
      ({ rows: uniqueKeys } = await c.query<Key>(
        `SELECT t.relname AS table_name, i.relname AS index_name,
                array_agg(a.attname::text ORDER BY k.ord) AS columns
           FROM pg_index x
           JOIN pg_class t ON t.oid = x.indrelid JOIN pg_class i ON i.oid = x.indexrelid
           JOIN pg_namespace n ON n.oid = t.relnamespace
           CROSS JOIN LATERAL unnest(x.indkey::int2[]) WITH ORDINALITY AS k(attnum, ord)
           LEFT JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum
          WHERE n.nspname = 'public' AND x.indisunique AND t.relname <> ALL ($1)
          GROUP BY 1, 2`,
        [BOOKKEEPING],
      ));
      ({ rows: foreignKeys } = await c.query<ForeignKey>(
        `SELECT con.conname AS name, f.relname AS from_table, t.relname AS to_table,
                (SELECT array_agg(a.attname::text ORDER BY k.ord) FROM unnest(con.conkey) WITH ORDINALITY k(attnum, ord)
                   JOIN pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = k.attnum) AS from_columns,
                (SELECT array_agg(a.attname::text ORDER BY k.ord) FROM unnest(con.confkey) WITH ORDINALITY k(attnum, ord)
                   JOIN pg_attribute a ON a.attrelid = con.confrelid AND a.attnum = k.attnum) AS to_columns
           FROM pg_constraint con JOIN pg_class f ON f.oid = con.conrelid JOIN pg_class t ON t.oid = con.confrelid
          WHERE con.contype = 'f'`,
      ));
    });
  } finally {
    await db.drop();
  }
});

const distributed = (table: string) => PLACEMENT.get(table)?.kind === 'distributed';

test('PLACEMENT (src/db/distribute.ts) places every table of the schema, and distributes the campaign-scoped ones', () => {
  expect([...PLACEMENT.keys()].sort()).toEqual(tables);
  for (const table of ['tickets', 'allocations']) expect(PLACEMENT.get(table)?.kind).toBe('distributed');
  expect(PLACEMENT.get('campaigns')?.kind).toBe('reference');
  expect(PLACEMENT.get('partners')?.kind).toBe('reference');
  expect(DISTRIBUTION_COLUMN).toBe('campaign_id');
});

test('every primary and unique key of a distributed table includes campaign_id', () => {
  const offending = uniqueKeys.filter((key) => distributed(key.table_name) && !key.columns.includes('campaign_id'));
  expect(offending).toEqual([]);
  // The rule was really applied: the claim's own keys are among those checked.
  expect(uniqueKeys.map((key) => key.index_name)).toEqual(expect.arrayContaining(['tickets_pkey', 'allocations_pkey', 'allocations_one_live_per_ticket']));
});

test('foreign keys between distributed tables carry campaign_id on both sides; none leads from a reference table to a distributed one', () => {
  const between = foreignKeys.filter((fk) => distributed(fk.from_table) && distributed(fk.to_table));
  expect(between.map((fk) => fk.name)).toContain('allocations_campaign_id_ticket_id_fkey');
  for (const fk of between) {
    const at = fk.from_columns.indexOf('campaign_id');
    expect({ fk: fk.name, at: at >= 0 }).toEqual({ fk: fk.name, at: true });
    expect({ fk: fk.name, to: fk.to_columns[at] }).toEqual({ fk: fk.name, to: 'campaign_id' });
  }
  const backwards = foreignKeys.filter((fk) => !distributed(fk.from_table) && distributed(fk.to_table));
  expect(backwards).toEqual([]);
});
