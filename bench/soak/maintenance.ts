// Standing in for autovacuum on a server that has it off.
import type { Client } from 'pg';

/**
 * autovacuum's work, when the server has autovacuum off (this machine's shared PostgreSQL has):
 * without it the soak's tables are never vacuumed nor analyzed — dead rows' index entries stay, and
 * the planner's figures for `allocations` stay those of the empty table the server's cached generic
 * plans were made for (plan_cache_mode = force_generic_plan) — and the cost per request grows with
 * the run. Measured here: PostgreSQL CPU per request 2.0 → 4.8 ms in three minutes and throughput
 * 450 → 250 requests/s with the machine otherwise idle; one VACUUM mid-run (it also updates the
 * table's size, so cached plans are made again) brought it back to 1.2 ms at once. Production runs
 * autovacuum, so the soak
 * does what it would: once per autovacuum_naptime (at the first window's end past it), VACUUM and/or
 * ANALYZE of each table of the soak's database past autovacuum's thresholds (the server's own
 * settings: dead tuples, inserts since the last vacuum, changes since the last analyze). Its CPU
 * counts as the database's.
 */
export let lastMaintenance = -Infinity;
export async function maintain(sql: Client): Promise<string[] | undefined> {
  const settings = new Map(
    (await sql.query<{ name: string; setting: string }>("SELECT name, setting FROM pg_settings WHERE name LIKE 'autovacuum%'")).rows.map((r) => [r.name, Number(r.setting)]),
  );
  const get = (name: string, fallback: number) => settings.get(name) ?? fallback;
  // autovacuum looks at a database once per naptime (default 1 minute): so does the soak.
  if (performance.now() - lastMaintenance < get('autovacuum_naptime', 60) * 1000 - 1000) return undefined;
  lastMaintenance = performance.now();
  const tables = (
    await sql.query<{ relname: string; reltuples: number; n_dead_tup: number; n_mod_since_analyze: number; n_ins_since_vacuum: number }>(
      `SELECT s.relname, greatest(c.reltuples, 0)::float8 AS reltuples, s.n_dead_tup::float8 AS n_dead_tup,
              s.n_mod_since_analyze::float8 AS n_mod_since_analyze, s.n_ins_since_vacuum::float8 AS n_ins_since_vacuum
         FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid`,
    )
  ).rows;
  const done: string[] = [];
  for (const t of tables) {
    const vacuum =
      t.n_dead_tup > get('autovacuum_vacuum_threshold', 50) + get('autovacuum_vacuum_scale_factor', 0.2) * t.reltuples ||
      t.n_ins_since_vacuum > get('autovacuum_vacuum_insert_threshold', 1000) + get('autovacuum_vacuum_insert_scale_factor', 0.2) * t.reltuples;
    const analyze = t.n_mod_since_analyze > get('autovacuum_analyze_threshold', 50) + get('autovacuum_analyze_scale_factor', 0.1) * t.reltuples;
    if (!vacuum && !analyze) continue;
    const what = vacuum && analyze ? 'VACUUM ANALYZE' : vacuum ? 'VACUUM' : 'ANALYZE';
    await sql.query(`${what} ${JSON.stringify(t.relname)}`);
    done.push(`${what} ${t.relname}`);
  }
  return done;
}
