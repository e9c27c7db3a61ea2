// @dialects postgresql citus
// extendHold and a campaign's maxHoldSeconds (src/db/extendHold.ts): expiresAt = max(expiresAt, now +
// ttlSeconds) on a hold that has not expired, never past allocatedAt + maxHoldSeconds, checked and
// written in one step against the database clock — so a race with the hold's expiry (the sweeper,
// or a claim taking over its ticket) never extends an expired hold.
import { ADMIN_KEY, assertPoolInvariants, startTestServer, type TestServer } from './helpers/testServer';
import { ticketsLiveTwice } from './helpers/sql';
import { connectSocket, runOverSocket } from './helpers/ws';
import { expireHolds, setHoldExpiry, sleep } from './helpers/time';
import { setTimes } from './helpers/setTimes';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ database: { poolSize: 20 }, config: { holdSweepIntervalMs: 50 } });
});
afterAll(() => server.stop());

const EXTEND = `mutation Extend($id: ID!, $ttl: Int!) {
  extendHold(allocationId: $id, ttlSeconds: $ttl) { allocation { id status allocatedAt expiresAt ticket { status } } error { code message } }
}`;

interface Answer {
  allocation: null | { id: string; status: string; allocatedAt: string; expiresAt: string | null; ticket?: { status: string } };
  error: null | { code: string; message: string };
}

async function extend(key: string, id: string, ttl: number): Promise<Answer> {
  const res = await server.gql<{ extendHold: Answer }>(key, EXTEND, { id, ttl });
  expect(res.body.errors).toBeUndefined();
  return res.body.data!.extendHold;
}
const expiryInDb = async (id: string) => (await server.sql.query<{ e: Date }>('SELECT expires_at AS e FROM allocations WHERE id = $1', [id])).rows[0]!.e;
const ms = (iso: string | null) => new Date(iso!).getTime();

test('extendHold moves expiresAt to now + ttlSeconds, and never earlier than it was', async () => {
  const partner = await server.createPartner();
  const campaignId = await server.openCampaignWith(2);
  const held = (await server.hold(partner.apiKey, { campaignId, ttlSeconds: 60 })).allocation!;
  const longer = await extend(partner.apiKey, held.id, 600);
  expect(longer.error).toBeNull();
  expect(longer.allocation).toMatchObject({ id: held.id, status: 'HELD', ticket: { status: 'HELD' } });
  expect(ms(longer.allocation!.expiresAt) - ms(held.expiresAt)).toBeGreaterThan(500_000);
  expect((await expiryInDb(held.id)).toISOString()).toBe(longer.allocation!.expiresAt);
  // Shorter than what is left: nothing changes (max of the two), and that is an answer, not an error.
  const shorter = await extend(partner.apiKey, held.id, 10);
  expect(shorter.error).toBeNull();
  expect(shorter.allocation!.expiresAt).toBe(longer.allocation!.expiresAt);
  await assertPoolInvariants(server.sql, campaignId);
});

