// A real Patroni cluster for the failover drill (test/chaos/failover.ts): one etcd and two PostgreSQL
// nodes, each under its own Patroni, all in a temporary folder and on free ports, torn down with
// SIGKILL when done (also when the drill fails). Patroni decides who leads and promotes; the drill
// only injects the faults a failover manager is there for:
//
// - kill(): the leader's host dies — its Patroni, its postmaster and every backend SIGKILLed at once;
// - freeze(): the leader's host stops answering but nothing closes — Patroni, the postmaster and
//   every backend SIGSTOPped, as a powered-off or partitioned host looks to the others: its TCP
//   connections stay open and silent, and its Patroni cannot demote it cleanly;
// - switchover(): a planned change of leader with `patronictl switchover`.
//
// Timing (bootstrap.dcs; Patroni 3.0.2, etcd 3.4.23): ttl 10, loop_wait 1, retry_timeout 4.
// The leader renews its key in etcd every loop (1 s); when it dies the key lapses `ttl` after the
// last renewal, so the other node's Patroni starts the leader race 9–10 s after the fault (etcd
// expires leases in rounds of 0.5 s), asks the old leader's REST API for its state (refused at once
// when killed; a 2 s timeout when frozen), takes the key and promotes: 9.5–12.5 s measured from fault to
// promotion. loop_wait + 2 × retry_timeout = 9 ≤ ttl, Patroni's rule for a leader that loses etcd
// for up to retry_timeout to keep its key. Smaller values are possible with 3.0.2 but leave the
// leader less than 4 s to renew its key on a loaded 2-core machine before it demotes itself; later
// Patroni releases document minimums of ttl 20, loop_wait 1, retry_timeout 3 (the defaults,
// 30/10/10, give up to 30 s).
//
// The nodes replicate over a link that delays every byte LINK_DELAY_MS each way (a proxy in this
// process; Patroni's postgresql.connect_address points at it, so every primary_conninfo, pg_rewind
// and pg_basebackup goes through it), as a network between two zones does: on one machine a standby
// would otherwise receive every commit within microseconds and asynchronous replication would look
// free. Clients (Tessera) connect to each node's own port directly.
//
// As root, PostgreSQL and Patroni run as the OS user `postgres` (PostgreSQL refuses root; Patroni
// must run as the owner of the data directories); etcd and patronictl run as the caller.
import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { accessSync, chmodSync, chownSync, constants, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Client } from 'pg';
import { freePort } from '../helpers/process';
import { postgresBinaries } from '../helpers/replica';
import { sleep, until } from '../helpers/time';

/** Patroni's timing, bootstrap.dcs (see above). */
export const PATRONI_DCS = { ttl: 10, loop_wait: 1, retry_timeout: 4 } as const;

/** The replication link's one-way delay: about what separates two zones of a region. */
export const LINK_DELAY_MS = 5;

/** The versions the drill was written and measured with (docs/RELIABILITY.md). */
export const TESTED_WITH = 'Patroni 3.0.2, etcd 3.4.23, PostgreSQL 15';

export interface PatroniNode {
  readonly name: string;
  /** PostgreSQL's own port (clients connect here directly). */
  readonly pgPort: number;
  /** Patroni's REST API. */
  readonly apiPort: number;
  /** This node's PostgreSQL, database postgres. */
  readonly url: string;
  /** Its Patroni configuration (patronictl -c). */
  readonly configFile: string;
}

