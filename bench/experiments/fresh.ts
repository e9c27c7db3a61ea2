// Right after a load: what a drop gets when it opens as soon as it is loaded, on a server that has
// been serving — no VACUUM or ANALYZE by the bench (Tessera's own at the load, db/loadTickets.ts, is
// part of what is measured: a load under 10% of the table does not analyze) — against the same
// campaigns right after a VACUUM ANALYZE. Two rounds, each on campaigns of its own (a hot one of
// 200,000 tickets and 64 spread ones of 1,000), loaded and opened just before.
// Bars, hot and spread: right after the load ÷ after VACUUM ANALYZE ≥ 0.90×; ÷ the floor at 64 ≥ 0.40×.
import { ADMIN_KEY, gql, type LoadResult } from '../harness';
import { claimRunOn, needed, vacuum, type Experiment } from './context';
import { fmt, meanRate, ratio, type Report } from './report';
import { FRESH_SPREAD_TICKETS, FRESH_TICKETS, SPREAD_CAMPAIGNS } from './settings';

export const fresh: Experiment = {
  name: 'fresh',
  summary: 'hot and spread claims on campaigns loaded and opened just before, against the same after VACUUM ANALYZE',
  needs: ['floor'],
  async run(ctx, report: Report) {
    const floor = needed(ctx.figures.floor, 'the floor', 'floor');
    const generate = (id: string, count: number) => gql(ctx.server.url, ADMIN_KEY, `mutation { generateTickets(campaignId: "${id}", count: ${count}) { loaded } }`);
    const afterLoad = { hot: [] as LoadResult[], spread: [] as LoadResult[] };
    const afterAnalyze = { hot: [] as LoadResult[], spread: [] as LoadResult[] };
    for (let round = 1; round <= 2; round += 1) {
      const hotId = await ctx.newCampaign(`fresh hot ${round}`);
      await generate(hotId, FRESH_TICKETS);
      const coolIds = await Promise.all(Array.from({ length: SPREAD_CAMPAIGNS }, (_, i) => ctx.newCampaign(`fresh cool ${round}.${i}`)));
      for (const id of coolIds) await generate(id, FRESH_SPREAD_TICKETS);
      await Promise.all([hotId, ...coolIds].map((id) => ctx.open(id)));
      for (const [state, into] of [
        ['right after its load (no VACUUM or ANALYZE by the bench)', afterLoad],
        ['after VACUUM ANALYZE', afterAnalyze],
      ] as const) {
        if (into === afterAnalyze) await vacuum(ctx.sql, { analyze: true });
        into.hot.push(await claimRunOn(ctx, report, [hotId], `hot, 64 connections, ${state}, round ${round}`));
        into.spread.push(await claimRunOn(ctx, report, coolIds, `spread, 64 connections, ${state}, round ${round}`));
      }
    }
    for (const name of ['hot', 'spread'] as const) {
      report.record(
        `claimTicket ${name}, 64 connections: right after the load ÷ after VACUUM ANALYZE (means of 2 rounds)`,
        `${fmt(meanRate(afterLoad[name]))} / ${fmt(meanRate(afterAnalyze[name]))}/s = ${ratio(meanRate(afterLoad[name]), meanRate(afterAnalyze[name]))}  ` +
          `(${ratio(meanRate(afterLoad[name]), floor[64]!.claimsPerSecond)} floor)`,
      );
    }
    for (const name of ['hot', 'spread'] as const) {
      report.atLeast(`claimTicket ${name} right after the load ÷ after VACUUM ANALYZE`, meanRate(afterLoad[name]) / meanRate(afterAnalyze[name]), 0.9);
      report.atLeast(`claimTicket ${name} right after the load ÷ floor at 64`, meanRate(afterLoad[name]) / floor[64]!.claimsPerSecond, 0.4);
    }
  },
};
