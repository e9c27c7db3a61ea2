// claimTicket over HTTP on one hot campaign at 1, 16 and 64 connections, and the same 64
// connections spread over 64 campaigns (each request for the next of them in turn: concurrent claims
// rarely share a campaign, so group claims rarely form), each run after a VACUUM and checked for lost
// and duplicated tickets; against Tessera's ceiling, the floor and the first look alone.
// Bars, hot and spread at 64 connections: ÷ the floor at 64 ≥ 0.50×, ÷ Tessera's ceiling ≥ 0.80×,
// p99 ≤ 50 ms.
import { httpLoad, type LoadResult } from '../harness';
import { CLAIM, CLAIMED, needed, vacuum, verify, type Experiment } from './context';
import { http, perSecond, ratio, type Report } from './report';
import { CONNECTIONS, SECONDS, SPREAD_CAMPAIGNS } from './settings';

export const claims: Experiment = {
  name: 'claims',
  summary: 'claimTicket over HTTP, one hot campaign (1, 16, 64 connections) and spread over 64 campaigns, against the floor and the ceiling',
  needs: ['ceilings', 'floor'],
  async run(ctx, report: Report) {
    const { server, partnerKey, sql } = ctx;
    const ceiling = needed(ctx.figures.ceiling, "Tessera's ceiling", 'ceilings');
    const floor = needed(ctx.figures.floor, 'the floor', 'floor');
    const firstLook = needed(ctx.figures.firstLook, 'the first look alone', 'floor');
    const { pool, cool } = await ctx.pools();
    const byConnections: Record<number, LoadResult> = {};
    for (const c of CONNECTIONS) {
      await vacuum(sql);
      const run = ctx.nextRun();
      const r = await httpLoad({ url: server.url, key: partnerKey, body: CLAIM(pool, run), connections: c, seconds: SECONDS, okPattern: CLAIMED });
      byConnections[c] = r;
      const v = await verify(ctx, r, run, [pool], c, `claims on one hot campaign at ${c} connections`);
      const versus = [`${ratio(r.requestsPerSecond, ceiling[c]!.requestsPerSecond)} ceiling`];
      if (floor[c]) versus.push(`${ratio(r.requestsPerSecond, floor[c]!.claimsPerSecond)} floor`);
      if (firstLook[c]) versus.push(`${ratio(r.requestsPerSecond, firstLook[c]!.claimsPerSecond)} first look alone`);
      report.record(`claimTicket over HTTP, one hot campaign, ${c} connections`, `${perSecond(http(r))}  ${versus.join('  ')}  ${v}`);
    }
    const hot = byConnections[64]!;

    await vacuum(sql);
    const spreadRun = ctx.nextRun();
    const spreadBodies = cool.map((id) => CLAIM(id, spreadRun));
    const spread = await httpLoad({ url: server.url, key: partnerKey, body: spreadBodies[0]!, bodies: spreadBodies, connections: 64, seconds: SECONDS, okPattern: CLAIMED });
    const spreadCheck = await verify(ctx, spread, spreadRun, cool, 64, 'claims spread over 64 campaigns');
    report.record(
      `claimTicket over HTTP, spread over ${SPREAD_CAMPAIGNS} campaigns (round-robin), 64 connections`,
      `${perSecond(http(spread))}  ${ratio(spread.requestsPerSecond, ceiling[64]!.requestsPerSecond)} ceiling  ${ratio(spread.requestsPerSecond, floor[64]!.claimsPerSecond)} floor  ` +
        `${ratio(spread.requestsPerSecond, hot.requestsPerSecond)} hot  ${spreadCheck}`,
    );
    ctx.figures.hot = hot;
    ctx.figures.spread = spread;

    for (const [name, r] of [
      ['hot', hot],
      ['spread', spread],
    ] as const) {
      report.atLeast(`claimTicket ${name} (64 conn.) ÷ floor at 64`, r.requestsPerSecond / floor[64]!.claimsPerSecond, 0.5);
      report.atLeast(`claimTicket ${name} (64 conn.) ÷ Tessera's ceiling at 64`, r.requestsPerSecond / ceiling[64]!.requestsPerSecond, 0.8);
      report.atMost(`claimTicket ${name} (64 conn.) p99`, r.p99, 50);
    }
  },
};
