// A primary and a streaming standby of our own, in a temporary folder: `initdb`, `pg_basebackup -R`
// and `pg_ctl` of the machine's PostgreSQL (Debian's /usr/lib/postgresql/<v>/bin, or PG_BIN). As
// root they run as the OS user `postgres`, as PostgreSQL requires. Machines without those binaries
// (the embedded PostgreSQL has no pg_basebackup) get null, and the replica tests say they skipped.
// Besides reading from the standby (test/replicas.test.ts), the pair serves the failover test of
// test/hosts.test.ts and the bench's synchronous-commit runs: the standby made synchronous or
// asynchronous, the primary killed, the standby promoted. (The failover drill, test/chaos/failover.ts,
// runs a Patroni cluster instead: test/chaos/patroni.ts.)
import { execFile, execFileSync, spawnSync } from 'node:child_process';
import { promisify } from 'node:util';
import { appendFileSync, chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { freePort } from './process';
import { until } from './time';

export interface ReplicaPair {
  primaryUrl: string;
  standbyUrl: string;
  /** Both servers, primary first, as a libpq multi-host URL asking for the read-write one. */
  bothUrl: string;
  /** Makes the standby synchronous (every commit waits for its flush there) or asynchronous again. */
  setSynchronous(on: boolean): Promise<void>;
  /** The primary dies at once: SIGKILL to the postmaster and every backend, nothing flushed or shut down. */
  killPrimary(): void;
  /** `pg_ctl promote` of the standby, waiting until it accepts writes (without blocking this process). */
  promoteStandby(): Promise<void>;
  stop(): void;
}

export interface ReplicaPairOptions {
  /** fsync on both servers (default off: the tests need no durability across an OS crash; the bench does). */
  fsync?: boolean;
}

/** The newest PostgreSQL binaries with pg_basebackup on this machine (PG_BIN, or Debian's /usr/lib/postgresql/<v>/bin). */
export function postgresBinaries(): string | null {
  if (process.env.PG_BIN) return existsSync(path.join(process.env.PG_BIN, 'pg_basebackup')) ? process.env.PG_BIN : null;
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return null;
  const versions = readdirSync(root).filter((v) => existsSync(path.join(root, v, 'bin', 'pg_basebackup'))).sort((a, b) => Number(b) - Number(a));
  return versions[0] ? path.join(root, versions[0], 'bin') : null;
}

/** Starts a primary and a standby streaming from it; null when this machine has no PostgreSQL binaries. */
export async function startReplicaPair(options: ReplicaPairOptions = {}): Promise<ReplicaPair | null> {
  const bin = postgresBinaries();
  if (!bin) return null;
  const root = process.getuid?.() === 0;
  const user = root ? { uid: Number(execFileSync('id', ['-u', 'postgres']).toString()), gid: Number(execFileSync('id', ['-g', 'postgres']).toString()) } : undefined;
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tessera-replica-'));
  chmodSync(dir, 0o755);
  if (user) chownSync(dir, user.uid, user.gid);
  const run = (tool: string, args: string[]) => {
    const result = spawnSync(path.join(bin, tool), args, { ...(user ?? {}), cwd: dir, encoding: 'utf8', timeout: 60_000 });
    if (result.status !== 0) throw new Error(`${tool} ${args.join(' ')} failed: ${result.stderr || result.stdout || result.error?.message}`);
  };
  const [primaryPort, standbyPort] = [await freePort(), await freePort()];
  const primary = path.join(dir, 'primary');
  const standby = path.join(dir, 'standby');
  const settings = (port: number) =>
    `\nport = ${port}\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '${dir}'\nwal_level = replica\nmax_wal_senders = 5\nfsync = ${options.fsync ? 'on' : 'off'}\nautovacuum = off\n`;
  const stop = () => {
    for (const data of [standby, primary]) if (existsSync(path.join(data, 'postmaster.pid'))) spawnSync(path.join(bin, 'pg_ctl'), ['-D', data, '-m', 'immediate', 'stop'], { ...(user ?? {}), timeout: 30_000 });
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    run('initdb', ['-D', primary, '-U', 'postgres', '--auth=trust', '--no-sync']);
    appendFileSync(path.join(primary, 'postgresql.conf'), settings(primaryPort));
    run('pg_ctl', ['-D', primary, '-l', path.join(dir, 'primary.log'), '-w', 'start']);
    run('pg_basebackup', ['-h', '127.0.0.1', '-p', String(primaryPort), '-U', 'postgres', '-D', standby, '-R', '-X', 'stream']);
    appendFileSync(path.join(standby, 'postgresql.conf'), settings(standbyPort));
    run('pg_ctl', ['-D', standby, '-l', path.join(dir, 'standby.log'), '-w', 'start']);
  } catch (error) {
    stop();
    throw error;
  }
  const primaryUrl = `postgresql://postgres@127.0.0.1:${primaryPort}/postgres`;
  return {
    primaryUrl,
    standbyUrl: `postgresql://postgres@127.0.0.1:${standbyPort}/postgres`,
    bothUrl: `postgresql://postgres@127.0.0.1:${primaryPort},127.0.0.1:${standbyPort}/postgres?target_session_attrs=read-write`,
    async setSynchronous(on) {
      // ALTER SYSTEM writes the primary's postgresql.auto.conf only: the standby, once promoted,
      // must not wait for a standby of its own.
      const sql = new Client({ connectionString: primaryUrl });
      await sql.connect();
      try {
        await sql.query(`ALTER SYSTEM SET synchronous_standby_names = '${on ? '*' : ''}'`);
        await sql.query('SELECT pg_reload_conf()');
        await until(async () => (await sql.query("SELECT sync_state FROM pg_stat_replication")).rows[0]?.sync_state === (on ? 'sync' : 'async'), {
          message: `the standby to be ${on ? 'synchronous' : 'asynchronous'}`,
          timeoutMs: 10_000,
          intervalMs: 50,
        });
      } finally {
        await sql.end();
      }
    },
    killPrimary() {
      const pidFile = path.join(primary, 'postmaster.pid');
      const postmaster = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
      // Every process of the server, read before any dies (an orphaned backend could still commit).
      const backends = readdirSync('/proc')
        .filter((p) => /^\d+$/.test(p))
        .filter((p) => {
          try {
            return Number(readFileSync(`/proc/${p}/stat`, 'utf8').split(') ')[1]!.split(' ')[1]) === postmaster;
          } catch {
            return false; // gone meanwhile
          }
        })
        .map(Number);
      // Backends first: a backend that outlived its postmaster by a moment would notice and say goodbye.
      for (const pid of [...backends, postmaster]) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
      rmSync(pidFile, { force: true });
    },
    async promoteStandby() {
      // Asynchronously: the drill's clients live in this process and keep going meanwhile.
      await promisify(execFile)(path.join(bin, 'pg_ctl'), ['-D', standby, '-w', '-t', '60', 'promote'], { ...(user ?? {}), cwd: dir, timeout: 60_000 });
    },
    stop,
  };
}
