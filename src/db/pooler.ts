// Is DATABASE_URL a transaction pooler? DATABASE_POOLER says so (pgbouncer, or none); unset, one
// connection is tried the way the pool's connections start: PostgreSQL accepts the session settings
// in the start-up packet, PgBouncer refuses the first one it does not know with 08P01 "unsupported
// startup parameter" — the one answer only a pooler gives. A server that cannot be reached is not
// decided here: the pool's own connections report that.
import { Client } from 'pg';
import { parseHosts } from './hosts';
import { startupOptions } from './sessionSettings';
import type { Config } from '../config';

export type Pooler = 'pgbouncer' | 'none';

/** PgBouncer's words for a start-up parameter it does not pass on. */
const REFUSED_STARTUP_PARAMETER = /unsupported startup parameter/i;

export async function detectPooler(url: string, o: Config['database']): Promise<Pooler> {
  if (o.pooler) return o.pooler;
  const client = new Client({
    connectionString: parseHosts(url).urls[0],
    options: startupOptions(o),
    connectionTimeoutMillis: o.poolTimeoutMs,
  });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return 'none';
  } catch (error) {
    return REFUSED_STARTUP_PARAMETER.test((error as Error).message) ? 'pgbouncer' : 'none';
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** Why a pooler without DATABASE_DIRECT_URL is refused at start. */
export class PoolerWithoutDirectUrlError extends Error {
  constructor(how: 'configured' | 'detected') {
    super(
      `DATABASE_URL points at PgBouncer in transaction mode (${how === 'configured' ? 'DATABASE_POOLER=pgbouncer' : 'it refused the start-up parameters'}), ` +
        'but DATABASE_DIRECT_URL is not set. Migrations hold a session advisory lock and the session settings are written as role settings, ' +
        'which need a connection of their own to PostgreSQL: set DATABASE_DIRECT_URL to the primary itself (not through the pooler).',
    );
    this.name = 'PoolerWithoutDirectUrlError';
  }
}
