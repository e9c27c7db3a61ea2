// What every experiment of `npm run bench` is handed: the bench's database and its Tessera instance
// (one process, started once by bench/run.ts), the campaigns several experiments claim on (made
// when first asked for), the figures one experiment measures for another's ratios (the floor, the
// ceiling, the hot and spread claims), and the check every claim run passes: nothing lost, nothing
// given twice.
import type { Client } from 'pg';
import { ADMIN_KEY, gql, httpLoad, type LoadResult, type Server } from '../harness';
import type { SqlClaimResult } from '../sqlClaims';
import { perSecond, http, type Report } from './report';
import { POOL_TICKETS, SECONDS, SPREAD_CAMPAIGNS, SPREAD_TICKETS } from './settings';

/** Figures an experiment measures and later ones compare with (each set by the experiment named). */
export interface Figures {
  /** ceilings: Tessera's `{ __typename }` with a partner key, by connections. */
  ceiling?: Record<number, LoadResult>;
  /** floor: the minimal claim, and claimOne() alone, by clients. */
  floor?: Record<number, SqlClaimResult>;
  firstLook?: Record<number, SqlClaimResult>;
  /** floor: the minimal claim's PostgreSQL CPU per claim at COST_RATE; null where it could not be read. */
  floorCpu?: { perClaim: number; rate: number } | null;
  /** claims: claimTicket at 64 connections, one hot campaign and spread over 64. */
  hot?: LoadResult;
  spread?: LoadResult;
}

export interface Context {
  /** The PostgreSQL server (its `postgres` database) and the bench's database on it. */
  serverUrl: string;
  dbUrl: URL;
  /** The environment of every Tessera instance the bench starts, beyond its own settings. */
  serverEnv: Record<string, string>;
  server: Server;
  sql: Client;
  /** pgbench's version, or null when the SQL load goes through pg. */
  pgbench: string | null;
  /** PostgreSQL's postmaster on this machine (its CPU is read from /proc), or null. */
  postmaster: number | null;
  partnerKey: string;
  /** Why the run fails; experiments add to it. */
  failures: string[];
  /** Lost and duplicated tickets over the whole run (every claim run adds to them). */
  integrity: { lost: number; duplicated: number };
  figures: Figures;
  /** The 1,000,000-ticket campaign of loads, fill and reads; made by loads, or by whichever needs it first. */
  big?: string;
  /** The holder of the next claim run: it names the run, so its allocations are counted apart. */
  nextRun(): string;
  newCampaign(name: string): Promise<string>;
  open(id: string): Promise<void>;
  /** The hot campaign and 64 spread ones the claim experiments share, made, opened and analyzed on first use. */
  pools(): Promise<{ pool: string; cool: string[] }>;
}

export interface Experiment {
  name: string;
  /** One line for --help. */
  summary: string;
  /** Experiments whose figures this one compares with: run first whenever it runs. */
  needs?: readonly string[];
  run(ctx: Context, report: Report): Promise<void>;
}

/** A claim of run `run`: its holder names the run, so the run's allocations are counted apart from every other's. */
export const CLAIM = (campaignId: string, run: string) =>
  JSON.stringify({
    query: `mutation { claimTicket(input: { campaignId: "${campaignId}", holder: "${run}" }) { allocation { id sequence ticket { code } } error { code } } }`,
  });
export const TYPENAME = JSON.stringify({ query: '{ __typename }' });
export const CLAIMED = '"allocation":{"id"';

/** The figures `name` sets, or a failure naming the experiment that measures them. */
export function needed<T>(value: T | undefined, what: string, experiment: string): T {
  if (value === undefined) throw new Error(`${what} is measured by the ${experiment} experiment, which did not run`);
  return value;
}

/** Makes the context's campaign helpers for `server`. */
export function campaignHelpers(server: Server, sql: Client): Pick<Context, 'newCampaign' | 'open' | 'pools'> {
  const newCampaign = async (name: string) =>
    (await gql(server.url, ADMIN_KEY, `mutation { createCampaign(input: { name: "${name}" }) { campaign { id } } }`)).createCampaign.campaign.id as string;
  const open = async (id: string) => {
    await gql(server.url, ADMIN_KEY, `mutation { openCampaign(id: "${id}") { campaign { id } } }`);
  };
  let pools: Promise<{ pool: string; cool: string[] }> | undefined;
  const makePools = async () => {
    // One hot campaign big enough never to run dry, and 64 cool ones.
    const pool = await newCampaign('throughput');
    await gql(server.url, ADMIN_KEY, `mutation { generateTickets(campaignId: "${pool}", count: ${POOL_TICKETS}) { loaded } }`);
    await open(pool);
    const cool = await Promise.all(Array.from({ length: SPREAD_CAMPAIGNS }, (_, i) => newCampaign(`cool ${i}`)));
    for (const id of cool) await gql(server.url, ADMIN_KEY, `mutation { generateTickets(campaignId: "${id}", count: ${SPREAD_TICKETS}) { loaded } }`);
    await Promise.all(cool.map((id) => open(id)));
    await vacuum(sql, { analyze: true });
    return { pool, cool };
  };
  return { newCampaign, open, pools: () => (pools ??= makePools()) };
}

/**
 * VACUUM of the bench database, what autovacuum would do between phases (it is off on this
 * machine's server); with ANALYZE after the bulk loads (the claim's plan does not depend on
 * statistics: docs/PERFORMANCE.md pitfall 2).
 */
