// CPU time where it is spent (issue 30): the Tessera process's and PostgreSQL's, read from /proc
// before and after a run at a fixed offered rate. A rate well under saturation makes the figure a
// cost, not a share: on two cores shared by the load generator, the server and the database, claims
// per second say who won the cores; CPU seconds per claim say what one claim costs.
//
// PostgreSQL's CPU is its whole server's — the postmaster, every backend and background process
// (WAL writer, checkpointer: a claim's commit is work there too) — including backends that exit
// during the run: the postmaster waits for each, and the kernel adds a reaped child's CPU to the
// parent's cutime/cstime (proc(5)). So: the postmaster's utime + stime + cutime + cstime, plus its
// live children's utime + stime.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import type { Client } from 'pg';

/** Clock ticks per second of /proc's CPU times (`getconf CLK_TCK`, 100 on Linux almost always). */
const TICKS = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

interface Stat {
  ppid: number;
  /** utime + stime, in seconds. */
  own: number;
  /** cutime + cstime (children waited for), in seconds. */
  reaped: number;
}

/** /proc/<pid>/stat, or null when the process is gone. Fields after "(comm)": state ppid … utime(14) stime(15) cutime(16) cstime(17). */
function stat(pid: number, file = `/proc/${pid}/stat`): Stat | null {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return null;
  }
  const f = text.slice(text.lastIndexOf(')') + 2).split(' ');
  const n = (field: number) => Number(f[field - 3]);
  return { ppid: n(4), own: (n(14) + n(15)) / TICKS, reaped: (n(16) + n(17)) / TICKS };
}

/** Every process's parent, read once. */
function parents(): Map<number, number> {
  const out = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const s = stat(Number(entry));
    if (s) out.set(Number(entry), s.ppid);
  }
  return out;
}

/** The process and its descendants. */
function tree(pid: number): number[] {
  const byParent = new Map<number, number[]>();
  for (const [child, parent] of parents()) byParent.set(parent, [...(byParent.get(parent) ?? []), child]);
  const out: number[] = [];
  const walk = (p: number) => {
    out.push(p);
    for (const c of byParent.get(p) ?? []) walk(c);
  };
  walk(pid);
  return out;
}

/** CPU seconds of a process and its live descendants, and of the descendants it has waited for. */
export function treeCpu(pid: number): number {
  return tree(pid).reduce((sum, p, i) => {
    const s = stat(p);
    return sum + (s ? s.own + (i === 0 ? s.reaped : 0) : 0);
  }, 0);
}

/**
 * The postmaster of the server `sql` is connected to, when it runs on this machine (its backend is
 * a process here whose parent is a process here); null otherwise (a remote server: no /proc to read).
 */
export async function postmasterOf(sql: Client): Promise<number | null> {
  const backend = (await sql.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
  const s = stat(backend);
  if (!s || !stat(s.ppid)) return null;
  try {
    if (!readFileSync(`/proc/${backend}/comm`, 'utf8').startsWith('postgres')) return null;
  } catch {
    return null;
  }
  return s.ppid;
}

/** CPU seconds spent by `read()`'s processes while `run` ran, with its result. */
export async function cpuDuring<T>(read: () => number, run: () => Promise<T>): Promise<{ result: T; seconds: number }> {
  const before = read();
  const result = await run();
  return { result, seconds: read() - before };
}

/** CPU seconds of a process's main thread alone (/proc/<pid>/task/<pid>/stat, the same fields): a Node process's event loop, without its worker threads. */
export function mainThreadCpu(pid: number): number {
  return stat(pid, `/proc/${pid}/task/${pid}/stat`)?.own ?? 0;
}
