// One process or a cluster of workers (WEB_CONCURRENCY, one per core) beside PostgreSQL on this
// machine: hot claims at 64 connections in alternating runs, two of each, so that drift in the
// machine's speed falls on both alike; then the cluster's empty-query ceiling. No bar: it says which
// is faster here (the default follows).
import os from 'node:os';
import { DEFAULT_WEB_CONCURRENCY } from '../../src/config';
import { childrenOf, untilEveryWorkerServes } from '../../test/helpers/process';
import { freePort, httpLoad, Server, type LoadResult } from '../harness';
import { CLAIM, CLAIMED, TYPENAME, vacuum, verify, type Experiment } from './context';
import { http, mean, perSecond, ratio, type Report } from './report';
import { SECONDS } from './settings';

export const workers: Experiment = {
  name: 'workers',
  summary: 'hot claims with WEB_CONCURRENCY=1 against one worker per core, alternating',
  async run(ctx, report: Report) {
    const { pool } = await ctx.pools();
    const count = Math.max(2, os.availableParallelism());
    const clustered = new Server(await freePort(), { ...ctx.serverEnv, WEB_CONCURRENCY: String(count) });
    const ours = new Set(childrenOf(process.pid));
    await clustered.start();
    try {
      // Every worker serving, not just the first (/readyz answers as soon as one does).
      const primary = childrenOf(process.pid).filter((pid) => !ours.has(pid));
      if (primary.length !== 1) throw new Error(`cannot tell the clustered server's process among ${primary.join(', ')}`);
      await untilEveryWorkerServes(primary[0]!, clustered.port, count, { timeoutMs: 90_000 });
      const byWorkers = new Map<number, LoadResult[]>([
        [1, []],
        [count, []],
      ]);
      for (let round = 0; round < 2; round += 1) {
        for (const [n, target] of [
          [1, ctx.server],
          [count, clustered],
        ] as const) {
          await vacuum(ctx.sql);
          const run = ctx.nextRun();
          const r = await httpLoad({ url: target.url, key: ctx.partnerKey, body: CLAIM(pool, run), connections: 64, seconds: SECONDS, okPattern: CLAIMED });
          await verify(ctx, r, run, [pool], 64, `claims with ${n} workers`);
          byWorkers.get(n)!.push(r);
        }
      }
      const one = mean(byWorkers.get(1)!);
      const many = mean(byWorkers.get(count)!);
      report.record('claimTicket, hot, 64 connections, WEB_CONCURRENCY=1 (mean of 2 runs)', perSecond(one));
      report.record(`claimTicket, hot, 64 connections, WEB_CONCURRENCY=${count} (mean of 2 runs)`, perSecond(many));
      report.record(`WEB_CONCURRENCY=${count} ÷ WEB_CONCURRENCY=1, claims/s`, ratio(many.rps, one.rps));
      report.record(`faster here (the default is ${DEFAULT_WEB_CONCURRENCY})`, `WEB_CONCURRENCY=${many.rps > one.rps ? count : 1}`);
      const clusterCeiling = await httpLoad({ url: clustered.url, key: ctx.partnerKey, body: TYPENAME, connections: 64, seconds: SECONDS });
      report.record(`ceiling: Tessera, { __typename }, 64 connections, WEB_CONCURRENCY=${count}`, perSecond(http(clusterCeiling)));
    } finally {
      await clustered.stop();
    }
  },
};
