// Tests move a row's times in SQL (a hold that expired, an allotment that lapsed, allocations made
// earlier) rather than wait. `UPDATE t SET c = c - interval '…'` or `= clock_timestamp()` is refused
// by Citus on a distributed or reference table ("STABLE functions used in UPDATE queries cannot be
// called with column references", "… must not be VOLATILE"), so the new values are computed first by
// a SELECT and written as constants, row by row by key — on one PostgreSQL the two steps do the same.
import type { Pool } from 'pg';

/** Each table's key, as the UPDATE names a row (campaign-scoped tables: with their campaign). */
const KEYS: Record<string, readonly string[]> = {
  allocations: ['campaign_id', 'id'],
  allotments: ['campaign_id', 'partner_id'],
  campaigns: ['id'],
};

/**
 * `UPDATE table SET column = expression, … WHERE where` (params: where's $n), in two steps; returns the
 * rows written, each with the new values under the columns' names.
 */
export async function setTimes(sql: Pool, table: keyof typeof KEYS, set: Record<string, string>, where: string, params: unknown[] = []): Promise<Record<string, unknown>[]> {
  const keys = KEYS[table]!;
  const columns = Object.keys(set);
  const { rows } = await sql.query(
    `SELECT ${keys.map((k) => `${k} AS "key_${k}"`).join(', ')}, ${columns.map((c) => `${set[c]} AS "${c}"`).join(', ')} FROM ${table} WHERE ${where}`,
    params,
  );
  for (const row of rows) {
    await sql.query(
      `UPDATE ${table} SET ${columns.map((c, i) => `${c} = $${i + 1}`).join(', ')} WHERE ${keys.map((k, j) => `${k} = $${columns.length + j + 1}`).join(' AND ')}`,
      [...columns.map((c) => row[c]), ...keys.map((k) => row[`key_${k}`])],
    );
  }
  return rows;
}
