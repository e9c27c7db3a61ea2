// @dialects postgresql pgbouncer citus
// docs/CORRECTNESS.md §5: "mixed operations deadlock where each alone is fine". 64 clients, then 256,
// run a random mix of claims, holds, confirmations, multi-ticket claims and releases against one
// small pool — at least 3,000 requests — three partners, one of them under a quota, a per-holder
// limit, holds that lapse mid-run. Every request gets a definite answer — its payload (a ticket or a
// refusal code), or UNAVAILABLE (503, Retry-After) when it found no turn at the database within
// DATABASE_POOL_TIMEOUT_MS — none hangs, PostgreSQL detects no deadlock, and the database is
// consistent afterwards.
//
// What a claim gets at 256 in flight (the product's answer, not the machine's): it waits for a turn
// — claims in the batcher's queue, the other operations for a pool connection — up to
// DATABASE_POOL_TIMEOUT_MS, and is then answered 503 UNAVAILABLE with Retry-After and `retryable`,
// having done nothing. How many get that depends on how fast the machine is: on an idle 2-core
// machine none, on one starved by other test files some (a CI check saw 319 of ~3,000). So the test
// requires the answer to be that one and to be true (nothing half-done: the invariants below), and
// never counts it.
import { randomInt, randomUUID } from 'node:crypto';
import { citusNodes } from './helpers/citus';
import { deadlocks, quotaCounters, ticketsLiveTwice } from './helpers/sql';
import { FIXED_WORK_TIMEOUT_MS } from './helpers/time';
import { assertPoolInvariants, ADMIN_KEY, startTestServer, TEST_DATABASE_CONFIG, type TestServer } from './helpers/testServer';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ database: { poolSize: 12 } });
});
afterAll(() => server.stop());

const RUN_MS = 5_000;
/**
 * At least this many requests, whatever RUN_MS allowed (a slow machine runs longer). On Citus
 * (npm run test:citus) a quarter: each statement there goes from the coordinator to a worker, and
 * 3,000 took 139 s of CI's 25 minutes (2026-12-07, CI at 1,496 s), 1,500 then 126 s (CI at 2,130 s);
 * 750 still mix every kind of request, which the first test below checks.
 */
const MIN_REQUESTS = citusNodes() === null ? 3_000 : 750;
/**
 * The run goes on past MIN_REQUESTS until every kind of request has succeeded once, up to this many
 * requests: at 256 clients 750 requests were ~3 per client, and a confirmation needs a client's
 * earlier hold to have been granted and to outlive the answer on a slow machine — a CI run on Citus
 * drew none (2026-12-07), which said nothing about the product.
 */
const MAX_REQUESTS = 4 * MIN_REQUESTS;
const KINDS = ['claimTicket', 'holdTicket', 'confirmHold', 'claimTickets', 'releaseAllocation'] as const;
const TICKETS = 60;
const PER_HOLDER_LIMIT = 3;
const QUOTA = 20;
/**
 * A hang detector, not a speed bar, derived from the server's own bounds: an operation may wait for
 * a turn (DATABASE_POOL_TIMEOUT_MS) and run a statement (statement_timeout, which bounds its lock
 * waits too), and is tried at most three times (a deadlock victim, a keyed claim whose connection
 * died): 3 × (5 s + 10 s) with the test server's settings. Past that, with a margin for a starved
 * event loop, something waits on nothing.
 */
const MAX_LATENCY_MS = 3 * (TEST_DATABASE_CONFIG.poolTimeoutMs + TEST_DATABASE_CONFIG.statementTimeoutMs) + 15_000;

const ALLOCATION = 'id status expiresAt ticket { code }';
const OPS = {
  claimTicket: `mutation($input: ClaimTicketInput!) { claimTicket(input: $input) { allocation { ${ALLOCATION} } error { code } } }`,
  holdTicket: `mutation($input: HoldTicketInput!) { holdTicket(input: $input) { allocation { ${ALLOCATION} } error { code } } }`,
  confirmHold: `mutation($id: ID!) { confirmHold(allocationId: $id) { allocation { ${ALLOCATION} } error { code } } }`,
  claimTickets: `mutation($input: ClaimTicketsInput!) { claimTickets(input: $input) { allocations { ${ALLOCATION} } error { code } } }`,
  releaseAllocation: `mutation($id: ID!) { releaseAllocation(allocationId: $id) { allocation { ${ALLOCATION} } error { code } } }`,
  stats: 'query($id: ID!) { campaign(id: $id) { stats { total allocated held available } } }',
} as const;
type Op = keyof typeof OPS;

