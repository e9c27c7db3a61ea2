// Read replicas: the reads that may be a moment stale — reports, timelines, partner
// figures, admin lists, the audit log, the export, the console's pages — go to a streaming replica
// (DATABASE_READ_URL, comma-separated for several), so that dashboards do not compete with claims.
// Everything on the claim path, every read a client makes to decide a write, and every partner's
// read of its own allocations stays on the primary (read-your-writes: a claim is committed on the
// primary before it is answered, and the partner's next read of it asks the primary).
//
// Staleness is bounded: every min(1 s, READ_MAX_LAG_MS / 2) each replica is asked how far its replay is behind
// (now minus the time of the last transaction it replayed, 0 when it has replayed all it received),
// and one more than READ_MAX_LAG_MS behind — or not answering — is skipped until it catches up.
// With no replica in bounds, reads go to the primary. So a read is at most READ_MAX_LAG_MS plus one
// check interval old.
import { createDatabase, type Database, type DatabaseOptions } from './client';

/** Where a stale-tolerant read runs: a replica within bounds, else the primary. */
export type ReadTarget = Pick<Database, 'prisma' | 'pool'> & { readonly replica: boolean };

const LAG_SQL = `
SELECT CASE WHEN NOT pg_is_in_recovery() THEN 0
            WHEN pg_last_wal_receive_lsn() IS NOT DISTINCT FROM pg_last_wal_replay_lsn() THEN 0
            ELSE COALESCE(EXTRACT(EPOCH FROM clock_timestamp() - pg_last_xact_replay_timestamp()) * 1000, 0)
       END::float8 AS lag_ms`;

interface Replica {
  readonly url: string;
  readonly db: Database;
  lagMs: number | null;
}

export class ReadReplicas {
  private readonly replicas: Replica[];
  private next = 0;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly primary: Database,
    urls: readonly string[],
    options: DatabaseOptions,
    private readonly maxLagMs: number,
    private readonly checkMs = Math.max(100, Math.min(1000, Math.floor(maxLagMs / 2))),
  ) {
    // A replica answers reads only: a pool a quarter of the primary's is plenty.
    this.replicas = urls.map((url) => ({ url, db: createDatabase({ ...options, url, poolSize: Math.max(2, Math.ceil(options.poolSize / 4)) }), lagMs: null }));
  }

  get size(): number {
    return this.replicas.length;
  }

  /** Measures every replica now, then every check interval. */
  async start(): Promise<void> {
    if (this.replicas.length === 0) return;
    await this.check();
    this.timer = setInterval(() => void this.check(), this.checkMs);
    this.timer.unref();
  }

  private async check(): Promise<void> {
    await Promise.all(
      this.replicas.map(async (r) => {
        try {
          const { rows } = await r.db.pool.query<{ lag_ms: number }>(LAG_SQL);
          r.lagMs = rows[0]!.lag_ms;
        } catch {
          r.lagMs = null; // not answering: skipped until it does
        }
      }),
    );
  }

  /** A replica within READ_MAX_LAG_MS (round robin), else the primary. */
  target(): ReadTarget {
    for (let i = 0; i < this.replicas.length; i += 1) {
      const r = this.replicas[(this.next + i) % this.replicas.length]!;
      if (r.lagMs !== null && r.lagMs <= this.maxLagMs) {
        this.next = (this.next + i + 1) % this.replicas.length;
        return { prisma: r.db.prisma, pool: r.db.pool, replica: true };
      }
    }
    return { prisma: this.primary.prisma, pool: this.primary.pool, replica: false };
  }

  /** Each replica's last measured lag (null: not answering), for /metrics and the tests. */
  lags(): { url: string; lagMs: number | null }[] {
    return this.replicas.map((r) => ({ url: r.url.replace(/\/\/[^@]*@/, '//'), lagMs: r.lagMs }));
  }

  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await Promise.all(this.replicas.map((r) => r.db.close()));
  }
}
