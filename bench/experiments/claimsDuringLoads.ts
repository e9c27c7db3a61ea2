// Claims on one campaign while loads run into others. Each pair: a run alone, then the same run while
// generateTickets of a million tickets follow one another into new campaigns for the whole run.
// Open-loop at COST_RATE offered (the bar: on two cores a load takes one of them, so a closed loop
// that already fills both must lose a share), and closed-loop at 64 connections, reported beside it.
// Bar: the open-loop claims during loads ÷ alone ≥ 0.80× (full runs only).
import { ADMIN_KEY, gql, httpLoad, type LoadResult } from '../harness';
import { CLAIM, CLAIMED, verify, type Experiment } from './context';
import { fmt, ratio, type Report } from './report';
import { BIG, COST_RATE, quick, SECONDS } from './settings';

export const claimsDuringLoads: Experiment = {
  name: 'claimsDuringLoads',
  summary: 'claimTicket on a hot campaign while generateTickets loads a million at a time into others, against the same alone',
  async run(ctx, report: Report) {
    const { server, partnerKey } = ctx;
    const { pool } = await ctx.pools();
    const loadsDuring = async (claims: Promise<LoadResult>): Promise<{ claims: LoadResult; rowsPerSecond: number }> => {
      let claimsDone = false;
      void claims.then(
        () => (claimsDone = true),
        () => (claimsDone = true),
      );
      const t = performance.now();
      let rows = 0;
      while (!claimsDone) {
        const id = await ctx.newCampaign('loaded during claims');
        rows += (await gql(server.url, ADMIN_KEY, `mutation { generateTickets(campaignId: "${id}", count: ${BIG}) { loaded } }`)).generateTickets.loaded as number;
      }
      return { claims: await claims, rowsPerSecond: rows / ((performance.now() - t) / 1000) };
    };
    let openLoop: number | undefined;
    for (const [label, shape] of [
      [`open-loop at ${COST_RATE}/s offered`, { connections: 16, rate: COST_RATE }],
      ['64 connections, closed-loop', { connections: 64 }],
    ] as const) {
      const claimRun = (run: string) => httpLoad({ url: server.url, key: partnerKey, body: CLAIM(pool, run), seconds: SECONDS, okPattern: CLAIMED, ...shape });
      const aloneRun = ctx.nextRun();
      const alone = await claimRun(aloneRun);
      await verify(ctx, alone, aloneRun, [pool], shape.connections, `claims alone (${label})`);
      const duringRun = ctx.nextRun();
      const during = await loadsDuring(claimRun(duringRun));
      await verify(ctx, during.claims, duringRun, [pool], shape.connections, `claims during loads (${label})`);
      const rate = (r: LoadResult) => r.ok / SECONDS;
      if ('rate' in shape) openLoop = rate(during.claims) / rate(alone); // the open-loop run is the bar
      report.record(
        `claimTicket on a hot campaign, ${label}, while generateTickets loads ${fmt(BIG)} at a time into others ÷ alone`,
        `${ratio(rate(during.claims), rate(alone))}  (${fmt(rate(during.claims))} against ${fmt(rate(alone))} claims/s; p50 ${during.claims.p50} against ${alone.p50} ms, p99 ${during.claims.p99} against ${alone.p99} ms; loads meanwhile ${fmt(during.rowsPerSecond)} rows/s)`,
      );
    }
    if (!quick && openLoop !== undefined) report.atLeast(`claimTicket hot at ${COST_RATE}/s offered while loads run ÷ alone`, openLoop, 0.8);
  },
};
