// Where an acknowledged claim lives, read at start-up for the log: on the primary alone,
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

/**
 * The start-up log's line on where claims live, or undefined when there is nothing worth saying: a
 * server with no standby outside production cannot fail over, so "a failover can lose the last
 * moment of claims" is noise there (every `npm start` on the embedded database printed it).
 * Production says it even without a visible standby: a managed service's standby may not show in
 * pg_stat_replication.
 */
export function durabilityNote(d: Durability, production: boolean): string | undefined {
  if (d.onTwoServers) return 'claims are acknowledged once a synchronous standby has them (synchronous_standby_names)';
  if (d.standbys > 0) {
    return `claims are acknowledged once the primary has them: its ${d.standbys === 1 ? 'standby is' : `${d.standbys} standbys are`} asynchronous, so a failover can lose the last moment of claims (docs/SCALING.md)`;
  }
  if (production) return 'claims are acknowledged once the primary has them: no synchronous standby, so a failover can lose the last moment of claims (docs/SCALING.md)';
  return undefined;
}
