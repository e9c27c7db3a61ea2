// A transaction on one connection of the pool Prisma's adapter uses, for work that needs the pg
// client itself (COPY, or statements that read what the previous ones wrote): BEGIN, `run`, COMMIT;
// on an error ROLLBACK, and a connection that could not roll back is closed rather than pooled.
import type { Pool, PoolClient } from 'pg';

export async function inPoolTransaction<T>(pool: Pool, run: (client: PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    await client.query('BEGIN');
    const result = await run(client);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    await client.query('ROLLBACK').catch((rollback: Error) => (broken = rollback));
    throw error;
  } finally {
    client.release(broken);
  }
}