test("maxHoldSeconds caps every extension from the hold's creation, and holdTicket refuses a longer ttlSeconds", async () => {
  const partner = await server.createPartner();
  const campaignId = await server.openCampaignWith(3, { maxHoldSeconds: 100 });
  const read = await server.gql(ADMIN_KEY, 'query($id: ID!) { campaign(id: $id) { maxHoldSeconds } }', { id: campaignId });
  expect(read.body.data!.campaign.maxHoldSeconds).toBe(100);

  const tooLong = await server.hold(partner.apiKey, { campaignId, ttlSeconds: 101 });
  expect(tooLong.error?.code).toBe('INVALID_INPUT');
  expect(tooLong.error?.message).toContain('maxHoldSeconds');
  expect((await server.sql.query('SELECT count(*)::int AS n FROM allocations WHERE campaign_id = $1', [campaignId])).rows[0].n).toBe(0);

  const held = (await server.hold(partner.apiKey, { campaignId, ttlSeconds: 60 })).allocation!;
  const before = await expiryInDb(held.id);
  const past = await extend(partner.apiKey, held.id, 101);
  expect(past).toEqual({ allocation: null, error: { code: 'HOLD_EXTENSION_LIMIT', message: expect.stringContaining('maxHoldSeconds') } });
  expect(await expiryInDb(held.id)).toEqual(before);
  const within = await extend(partner.apiKey, held.id, 90);
  expect(within.error).toBeNull();
  expect(ms(within.allocation!.expiresAt)).toBeGreaterThan(before.getTime());
  expect(ms(within.allocation!.expiresAt)).toBeLessThanOrEqual(ms(held.allocatedAt) + 100_000);
  // A hold at its cap: an extension that would pass it is refused; one that would not move it is not.
  await setTimes(server.sql, 'allocations', { expires_at: "allocated_at + interval '100 seconds'" }, 'id = $1', [held.id]);
  expect((await extend(partner.apiKey, held.id, 100)).error?.code).toBe('HOLD_EXTENSION_LIMIT');
  expect((await extend(partner.apiKey, held.id, 1)).allocation?.expiresAt).toBe(new Date(ms(held.allocatedAt) + 100_000).toISOString());

  // Without a cap, extensions add up past a day (each one at most a day).
  const open = await server.openCampaignWith(1);
  expect((await server.gql(ADMIN_KEY, 'query($id: ID!) { campaign(id: $id) { maxHoldSeconds } }', { id: open })).body.data!.campaign.maxHoldSeconds).toBeNull();
  const long = (await server.hold(partner.apiKey, { campaignId: open, ttlSeconds: 86_400 })).allocation!;
  await setTimes(server.sql, 'allocations', { expires_at: "clock_timestamp() + interval '1 hour'", allocated_at: "allocated_at - interval '2 days'" }, 'id = $1', [long.id]);
  const onward = await extend(partner.apiKey, long.id, 86_400);
  expect(onward.error).toBeNull();
  expect(ms(onward.allocation!.expiresAt) - ms(onward.allocation!.allocatedAt)).toBeGreaterThan(2 * 86_400_000);
});