export async function vacuum(sql: Client, o: { analyze?: boolean } = {}): Promise<void> {
  await sql.query(o.analyze ? 'VACUUM ANALYZE' : 'VACUUM');
}

export function checkAnswers(r: LoadResult, what: string, failures: string[]): void {
  if (r.errors > 0 || r.non2xx > 0) failures.push(`${what}: ${r.non2xx} non-2xx answers, ${r.errors} errors`);
}

/**
 * Nothing lost, nothing duplicated, after a claim run `run` on `campaigns`:
 *  - every acknowledged claim is stored, and at most one claim per connection was stored without
 *    being acknowledged (autocannon stops reading when its time is up, with one request in flight
 *    per connection, which the server still completes);
 *  - in those campaigns, every ALLOCATED ticket has exactly one live allocation and no ticket has two
 *    (one snapshot: a claim commits its ticket and its allocation together).
 * Adds to the run's totals and to its failures; returns the verdict for the table.
 */
export async function verify(ctx: Context, r: LoadResult, run: string, campaigns: string[], connections: number, what: string): Promise<string> {
  const { sql } = ctx;
  const stored = (await sql.query('SELECT count(*)::int AS n FROM allocations WHERE holder = $1', [run])).rows[0].n as number;
  const state = (
    await sql.query<{ allocated: number; live: number; twice: number }>(
      `SELECT (SELECT count(*) FROM tickets WHERE campaign_id = ANY($1::uuid[]) AND status = 'ALLOCATED')::int AS allocated,
              (SELECT count(*) FROM allocations WHERE campaign_id = ANY($1::uuid[]) AND status = 'ACTIVE')::int AS live,
              (SELECT count(*) FROM (SELECT 1 FROM allocations WHERE campaign_id = ANY($1::uuid[]) AND status IN ('HELD', 'ACTIVE')
                                      GROUP BY campaign_id, ticket_id HAVING count(*) > 1) d)::int AS twice`,
      [campaigns],
    )
  ).rows[0]!;
  const lost = Math.max(0, r.ok - stored) + Math.max(0, state.allocated - state.live);
  const duplicated = Math.max(0, stored - r.ok - connections) + state.twice + Math.max(0, state.live - state.allocated);
  ctx.integrity.lost += lost;
  ctx.integrity.duplicated += duplicated;
  const problems: string[] = [];
  if (lost + duplicated > 0)
    problems.push(`${r.ok} acknowledged, ${stored} stored (+${connections} in flight at most); ${state.allocated} tickets ALLOCATED, ${state.live} live allocations, ${state.twice} tickets twice`);
  if (r.errors > 0 || r.non2xx > 0) problems.push(`${r.non2xx} non-2xx answers, ${r.errors} errors`);
  if (r.ok === 0) problems.push('no claim succeeded');
  if (problems.length > 0) ctx.failures.push(`${what}: ${problems.join('; ')}`);
  return `lost ${lost}, duplicated ${duplicated}`;
}

/** One claim run at 64 connections on `ids` (each request for the next of them in turn), verified and recorded as `claimTicket <label>`. */
export async function claimRunOn(ctx: Context, report: Report, ids: readonly string[], label: string): Promise<LoadResult> {
  const run = ctx.nextRun();
  const bodies = ids.map((id) => CLAIM(id, run));
  const r = await httpLoad({ url: ctx.server.url, key: ctx.partnerKey, body: bodies[0]!, bodies, connections: 64, seconds: SECONDS, okPattern: CLAIMED });
  const check = await verify(ctx, r, run, [...ids], 64, `claims ${label}`);
  report.record(`claimTicket ${label}`, `${perSecond(http(r))}  ${check}`);
  return r;
}

/**
 * One hot and one spread claim run at 64 connections against `url` (the bench's shared campaigns
 * unless `on` is given), each after a VACUUM, verified and recorded as
 * `claimTicket <name>, 64 connections, <label>`, with `versus` (ratios) when given.
 */
export async function hotAndSpread(
  ctx: Context,
  report: Report,
  url: string,
  label: string,
  versus?: (name: 'hot' | 'spread', r: LoadResult) => string,
  on?: { hot: string; spread: string[] },
): Promise<Record<'hot' | 'spread', LoadResult>> {
  const shared = on ? undefined : await ctx.pools();
  const campaigns = on ?? { hot: shared!.pool, spread: shared!.cool };
  const out: Partial<Record<'hot' | 'spread', LoadResult>> = {};
  for (const [name, ids] of [
    ['hot', [campaigns.hot]],
    ['spread', campaigns.spread],
  ] as const) {
    await vacuum(ctx.sql);
    const run = ctx.nextRun();
    const bodies = ids.map((id) => CLAIM(id, run));
    const r = await httpLoad({ url, key: ctx.partnerKey, body: bodies[0]!, bodies, connections: 64, seconds: SECONDS, okPattern: CLAIMED });
    const check = await verify(ctx, r, run, [...ids], 64, `claims ${name}, ${label}`);
    report.record(`claimTicket ${name}, 64 connections, ${label}`, versus ? `${perSecond(http(r))}  ${versus(name, r)}  ${check}` : perSecond(http(r)));
    out[name] = r;
  }
  return out as Record<'hot' | 'spread', LoadResult>;
}