export interface PatroniCluster {
  readonly nodes: readonly PatroniNode[];
  /** Both nodes as a libpq multi-host URL asking for the read-write one (database postgres). */
  readonly url: string;
  readonly synchronous: boolean;
  /** What runs: "Patroni 3.0.2", "etcd 3.4.23". */
  readonly versions: { patroni: string; etcd: string };
  node(name: string): PatroniNode;
  /** The leader as Patroni's REST API (GET /cluster) names it, asked of the nodes still up; null: none. */
  leader(): Promise<string | null>;
  /** Waits for a leader (other than `not`), as the REST API names it; returns it and when it was seen. */
  waitForLeader(options?: { not?: string; timeoutMs?: number }): Promise<{ name: string; seenAt: number }>;
  /** Waits until the leader streams to the other node (synchronously, with synchronous_mode on). */
  waitForReplication(timeoutMs?: number): Promise<void>;
  /**
   * When `name` became the leader, read from Patroni (GET /history: the time of the timeline switch
   * of its promotion, the new timeline's history file); null if Patroni has not recorded it in time.
   */
  promotedAt(name: string, timeoutMs?: number): Promise<number | null>;
  /** The node's host dies: its link severed, Patroni, the postmaster and every backend SIGKILLed at once. */
  kill(name: string): Promise<void>;
  /** The node's host freezes: its link stalls, Patroni, the postmaster and every backend SIGSTOPped. */
  freeze(name: string): Promise<void>;
  /** SIGCONT to what freeze() stopped (its link stays cut). */
  thaw(name: string): void;
  /** `patronictl switchover --leader --candidate --force`; resolves with its output. */
  switchover(leader: string, candidate: string): Promise<string>;
  /** The last lines of a node's Patroni and PostgreSQL output (or every node's). */
  log(name?: string): string;
  /** SIGKILLs everything started (SIGCONT too, for what was frozen) and removes the folders. */
  stop(): Promise<void>;
}

export type PatroniStart = { cluster: PatroniCluster; skipped?: undefined } | { cluster?: undefined; skipped: string };

/** Starts etcd and two Patroni nodes and waits for a leader replicating to the other node. */
export async function startPatroniCluster(options: { synchronous: boolean; linkDelayMs?: number }): Promise<PatroniStart> {
  const tools = findTools();
  if ('missing' in tools) return { skipped: `no PostgreSQL binaries, Patroni or etcd on this machine: ${tools.missing} not found (Debian: apt-get install patroni etcd-server postgresql)` };
  const root = process.getuid?.() === 0;
  let user: { uid: number; gid: number } | undefined;
  if (root) {
    try {
      user = { uid: Number(execFileSync('id', ['-u', 'postgres']).toString()), gid: Number(execFileSync('id', ['-g', 'postgres']).toString()) };
    } catch {
      return { skipped: 'no PostgreSQL binaries, Patroni or etcd on this machine: as root they need the OS user postgres, and there is none' };
    }
  }
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tessera-patroni-'));
  chmodSync(dir, 0o755);
  if (user) chownSync(dir, user.uid, user.gid);
  // etcd 3.4 has no --unsafe-no-fsync (3.5 has): its data lives in memory (/dev/shm) when it can,
  // where an fsync costs nothing.
  const etcdDir = mkdtempSync(path.join(writable('/dev/shm') ? '/dev/shm' : dir, 'tessera-etcd-'));
  const cluster = new Cluster(dir, etcdDir, tools, user, options.synchronous, options.linkDelayMs ?? LINK_DELAY_MS);
  try {
    await cluster.start();
    return { cluster };
  } catch (error) {
    const log = cluster.log();
    await cluster.stop();
    throw new Error(`the Patroni cluster did not start: ${(error as Error).message}\n--- logs ---\n${log}`, { cause: error });
  }
}

interface Tools {
  patroni: string;
  patronictl: string;
  etcd: string;
  pgBin: string;
}

function findTools(): Tools | { missing: string } {
  const pgBin = postgresBinaries();
  if (!pgBin) return { missing: 'PostgreSQL (initdb, pg_basebackup; PG_BIN)' };
  const found: Partial<Tools> = { pgBin };
  for (const tool of ['patroni', 'patronictl', 'etcd'] as const) {
    const file = which(tool);
    if (!file) return { missing: tool };
    found[tool] = file;
  }
  return found as Tools;
}

function which(name: string): string | null {
  for (const folder of (process.env.PATH ?? '').split(':')) {
    if (!folder) continue;
    const file = path.join(folder, name);
    try {
      accessSync(file, constants.X_OK);
      return file;
    } catch {
      // not here
    }
  }
  return null;
}

function writable(folder: string): boolean {
  try {
    accessSync(folder, constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

// --- processes, from /proc (no procps needed) ---

function stat(pid: number): { state: string; ppid: number } | null {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return { state: fields[0]!, ppid: Number(fields[1]) };
  } catch {
    return null; // gone
  }
}

function pids(): number[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .map(Number);
}

function cmdline(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
  } catch {
    return '';
  }
}

/** `roots` and every process descending from them (by parent pid, read once). */
function withDescendants(roots: number[]): number[] {
  const parents = new Map<number, number[]>();
  for (const pid of pids()) {
    const s = stat(pid);
    if (s) parents.set(s.ppid, [...(parents.get(s.ppid) ?? []), pid]);
  }
  const all = new Set<number>();
  const walk = (pid: number) => {
    if (all.has(pid)) return;
    all.add(pid);
    for (const child of parents.get(pid) ?? []) walk(child);
  };
  for (const pid of roots) walk(pid);
  return [...all];
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    // already gone
  }
}