test('maxHoldSeconds is validated at creation', async () => {
  for (const maxHoldSeconds of [0, -1, 2_592_001]) {
    const res = await server.gql(ADMIN_KEY, 'mutation($input: CreateCampaignInput!) { createCampaign(input: $input) { campaign { id } } }', {
      input: { name: 'bad cap', maxHoldSeconds },
    });
    expect(res.body.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    expect(res.body.errors?.[0]?.message).toContain('maxHoldSeconds');
  }
  const res = await server.gql(ADMIN_KEY, 'mutation($input: CreateCampaignInput!) { createCampaign(input: $input) { campaign { maxHoldSeconds } } }', {
    input: { name: 'a month', maxHoldSeconds: 2_592_000 },
  });
  expect(res.body.data!.createCampaign.campaign.maxHoldSeconds).toBe(2_592_000);
});

test("refusals: expired, confirmed, released, another partner's, unknown, bad ttlSeconds — and nothing changes", async () => {
  const partner = await server.createPartner();
  const other = await server.createPartner();
  const campaignId = await server.openCampaignWith(5);
  const [expired, confirmed, released, mine] = await Promise.all([1, 2, 3, 4].map((i) => server.hold(partner.apiKey, { campaignId, holder: `r${i}`, ttlSeconds: 60 })));
  await expireHolds(server.sql, [expired!.allocation!.id]);
  const lapsedAt = await expiryInDb(expired!.allocation!.id);
  expect(await extend(partner.apiKey, expired!.allocation!.id, 600)).toMatchObject({ allocation: null, error: { code: 'HOLD_EXPIRED' } });
  expect(await expiryInDb(expired!.allocation!.id)).toEqual(lapsedAt);

  await server.gql(partner.apiKey, 'mutation($id: ID!) { confirmHold(allocationId: $id) { error { code } } }', { id: confirmed!.allocation!.id });
  expect((await extend(partner.apiKey, confirmed!.allocation!.id, 600)).error?.code).toBe('NOT_HELD');
  await server.gql(partner.apiKey, 'mutation($id: ID!) { releaseAllocation(allocationId: $id) { error { code } } }', { id: released!.allocation!.id });
  expect((await extend(partner.apiKey, released!.allocation!.id, 600)).error?.code).toBe('NOT_HELD');

  const before = await expiryInDb(mine!.allocation!.id);
  expect((await extend(other.apiKey, mine!.allocation!.id, 600)).error?.code).toBe('ALLOCATION_NOT_FOUND');
  expect((await extend(partner.apiKey, '00000000-0000-4000-8000-000000000000', 600)).error?.code).toBe('ALLOCATION_NOT_FOUND');
  expect((await extend(partner.apiKey, 'not-an-id', 600)).error?.code).toBe('ALLOCATION_NOT_FOUND');
  for (const ttl of [0, -5, 86_401]) {
    const answer = await extend(partner.apiKey, mine!.allocation!.id, ttl);
    expect(answer.error?.code).toBe('INVALID_INPUT');
    expect(answer.error?.message).toContain('ttlSeconds');
  }
  expect(await expiryInDb(mine!.allocation!.id)).toEqual(before);
  // The admin may extend any partner's hold.
  expect((await extend(ADMIN_KEY, mine!.allocation!.id, 600)).error).toBeNull();
  await assertPoolInvariants(server.sql, campaignId);
});

test('over graphql-ws, which serves subscriptions only, extendHold is refused and changes nothing', async () => {
  const partner = await server.createPartner();
  const campaignId = await server.openCampaignWith(1);
  const held = (await server.hold(partner.apiKey, { campaignId, ttlSeconds: 60 })).allocation!;
  const before = await expiryInDb(held.id);
  const socket = connectSocket(server.url, partner.apiKey);
  try {
    const answer = await runOverSocket(socket, { query: EXTEND, variables: { id: held.id, ttl: 600 } });
    expect(answer.results).toEqual([]);
    expect(answer.error).toEqual([expect.objectContaining({ extensions: { code: 'BAD_REQUEST' } })]);
  } finally {
    await socket.dispose();
  }
  expect(await expiryInDb(held.id)).toEqual(before);
});

test('extendHold racing expiry — the sweeper and claims taking over — never extends an expired hold', async () => {
  const partner = await server.createPartner();
  const campaignId = await server.openCampaignWith(40);
  const holds = await Promise.all(Array.from({ length: 40 }, (_, i) => server.hold(partner.apiKey, { campaignId, holder: `x${i}`, ttlSeconds: 60 })));
  const ids = holds.map((h) => h.allocation!.id);
  // Hold i is extended 10·i ms from now and lapses a little before or after that (-20 to +400 ms),
  // while 40 claims run to take over what has lapsed and the sweeper ends the rest every 50 ms.
  const lapses = await setHoldExpiry(server.sql, ids, ids.map((_, i) => 10 * i + [-20, 0, 20, 50, 100, 150, 250, 400][i % 8]!));
  const [extensions] = await Promise.all([
    Promise.all(
      ids.map(async (id, i) => {
        await sleep(10 * i);
        return extend(partner.apiKey, id, 300);
      }),
    ),
    Promise.all(
      Array.from({ length: 40 }, async (_, i) => {
        await sleep(10 * i);
        return server.claim(partner.apiKey, { campaignId, holder: `c${i}` });
      }),
    ),
  ]);
  const { rows } = await server.sql.query<{ id: string; status: string; expires_at: Date; ticket_taken: boolean }>(
    `SELECT a.id, a.status::text, a.expires_at,
            EXISTS (SELECT 1 FROM allocations b WHERE b.campaign_id = a.campaign_id AND b.ticket_id = a.ticket_id AND b.id <> a.id
                       AND b.status IN ('ACTIVE', 'HELD')) AS ticket_taken
       FROM allocations a WHERE a.id = ANY($1::uuid[])`,
    [ids],
  );
  const byId = new Map(rows.map((r) => [r.id, r]));
  let extended = 0;
  let refused = 0;
  extensions.forEach((answer, i) => {
    const row = byId.get(ids[i]!)!;
    if (answer.error === null) {
      // Extended: still this holder's, with the new expiry, its ticket nobody else's.
      extended += 1;
      expect(row.status).toBe('HELD');
      expect(row.expires_at.toISOString()).toBe(answer.allocation!.expiresAt);
      expect(row.expires_at.getTime()).toBeGreaterThan(lapses.get(ids[i]!)!.getTime() + 200_000);
      expect(row.ticket_taken).toBe(false);
    } else {
      // Refused: it had lapsed, and its expiry is the one it lapsed at.
      refused += 1;
      expect(answer.error.code).toBe('HOLD_EXPIRED');
      expect(row.expires_at).toEqual(lapses.get(ids[i]!));
    }
  });
  expect(extended + refused).toBe(40);
  expect(refused).toBeGreaterThan(0); // those that lapsed before they were asked (here 8–13 of 40 were extended)
  expect(await ticketsLiveTwice(server.sql, campaignId)).toEqual([]);
  await assertPoolInvariants(server.sql, campaignId);
});