/** What each operation may answer in its payload during the run; anything else is a bug. */
const EXPECTED_REFUSALS: Record<Op, string[]> = {
  claimTicket: ['SOLD_OUT', 'ALL_HELD', 'HOLDER_LIMIT_REACHED', 'PARTNER_QUOTA_REACHED'],
  holdTicket: ['SOLD_OUT', 'ALL_HELD', 'HOLDER_LIMIT_REACHED', 'PARTNER_QUOTA_REACHED'],
  claimTickets: ['INSUFFICIENT_TICKETS', 'HOLDER_LIMIT_REACHED', 'PARTNER_QUOTA_REACHED'],
  confirmHold: ['HOLD_EXPIRED'],
  releaseAllocation: [],
  stats: [],
};

interface Outcome {
  op: Op;
  ms: number;
  status: number;
  /** 'OK', a ClaimErrorCode from the payload, or 'GRAPHQL:<extensions.code>' / 'HUNG' / 'FETCH:<message>'. */
  outcome: string;
  /** The Retry-After header, when there was one. */
  retryAfter?: string | null;
}

interface Reply {
  status: number;
  data?: any;
  outcome: string;
  retryAfter?: string | null;
}

async function send(log: Outcome[], key: string, op: Op, variables: Record<string, unknown>): Promise<Reply> {
  const started = performance.now();
  let reply: Reply;
  try {
    const res = await fetch(server.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ query: OPS[op], variables }),
      signal: AbortSignal.timeout(MAX_LATENCY_MS + 5_000),
    });
    const body = (await res.json()) as { data?: any; errors?: { extensions?: { code?: string } }[] };
    if (body.errors?.length) {
      reply = { status: res.status, outcome: `GRAPHQL:${body.errors.map((e) => e.extensions?.code ?? 'NONE').join(',')}`, retryAfter: res.headers.get('retry-after') };
    } else {
      const payload = Object.values(body.data ?? {})[0] as { error?: { code: string } | null } | undefined;
      reply = { status: res.status, data: body.data, outcome: payload?.error?.code ?? 'OK' };
    }
  } catch (error) {
    const e = error as Error;
    reply = { status: 0, outcome: e.name === 'TimeoutError' ? 'HUNG' : `FETCH:${e.message}` };
  }
  log.push({ op, ms: performance.now() - started, status: reply.status, outcome: reply.outcome, retryAfter: reply.retryAfter });
  return reply;
}

/**
 * Clients in flight: 64, and 256 — more than the pool and the batcher's queue can serve at once, so
 * some wait past DATABASE_POOL_TIMEOUT_MS. On Citus (npm run test:citus) 64 only: how the process
 * answers a queue it cannot serve does not change with the database, and the 256 run took ~27 s of
 * CI's 25 minutes on a slow machine (2026-12-07: the file took 54 s there with it, 27 s without).
 */
const CLIENT_COUNTS = citusNodes() === null ? [64, 256] : [64];

