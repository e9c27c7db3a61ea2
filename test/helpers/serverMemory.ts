// A server under attack, seen from outside: its resident memory (from /proc) and how fast GET /healthz
// answers meanwhile. For the tests that send a server in a child process more than it should read.
import { readFileSync } from 'node:fs';
import http from 'node:http';
import { ADMIN_KEY, postGraphQL } from './graphql';
import { sleep, until } from './time';
import { connectSocket, runOverSocket } from './ws';

/** A process's resident memory in MB, from /proc (what the attacker reports measured). */
export const rssMb = (pid: number): number => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;

/** GET /healthz on a kept-alive connection: its status and how long it took. */
export const healthz = (port: number, agent: http.Agent): Promise<{ status: number; ms: number }> =>
  new Promise((resolve) => {
    const started = performance.now();
    const request = http.get({ host: '127.0.0.1', port, path: '/healthz', agent, timeout: 5_000 }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - started }));
    });
    request.on('timeout', () => request.destroy());
    request.on('error', () => resolve({ status: 0, ms: performance.now() - started }));
  });

/**
 * Whatever first use allocates, allocated before the baseline: a fresh server's RSS grows by about
 * 110 MB in its first two seconds (measured here: 151 → 262 MB, then down to 181 MB when V8 shrinks
 * its heaps after ~10 s), so a query, a socket with a subscription, and a few probes go first.
 */
export async function warmUp(port: number, agent: http.Agent): Promise<void> {
  const url = `http://127.0.0.1:${port}/graphql`;
  const campaign = await postGraphQL<any>(url, ADMIN_KEY, 'mutation { createCampaign(input: { name: "warm-up" }) { campaign { id } } }');
  const s = connectSocket(url, ADMIN_KEY);
  try {
    const live = 'subscription Live($id: ID!) { campaignStats(id: $id) { total allocated available } }';
    await runOverSocket(s, { query: live, variables: { id: campaign.body.data.createCampaign.campaign.id } });
  } finally {
    await s.dispose();
  }
  for (let i = 0; i < 20; i += 1) await healthz(port, agent);
}

/** The process's RSS once it has stayed within 3 MB for 2 s (sampled every 250 ms). */
export async function settledRss(pid: number): Promise<number> {
  const samples: number[] = [];
  return until(
    () => {
      samples.push(rssMb(pid));
      const last = samples.slice(-8);
      return last.length === 8 && Math.max(...last) - Math.min(...last) < 3 ? Math.max(...last) : null;
    },
    { message: "the server's memory to settle", timeoutMs: 20_000, intervalMs: 250 },
  );
}

/** GET /healthz every 20 ms until `done` settles; every answer, and the peak RSS seen meanwhile. */
export async function probeUntil(port: number, pid: number, agent: http.Agent, done: Promise<unknown>): Promise<{ answers: { status: number; ms: number }[]; peak: number; slowest: number }> {
  let over = false;
  void done.finally(() => (over = true));
  const answers: { status: number; ms: number }[] = [];
  let peak = 0;
  while (!over) {
    const started = performance.now();
    answers.push(await healthz(port, agent));
    peak = Math.max(peak, rssMb(pid));
    await sleep(Math.max(0, 20 - (performance.now() - started)));
  }
  return { answers, peak, slowest: Math.max(...answers.map((a) => a.ms)) };
}
