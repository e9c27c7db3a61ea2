// Where an acknowledged claim lives (issue 19), read at start-up for the log: on the primary alone,
// or also on a synchronous standby. PostgreSQL decides this, not Tessera — synchronous_standby_names
// on the primary and synchronous_commit (docs/SCALING.md) — so Tessera reports it rather than
// pinning either: an operator who chose remote_apply must not be weakened to on.
import type { Pool } from 'pg';

const DURABILITY = `
SELECT current_setting('synchronous_commit') AS synchronous_commit,
       current_setting('synchronous_standby_names') AS synchronous_standby_names,
       (SELECT count(*) FROM pg_stat_replication)::int AS standbys,
       (SELECT count(*) FROM pg_stat_replication WHERE sync_state IN ('sync', 'quorum'))::int AS synchronous_standbys`;

export interface Durability {
  synchronousCommit: string;
  synchronousStandbyNames: string;
  standbys: number;
  synchronousStandbys: number;
  /** True when a commit returns only after a standby has it (flushed, written or applied). */
  onTwoServers: boolean;
}

export async function readDurability(pool: Pool): Promise<Durability> {
  const { rows } = await pool.query<{ synchronous_commit: string; synchronous_standby_names: string; standbys: number; synchronous_standbys: number }>(DURABILITY);
  const row = rows[0]!;
  return {
    synchronousCommit: row.synchronous_commit,
    synchronousStandbyNames: row.synchronous_standby_names,
    standbys: row.standbys,
    synchronousStandbys: row.synchronous_standbys,
    // 'local' and 'off' never wait for a standby; 'on', 'remote_write', 'remote_apply' do when one is named.
    onTwoServers: row.synchronous_standby_names !== '' && ['on', 'remote_write', 'remote_apply'].includes(row.synchronous_commit),
  };
}