describe.each(CLIENT_COUNTS)('%i clients mixing claims, holds, confirmations, group claims and releases on one pool', (CLIENTS) => {
  let campaignId: string;
  let partners: { id: string; apiKey: string }[];
  const log: Outcome[] = [];
  const statsReads: { total: number; allocated: number; held: number; available: number }[] = [];
  let deadlocksBefore = 0;

  beforeAll(async () => {
    partners = await Promise.all(['M1', 'M2', 'M3'].map((name) => server.createPartner(name)));
    campaignId = await server.openCampaignWith(TICKETS, { perHolderLimit: PER_HOLDER_LIMIT });
    const quota = await server.gql(
      ADMIN_KEY,
      'mutation($c: ID!, $p: ID!, $q: Int) { setPartnerQuota(campaignId: $c, partnerId: $p, quota: $q) { campaign { id } } }',
      { c: campaignId, p: partners[2]!.id, q: QUOTA },
    );
    expect(quota.body.errors).toBeUndefined();
    deadlocksBefore = await deadlocks(server);

    const endAt = Date.now() + RUN_MS;
    const everyKindSucceeded = () => KINDS.every((kind) => log.some((o) => o.op === kind && o.outcome === 'OK'));
    const goOn = () => Date.now() < endAt || log.length < MIN_REQUESTS || (log.length < MAX_REQUESTS && !everyKindSucceeded());
    const client = async (index: number) => {
      const partner = partners[index % 3]!;
      // 16 holders per partner, shared by its clients: some holders hit the limit, but together
      // they can ask for more than the pool holds, so the pool runs dry and refills (releases, expiries).
      const holder = () => `holder-${randomInt(16)}`;
      const holds: string[] = [];
      const active: string[] = [];
      const keyed = () => (randomInt(3) === 0 ? { idempotencyKey: randomUUID() } : {});
      const take = (list: string[]) => list.splice(randomInt(list.length), 1)[0]!;
      while (goOn()) {
        const dice = randomInt(100);
        if (dice < 22) {
          const r = await send(log, partner.apiKey, 'claimTicket', { input: { campaignId, holder: holder(), ...keyed() } });
          if (r.data?.claimTicket.allocation) active.push(r.data.claimTicket.allocation.id);
        } else if (dice < 42) {
          // Most holds lapse mid-run (1–2 s); a quarter last 30 s, so that confirmations succeed even
          // when a starved machine answers slower than the short holds live.
          const ttlSeconds = randomInt(4) === 0 ? 30 : 1 + randomInt(2);
          const r = await send(log, partner.apiKey, 'holdTicket', { input: { campaignId, holder: holder(), ttlSeconds, ...keyed() } });
          if (r.data?.holdTicket.allocation) holds.push(r.data.holdTicket.allocation.id);
        } else if (dice < 57 && holds.length > 0) {
          const id = take(holds);
          const r = await send(log, partner.apiKey, 'confirmHold', { id });
          if (r.data?.confirmHold.allocation) active.push(id);
        } else if (dice < 72) {
          const r = await send(log, partner.apiKey, 'claimTickets', { input: { campaignId, holder: holder(), quantity: 2 + randomInt(2), ...keyed() } });
          for (const a of r.data?.claimTickets.allocations ?? []) active.push(a.id);
        } else if (dice < 95 && active.length + holds.length > 0) {
          const id = active.length > 0 && (holds.length === 0 || randomInt(4) > 0) ? take(active) : take(holds);
          await send(log, partner.apiKey, 'releaseAllocation', { id });
        } else {
          const r = await send(log, ADMIN_KEY, 'stats', { id: campaignId });
          if (r.data) statsReads.push(r.data.campaign.stats);
        }
      }
    };
    await Promise.all(Array.from({ length: CLIENTS }, (_, i) => client(i)));
  }, FIXED_WORK_TIMEOUT_MS);

  test('the run did real work of every kind', () => {
    const ok = (op: Op) => log.filter((o) => o.op === op && o.outcome === 'OK').length;
    expect(log.length).toBeGreaterThan(CLIENTS);
    for (const op of KINDS) {
      expect({ op, ok: ok(op) > 0 }).toEqual({ op, ok: true });
    }
  });

  test('every request got a definite answer: a ticket, an expected refusal, or no turn (503 with Retry-After) — nothing else', () => {
    expect(log.length).toBeGreaterThanOrEqual(MIN_REQUESTS);
    const noTurn = (o: Outcome) => o.outcome === 'GRAPHQL:UNAVAILABLE' && o.status === 503 && Number(o.retryAfter) > 0;
    const unexpected = log.filter((o) => o.outcome !== 'OK' && !EXPECTED_REFUSALS[o.op].includes(o.outcome) && !noTurn(o));
    const summary = unexpected.reduce<Record<string, number>>((acc, o) => ({ ...acc, [`${o.op} ${o.status} ${o.outcome}`]: (acc[`${o.op} ${o.status} ${o.outcome}`] ?? 0) + 1 }), {});
    expect(summary).toEqual({});
  });

  test(`no request hung or took more than ${MAX_LATENCY_MS / 1000} s`, () => {
    const slow = log.filter((o) => o.outcome === 'HUNG' || o.ms > MAX_LATENCY_MS);
    expect(slow).toEqual([]);
  });

  test('PostgreSQL detected no deadlock during the run', async () => {
    expect((await deadlocks(server)) - deadlocksBefore).toBe(0);
  });

  test('every stats read during the run had total = allocated + held + available', () => {
    expect(statsReads.length).toBeGreaterThan(0);
    for (const s of statsReads) expect(s.allocated + s.held + s.available).toBe(s.total);
  });

  test('no ticket has two live allocations, and ticket statuses match the live allocations', async () => {
    expect(await ticketsLiveTwice(server.sql, campaignId)).toEqual([]);
    await assertPoolInvariants(server.sql, campaignId);
  });

  test('the stats afterwards have total = allocated + held + available', async () => {
    const res = await server.gql(ADMIN_KEY, OPS.stats, { id: campaignId });
    const s = res.body.data!.campaign.stats;
    expect(s.total).toBe(TICKETS);
    expect(s.allocated + s.held + s.available).toBe(s.total);
  });

  test('the quota counter equals the real count of live allocations, within the quota', async () => {
    const rows = await quotaCounters(server.sql, campaignId);
    expect(rows).toHaveLength(1);
    expect(rows[0].live).toBe(rows[0].real);
    expect(rows[0].real).toBeLessThanOrEqual(QUOTA);
  });

  test('no holder has more live allocations than the per-holder limit', async () => {
    const { rows } = await server.sql.query(
      `SELECT partner_id, holder, count(*)::int AS n FROM allocations
        WHERE campaign_id = $1 AND status IN ('HELD', 'ACTIVE') GROUP BY 1, 2 HAVING count(*) > $2`,
      [campaignId, PER_HOLDER_LIMIT],
    );
    expect(rows).toEqual([]);
  });
});
