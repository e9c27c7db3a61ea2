// A primary and a streaming standby of our own, in a temporary folder: `initdb`, `pg_basebackup -R`
// and `pg_ctl` of the machine's PostgreSQL (Debian's /usr/lib/postgresql/<v>/bin, or PG_BIN). As
// root they run as the OS user `postgres`, as PostgreSQL requires. Machines without those binaries
// (the embedded PostgreSQL has no pg_basebackup) get null, and the replica tests say they skipped.
import { execFileSync, spawnSync } from 'node:child_process';
import { appendFileSync, chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from './process';

export interface ReplicaPair {
  primaryUrl: string;
  standbyUrl: string;
  stop(): void;
}

function binaries(): string | null {
  if (process.env.PG_BIN) return existsSync(path.join(process.env.PG_BIN, 'pg_basebackup')) ? process.env.PG_BIN : null;
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return null;
  const versions = readdirSync(root).filter((v) => existsSync(path.join(root, v, 'bin', 'pg_basebackup'))).sort((a, b) => Number(b) - Number(a));
  return versions[0] ? path.join(root, versions[0], 'bin') : null;
}

/** Starts a primary and a standby streaming from it; null when this machine has no PostgreSQL binaries. */
export async function startReplicaPair(): Promise<ReplicaPair | null> {
  const bin = binaries();
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
    `\nport = ${port}\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '${dir}'\nwal_level = replica\nmax_wal_senders = 5\nfsync = off\nautovacuum = off\n`;
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
  return {
    primaryUrl: `postgresql://postgres@127.0.0.1:${primaryPort}/postgres`,
    standbyUrl: `postgresql://postgres@127.0.0.1:${standbyPort}/postgres`,
    stop,
  };
}
