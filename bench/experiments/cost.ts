// CPU per claim: open-loop runs at COST_RATE requests a second for COST_SECONDS, 64 connections,
// well under saturation, reading the CPU time of the Tessera process (and any child) and of
// PostgreSQL's whole server from /proc (bench/cpu.ts) over each run, per request answered (per claim
// acknowledged): the empty authenticated query (what Node spends on a request), then claimTicket hot
// and spread. Skipped (and said) where either process is not on this machine.
// Bar, hot and spread: CPU per claim ÷ (the empty query's Node CPU + the minimal claim's PostgreSQL
// CPU, from the floor experiment) ≤ 1.50×.
import { treeCpu } from '../cpu';
import { httpLoad } from '../harness';
import { CLAIM, CLAIMED, checkAnswers, needed, TYPENAME, vacuum, verify, type Experiment } from './context';
import { fmt, ms, us, x, type Report } from './report';
import { COST_RATE, COST_SECONDS } from './settings';

/** CPU per request of a run at COST_RATE: the Tessera process's and PostgreSQL's, in seconds. */
interface CpuPerRequest {
  node: number;
  pg: number;
}

export const cost: Experiment = {
  name: 'cost',
  summary: `CPU per claim at ${COST_RATE}/s offered, hot and spread, against the empty query's Node CPU plus the minimal claim's PostgreSQL CPU`,
  needs: ['floor'],
  async run(ctx, report: Report) {
    const floorCpu = needed(ctx.figures.floorCpu, "the minimal claim's CPU", 'floor');
    const node = ctx.server.pid;
    const postmaster = ctx.postmaster;
    if (!node || !postmaster) {
      report.record('CPU per claim: PostgreSQL is not on this machine (no /proc to read)', 'skipped');
      return;
    }
    const { pool, cool } = await ctx.pools();
    const out = {} as Record<'empty' | 'hot' | 'spread', CpuPerRequest>;
    for (const [name, ids] of [
      ['empty', []],
      ['hot', [pool]],
      ['spread', cool],
    ] as const) {
      await vacuum(ctx.sql);
      const run = ctx.nextRun();
      const bodies = name === 'empty' ? [TYPENAME] : ids.map((id) => CLAIM(id, run));
      const nodeBefore = treeCpu(node);
      const pgBefore = treeCpu(postmaster);
      const r = await httpLoad({
        url: ctx.server.url,
        key: ctx.partnerKey,
        body: bodies[0]!,
        bodies,
        connections: 64,
        seconds: COST_SECONDS,
        rate: COST_RATE,
        okPattern: name === 'empty' ? '"__typename":"Query"' : CLAIMED,
      });
      const cpu = { node: treeCpu(node) - nodeBefore, pg: treeCpu(postmaster) - pgBefore };
      if (name !== 'empty') await verify(ctx, r, run, [...ids], 64, `claims ${name} at ${COST_RATE}/s`);
      else checkAnswers(r, `{ __typename } at ${COST_RATE}/s`, ctx.failures);
      const answered = Math.max(1, r.ok);
      out[name] = { node: cpu.node / answered, pg: cpu.pg / answered };
      const rate = r.ok / COST_SECONDS;
      report.record(
        `CPU per ${name === 'empty' ? 'request: { __typename }' : `claim: claimTicket ${name}`} at ${COST_RATE}/s offered, ${COST_SECONDS} s`,
        `Tessera ${us(out[name].node)}  PostgreSQL ${us(out[name].pg)}  (${fmt(rate)}/s answered${rate < 0.9 * COST_RATE ? ': SATURATED, not a cost' : ''}, p50 ${ms(r.p50)})`,
      );
    }
    if (!floorCpu) return;
    for (const name of ['hot', 'spread'] as const) {
      const bound = out.empty.node + floorCpu.perClaim;
      const perClaim = out[name].node + out[name].pg;
      report.bar({
        what: `CPU per claim ${name} ÷ (empty-query Node + minimal-claim PostgreSQL)`,
        figure: `${x(perClaim / bound)} (${us(perClaim)} / ${us(bound)})`,
        target: '≤ 1.50×',
        pass: perClaim / bound <= 1.5,
      });
    }
  },
};
