// Machine figures: RSS from /proc, CPU by who used it, connections, load; the server's /metrics.
import { readFileSync } from 'node:fs';
import os from 'node:os';
import type { Client } from 'pg';
import { METRICS_TOKEN } from './settings';

export function rssBytes(pid: number): number | null {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : null;
  } catch {
    return null;
  }
}
/** utime + stime of a process, in clock ticks (the unit of /proc/stat). */
export function processTicks(pid: number | 'self'): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(f[11]) + Number(f[12]);
  } catch {
    return 0;
  }
}
export function machineTicks(): { busy: number; total: number } {
  try {
    const f = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
    const [user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0] = f;
    const busy = user + nice + system + irq + softirq + steal;
    return { busy, total: busy + idle + iowait };
  } catch {
    return { busy: 0, total: 0 };
  }
}

/** CPU used over a window, in cores (CPU-seconds per second). */
export interface CpuShares {
  /** This process: the load generator. */
  client: number;
  server: number;
  /** The soak database's backends (0 when PostgreSQL is on another machine). */
  database: number;
  /**
   * Everything else on the machine: its busy time less the three above. PostgreSQL's shared
   * background processes (WAL writer, checkpointer) count here, so the figure errs high when the
   * soak's own writes keep them busy.
   */
  others: number;
}

export class CpuAccount {
  private last = { machine: machineTicks(), self: processTicks('self'), server: 0, backends: new Map<number, number>() };
  constructor(
    private readonly serverPid: number,
    private readonly sql: Client,
  ) {
    this.last.server = processTicks(serverPid);
  }
  async shares(): Promise<CpuShares> {
    const pids = (await this.sql.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = current_database()')).rows.map((r) => r.pid);
    const machine = machineTicks();
    const self = processTicks('self');
    const server = processTicks(this.serverPid);
    const backends = new Map(pids.map((pid) => [pid, processTicks(pid)]));
    let database = 0;
    for (const [pid, ticks] of backends) database += ticks - (this.last.backends.get(pid) ?? 0);
    const client = self - this.last.self;
    const serverTicks = server - this.last.server;
    const total = machine.total - this.last.machine.total;
    const busy = machine.busy - this.last.machine.busy;
    this.last = { machine, self, server, backends };
    if (total <= 0) return { client: NaN, server: NaN, database: NaN, others: 0 };
    // Ticks of the machine (all cores) → cores.
    const cores = os.cpus().length;
    const toCores = (ticks: number) => (ticks / total) * cores;
    return {
      client: toCores(client),
      server: toCores(serverTicks),
      database: toCores(database),
      others: Math.min(cores, Math.max(0, toCores(busy - client - serverTicks - database))),
    };
  }
}

export async function metricsOf(url: string): Promise<Map<string, number>> {
  const text = await (await fetch(url.replace('/graphql', '/metrics'), { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).text();
  const values = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line.startsWith('#') || !line) continue;
    const at = line.lastIndexOf(' ');
    values.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return values;
}
