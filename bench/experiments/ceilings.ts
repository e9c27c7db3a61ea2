// Three ceilings at 64 connections, answers without a database: a bare node:http server (the
// physical limit of one Node process), a minimal Apollo Server on Tessera's HTTP integration
// (bench/ceilings/), and Tessera's own empty authenticated query (also at 1 and 16 connections).
// Each warmed up on the same request first. Bar: Tessera ÷ minimal Apollo ≥ 0.70×.
import { ChildServer, freePort, httpLoad, type LoadResult } from '../harness';
import { INTEGRATION } from '../ceilings/integration';
import { checkAnswers, TYPENAME, type Experiment } from './context';
import { http, perSecond, ratio, type Report } from './report';
import { CONNECTIONS, SECONDS, WARMUP_SECONDS } from './settings';

export const ceilings: Experiment = {
  name: 'ceilings',
  summary: "bare node:http, a minimal Apollo Server and Tessera's { __typename }: what a request costs without a database",
  async run(ctx, report: Report) {
    const { server, partnerKey, failures } = ctx;
    await httpLoad({ url: server.url, key: partnerKey, body: TYPENAME, connections: 64, seconds: WARMUP_SECONDS });
    const ceiling: Record<number, LoadResult> = {};
    for (const c of CONNECTIONS) {
      ceiling[c] = await httpLoad({ url: server.url, key: partnerKey, body: TYPENAME, connections: c, seconds: SECONDS });
      checkAnswers(ceiling[c]!, `Tessera's ceiling at ${c} connections`, failures);
      report.record(`ceiling: Tessera, { __typename } with a partner key, ${c} connections`, perSecond(http(ceiling[c]!)));
    }
    ctx.figures.ceiling = ceiling;
    const apollo = await childCeiling('bench/ceilings/minimalApollo.ts', failures);
    report.record(`ceiling: minimal Apollo Server 5 (${INTEGRATION}), 64 connections`, `${perSecond(http(apollo))}  Tessera ${ratio(ceiling[64]!.requestsPerSecond, apollo.requestsPerSecond)}`);
    const bare = await childCeiling('bench/ceilings/bareHttp.ts', failures);
    report.record('ceiling: bare node:http, fixed JSON (the physical limit), 64 connections', `${perSecond(http(bare))}  Tessera ${ratio(ceiling[64]!.requestsPerSecond, bare.requestsPerSecond)}`);
    report.atLeast("Tessera's ceiling ÷ minimal Apollo, 64 connections", ceiling[64]!.requestsPerSecond / apollo.requestsPerSecond, 0.7);
  },
};

/** A ceiling server of bench/ceilings/ in a process of its own: warmed up, `{ __typename }` at 64 connections, stopped. */
async function childCeiling(script: string, failures: string[]): Promise<LoadResult> {
  const child = new ChildServer(script, await freePort());
  await child.start();
  try {
    await httpLoad({ url: child.url, key: 'none', body: TYPENAME, connections: 64, seconds: WARMUP_SECONDS });
    const r = await httpLoad({ url: child.url, key: 'none', body: TYPENAME, connections: 64, seconds: SECONDS, okPattern: '"__typename":"Query"' });
    checkAnswers(r, script, failures);
    if (r.ok < r.requests - 64) failures.push(`${script}: only ${r.ok} of ${r.requests} answers were { __typename }`);
    return r;
  } finally {
    await child.stop();
  }
}
