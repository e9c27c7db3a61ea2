// The sweeper's statement: see prisma/functions/tessera_expire_holds.sql.
import type { Db } from './client';

/** Folds the counter rows of exited backends into slot 0 (see tessera_fold_counters). */
export async function foldCounters(db: Db): Promise<void> {
  await db.$executeRaw`SELECT tessera_fold_counters()`;
}

/** Writes down the allotments whose lapses_at has come (see tessera_lapse_allotments); returns how many lapsed. */
export async function lapseAllotments(db: Db): Promise<number> {
  const rows = await db.$queryRaw<{ n: number }[]>`SELECT tessera_lapse_allotments() AS n`;
  return rows[0]?.n ?? 0;
}

/** CAMPAIGN_SOLD_OUT and CAMPAIGN_LOW_STOCK where they are due (see tessera_stock_events); returns how many were appended. */
export async function stockEvents(db: Db): Promise<number> {
  const rows = await db.$queryRaw<{ n: number }[]>`SELECT tessera_stock_events() AS n`;
  return rows[0]?.n ?? 0;
}

/** Ends up to `batch` expired holds per campaign; returns how many tickets went back to the pool. */
export async function expireHolds(db: Db, batch: number): Promise<number> {
  const rows = await db.$queryRaw<{ n: number }[]>`SELECT tessera_expire_holds(${batch}::integer) AS n`;
  return rows[0]?.n ?? 0;
}