const alive = (pid: number) => {
  const s = stat(pid);
  return s !== null && s.state !== 'Z' && s.state !== 'X';
};

/** Waits (briefly, synchronously) until each pid is stopped or gone: a signal takes effect when its target next runs. */
function awaitStopped(list: number[]): void {
  const deadline = Date.now() + 500;
  const pause = new Int32Array(new SharedArrayBuffer(4));
  while (Date.now() < deadline && list.some((pid) => alive(pid) && stat(pid)?.state !== 'T' && stat(pid)?.state !== 't')) Atomics.wait(pause, 0, 0, 1);
}

// --- the replication link ---

interface Link {
  port: number;
  /** The host's network goes away at once: connections cut, what was on its way dropped. */
  sever(): void;
  /** The host goes silent: nothing more is forwarded (what was on its way is dropped), nothing is closed. */
  stall(): void;
  close(): void;
}

/** A TCP proxy to `targetPort` that delays every chunk by `delayMs` each way, in order. */
async function delayedLink(targetPort: number, delayMs: number): Promise<Link> {
  const sockets = new Set<Socket>();
  let stalled = false;
  const server = createServer((down) => {
    sockets.add(down);
    down.on('error', () => down.destroy());
    down.on('close', () => sockets.delete(down));
    if (stalled) return; // a silent host: the connection goes nowhere
    const up = connect(targetPort, '127.0.0.1');
    sockets.add(up);
    const end = () => {
      for (const s of [up, down]) {
        s.destroy();
        sockets.delete(s);
      }
    };
    for (const [from, to] of [
      [down, up],
      [up, down],
    ] as const) {
      // Timers of one duration fire in the order they were set: the stream stays in order.
      from.on('data', (chunk) => setTimeout(() => stalled || to.destroyed || to.write(chunk), delayMs));
      from.on('close', end);
      from.on('error', end);
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const sever = () => {
    for (const s of sockets) s.destroy(); // chunks still on their way are dropped with the sockets
    sockets.clear();
  };
  return {
    port: (server.address() as AddressInfo).port,
    sever,
    stall: () => {
      stalled = true;
    },
    close() {
      sever();
      server.close();
    },
  };
}

// --- the cluster ---

interface Member {
  name: string;
  role: string;
  state: string;
}

interface Node extends PatroniNode {
  readonly dir: string;
  readonly dataDir: string;
  link: Link | null;
  patroni: ChildProcess | null;
  output: string;
  /** Killed or frozen: its REST API is not asked. */
  down: 'killed' | 'frozen' | null;
  /** What freeze() stopped. */
  frozen: number[];
}

class Cluster implements PatroniCluster {
  readonly nodes: Node[] = [];
  url = '';
  versions = { patroni: 'Patroni', etcd: 'etcd' };
  private etcd: ChildProcess | null = null;
  private etcdOutput = '';
  private stopped = false;
  private readonly onExit = () => {
    this.killAll();
    for (const folder of [this.dir, this.etcdDir]) rmSync(folder, { recursive: true, force: true });
  };

  constructor(
    private readonly dir: string,
    private readonly etcdDir: string,
    private readonly tools: Tools,
    private readonly user: { uid: number; gid: number } | undefined,
    readonly synchronous: boolean,
    private readonly linkDelayMs: number,
  ) {}

  async start(): Promise<void> {
    process.once('exit', this.onExit); // whatever happens to this process, nothing it started outlives it
    const version = (tool: string) => /\d+\.\d+\.\d+/.exec(execFileSync(tool, ['--version'], { encoding: 'utf8', timeout: 30_000 }))?.[0] ?? '?';
    this.versions = { patroni: `Patroni ${version(this.tools.patroni)}`, etcd: `etcd ${version(this.tools.etcd)}` };
    const [clientPort, peerPort] = [await freePort(), await freePort()];
    this.etcd = spawn(
      this.tools.etcd,
      [
        '--name=drill',
        `--data-dir=${path.join(this.etcdDir, 'data')}`,
        `--listen-client-urls=http://127.0.0.1:${clientPort}`,
        `--advertise-client-urls=http://127.0.0.1:${clientPort}`,
        `--listen-peer-urls=http://127.0.0.1:${peerPort}`,
        `--initial-advertise-peer-urls=http://127.0.0.1:${peerPort}`,
        `--initial-cluster=drill=http://127.0.0.1:${peerPort}`,
        '--logger=zap',
        '--log-level=warn',
      ],
      { detached: true, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const keep = (d: Buffer) => (this.etcdOutput = (this.etcdOutput + d.toString()).slice(-8000));
    this.etcd.stdout!.on('data', keep);
    this.etcd.stderr!.on('data', keep);
    await until(
      async () => {
        if (this.etcd!.exitCode !== null) throw new Error(`etcd exited with ${this.etcd!.exitCode}: ${this.etcdOutput}`);
        return (await getJson<{ health?: string }>(`http://127.0.0.1:${clientPort}/health`, 1000))?.health === 'true';
      },
      { message: 'etcd to be healthy', timeoutMs: 30_000, intervalMs: 100 },
    );
    for (const name of ['node0', 'node1']) {
      const dir = path.join(this.dir, name);
      mkdirSync(dir, { mode: 0o700 });
      if (this.user) chownSync(dir, this.user.uid, this.user.gid);
      const [pgPort, apiPort] = [await freePort(), await freePort()];
      const link = this.linkDelayMs > 0 ? await delayedLink(pgPort, this.linkDelayMs) : null;
      const configFile = path.join(dir, 'patroni.yml');
      const dataDir = path.join(dir, 'data');
      // JSON is YAML: no YAML library needed.
      const config = {
        scope: 'tessera-drill',
        namespace: '/service/',
        name,
        restapi: { listen: `127.0.0.1:${apiPort}`, connect_address: `127.0.0.1:${apiPort}` },
        etcd3: { hosts: [`127.0.0.1:${clientPort}`] },
        watchdog: { mode: 'off' },
        bootstrap: {
          dcs: {
            ...PATRONI_DCS,
            maximum_lag_on_failover: 1048576,
            synchronous_mode: this.synchronous,
            postgresql: {
              use_pg_rewind: true,
              remove_data_directory_on_rewind_failure: true,
              use_slots: true,
              // The old drill's servers: fsync off (nothing here survives the machine; a killed node is
              // never started again), no autovacuum (the other tests' server has none either).
              parameters: {
                wal_level: 'replica',
                hot_standby: 'on',
                max_wal_senders: 5,
                max_replication_slots: 5,
                fsync: 'off',
                autovacuum: 'off',
                // A standby that connects before the leader made its slot retries in 0.5 s, not 5 s.
                wal_retrieve_retry_interval: '500ms',
              },
            },
          },
          initdb: [{ encoding: 'UTF8' }, 'no-sync'],
        },
        postgresql: {
          listen: `127.0.0.1:${pgPort}`,
          // Where the other node (and patronictl) reaches this one: through the delayed link.
          connect_address: `127.0.0.1:${link?.port ?? pgPort}`,
          data_dir: dataDir,
          bin_dir: this.tools.pgBin,
          pgpass: path.join(dir, 'pgpass'),
          authentication: { superuser: { username: 'postgres' }, replication: { username: 'postgres' } },
          parameters: { unix_socket_directories: dir },
          pg_hba: ['local all all trust', 'local replication all trust', 'host all all 127.0.0.1/32 trust', 'host replication all 127.0.0.1/32 trust'],
          basebackup: [{ checkpoint: 'fast' }],
        },
      };
      writeFileSync(configFile, JSON.stringify(config, null, 2), { mode: 0o644 });
      this.nodes.push({ name, pgPort, apiPort, url: `postgresql://postgres@127.0.0.1:${pgPort}/postgres`, configFile, dir, dataDir, link, patroni: null, output: '', down: null, frozen: [] });
    }
    this.url = `postgresql://postgres@${this.nodes.map((n) => `127.0.0.1:${n.pgPort}`).join(',')}/postgres?target_session_attrs=read-write`;
    // Both at once: one wins the initialize key and bootstraps, the other clones it.
    for (const node of this.nodes) this.spawnPatroni(node);
    await this.waitForLeader({ timeoutMs: 60_000 });
    await this.waitForReplication(60_000);
  }

  private spawnPatroni(node: Node): void {
    const env: NodeJS.ProcessEnv = { ...process.env, HOME: node.dir };
    for (const key of Object.keys(env)) if (key.startsWith('PATRONI_') || key.startsWith('PG')) delete env[key];
    // Its own process group: a signal to the group reaches Patroni and whatever it runs (pg_ctl,
    // pg_basebackup); the postmaster has a session of its own (Patroni starts it with setsid).
    const child = spawn(this.tools.patroni, [node.configFile], { ...(this.user ?? {}), cwd: node.dir, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    const keep = (d: Buffer) => (node.output = (node.output + d.toString()).slice(-30_000));
    child.stdout!.on('data', keep);
    child.stderr!.on('data', keep);
    child.on('error', (error) => keep(Buffer.from(`\nspawn failed: ${error.message}\n`)));
    node.patroni = child;
  }

  node(name: string): Node {
    const node = this.nodes.find((n) => n.name === name);
    if (!node) throw new Error(`no node ${name}`);
    return node;
  }

  private async members(): Promise<Member[] | null> {
    const answers = await Promise.all(
      this.nodes.filter((n) => n.down === null).map((n) => getJson<{ members?: Member[] }>(`http://127.0.0.1:${n.apiPort}/cluster`, 1000)),
    );
    return answers.find((a) => a?.members)?.members ?? null;
  }

  async leader(): Promise<string | null> {
    return (await this.members())?.find((m) => m.role === 'leader' && m.state === 'running')?.name ?? null;
  }

  async waitForLeader(options: { not?: string; timeoutMs?: number } = {}): Promise<{ name: string; seenAt: number }> {
    const name = await until(
      async () => {
        for (const node of this.nodes) {
          const exited = node.patroni && (node.patroni.exitCode ?? node.patroni.signalCode);
          if (exited !== null && exited !== undefined && node.down === null) throw new Error(`Patroni of ${node.name} exited (${exited})`);
        }
        const leader = await this.leader();
        return leader !== null && leader !== options.not ? leader : null;
      },
      { message: options.not ? `Patroni to elect a leader other than ${options.not}` : 'Patroni to elect a leader', timeoutMs: options.timeoutMs ?? 60_000, intervalMs: 50 },
    );
    return { name, seenAt: Date.now() };
  }

  async waitForReplication(timeoutMs = 60_000): Promise<void> {
    const leader = (await this.waitForLeader({ timeoutMs })).name;
    const replica = this.nodes.find((n) => n.name !== leader)!.name;
    const sql = new Client({ connectionString: this.node(leader).url });
    sql.on('error', () => undefined);
    await sql.connect();
    try {
      await until(
        async () => {
          const { rows } = await sql.query<{ state: string; sync_state: string }>('SELECT state, sync_state FROM pg_stat_replication WHERE application_name = $1', [replica]);
          const streaming = rows[0]?.state === 'streaming';
          if (!this.synchronous) return streaming;
          // Patroni names its synchronous standby in etcd (role sync_standby) and in synchronous_standby_names.
          return streaming && rows[0]?.sync_state === 'sync' && (await this.members())?.find((m) => m.name === replica)?.role === 'sync_standby';
        },
        { message: `${replica} to stream from ${leader}${this.synchronous ? ' as its synchronous standby' : ''}`, timeoutMs, intervalMs: 100 },
      );
    } finally {
      await sql.end().catch(() => undefined);
    }
  }

  async promotedAt(name: string, timeoutMs = 10_000): Promise<number | null> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      // [timeline, lsn, reason, timestamp, new leader], the new leader's Patroni writes it after its promotion.
      const history = await getJson<unknown[][]>(`http://127.0.0.1:${this.node(name).apiPort}/history`, 1000);
      const line = history?.filter((l) => Array.isArray(l) && l[4] === name).at(-1);
      if (line && typeof line[3] === 'string') return Date.parse(line[3]);
      await sleep(200);
    }
    return null;
  }

  /** Stops the node's Patroni and PostgreSQL, and returns every process of it (none can fork any more). */
  private stopNode(node: Node): number[] {
    const patroni = node.patroni?.pid;
    if (patroni) signal(-patroni, 'SIGSTOP');
    // The postmaster first (it forks the backends), found by its data directory, then everything under it.
    const roots = this.processesOf(node);
    for (const pid of roots) signal(pid, 'SIGSTOP');
    awaitStopped(roots);
    const all = withDescendants([...roots, ...(patroni ? [patroni] : [])]);
    for (const pid of all) signal(pid, 'SIGSTOP');
    return all;
  }

  /** The node's processes found by their command line (the postmaster, pg_basebackup, patroni). */
  private processesOf(node: Node): number[] {
    const postmaster = Number(readFileSafe(path.join(node.dataDir, 'postmaster.pid')).split('\n')[0]);
    const found = pids().filter((pid) => pid !== process.pid && cmdline(pid).includes(node.dir));
    return [...new Set([...found, ...(postmaster > 0 && alive(postmaster) ? [postmaster] : [])])];
  }

  async kill(name: string): Promise<void> {
    const node = this.node(name);
    node.link?.sever(); // the host and its network go together
    const all = [...new Set([...node.frozen, ...this.stopNode(node)])];
    for (const pid of all) signal(pid, 'SIGKILL');
    if (node.patroni?.pid) signal(-node.patroni.pid, 'SIGKILL');
    for (const pid of all) signal(pid, 'SIGCONT'); // no-op for the dead; nothing stays stopped
    node.down = 'killed';
    node.frozen = [];
  }

  async freeze(name: string): Promise<void> {
    const node = this.node(name);
    node.link?.stall();
    node.frozen = this.stopNode(node);
    node.down = 'frozen';
  }

  thaw(name: string): void {
    const node = this.node(name);
    node.link?.sever();
    if (node.patroni?.pid) signal(-node.patroni.pid, 'SIGCONT');
    for (const pid of node.frozen) signal(pid, 'SIGCONT');
    node.frozen = [];
    node.down = null;
  }

  async switchover(leader: string, candidate: string): Promise<string> {
    const { stdout, stderr } = await promisify(execFile)(this.tools.patronictl, ['-c', this.node(leader).configFile, 'switchover', '--leader', leader, '--candidate', candidate, '--force'], {
      cwd: this.dir,
      timeout: 60_000,
      env: { ...process.env, HOME: this.dir },
    });
    return `${stdout}${stderr}`.trim();
  }

  log(name?: string): string {
    const nodes = name ? [this.node(name)] : this.nodes;
    return [...nodes.map((n) => `--- ${n.name} (Patroni and PostgreSQL) ---\n${n.output.slice(-6000)}`), ...(name ? [] : [`--- etcd ---\n${this.etcdOutput.slice(-2000)}`])].join('\n');
  }

  /** SIGKILL to everything this cluster started, synchronously (also from process.on('exit')). */
  private killAll(): number[] {
    const all = new Set<number>();
    for (const node of this.nodes) {
      for (const pid of [...node.frozen, ...this.stopNode(node)]) all.add(pid);
      if (node.patroni?.pid) signal(-node.patroni.pid, 'SIGKILL');
      node.link?.close();
    }
    if (this.etcd?.pid) {
      all.add(this.etcd.pid);
      signal(-this.etcd.pid, 'SIGKILL');
    }
    for (const pid of all) signal(pid, 'SIGKILL');
    // SIGKILL ends a stopped process too; SIGCONT as well, so that nothing can stay stopped.
    for (const pid of all) signal(pid, 'SIGCONT');
    return [...all];
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    const all = this.killAll();
    process.removeListener('exit', this.onExit);
    try {
      await until(() => all.every((pid) => !alive(pid)) && this.nodes.every((n) => this.processesOf(n).length === 0), {
        message: 'every process of the Patroni cluster to end',
        timeoutMs: 10_000,
      });
    } finally {
      rmSync(this.dir, { recursive: true, force: true });
      rmSync(this.etcdDir, { recursive: true, force: true });
    }
  }
}

function readFileSafe(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}

async function getJson<T>(url: string, timeoutMs: number): Promise<T | null> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
    return (await res.json()) as T;
  } catch {
    return null; // down, frozen (no answer in time), or not JSON
  }
}
