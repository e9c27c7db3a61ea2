// A waitlist offer's hold and a ballot win's hold end by their window however they are extended
// (prisma/functions/tessera_extend_hold.sql): allocatedAt + waitlistOfferSeconds for an offer,
// allocatedAt + ballotConfirmSeconds for a win (at the draw or passed on later), or allocatedAt +
// maxHoldSeconds when that is earlier. An extendHold past it answers HOLD_EXTENSION_LIMIT and changes
// nothing; one within it works as for any hold. The clock is moved in SQL (or by advanceTestClock),
// never waited for.
import { ADMIN_KEY, allocated, assertPoolInvariants, CLAIM, startTestServer, type ClaimPayload, type TestServer } from './helpers/testServer';
import { setTimes } from './helpers/setTimes';
import { until } from './helpers/time';
import { connectSocket, runOverSocket } from './helpers/ws';

let server: TestServer;
beforeAll(async () => {
  // The sweeper every 100 ms: a ballot win passes on within a sweep.
  server = await startTestServer({ config: { holdSweepIntervalMs: 100 } });
});
afterAll(() => server.stop());

const EXTEND = `mutation Extend($id: ID!, $ttl: Int!) {
  extendHold(allocationId: $id, ttlSeconds: $ttl) { allocation { id status allocatedAt expiresAt } error { code message } }
}`;
const RELEASE = 'mutation($id: ID!) { releaseAllocation(allocationId: $id) { allocation { id status } error { code } } }';
const CONFIRM = 'mutation($id: ID!) { confirmHold(allocationId: $id) { allocation { id status } error { code } } }';
const JOIN = 'mutation($input: JoinWaitlistInput!) { joinWaitlist(input: $input) { entry { id } error { code } } }';
const OFFER = 'query($id: ID!) { waitlistEntry(id: $id) { status offer { id status } } }';
const ENTER = 'mutation($input: EnterBallotInput!) { enterBallot(input: $input) { entry { id } error { code } } }';
const WON = 'query($id: ID!) { ballotEntry(id: $id) { status allocations { id status } } }';

interface Answer {
  allocation: null | { id: string; status: string; allocatedAt: string; expiresAt: string };
  error: null | { code: string; message: string };
}
interface Hold {
  key: string;
  id: string;
  campaignId: string;
}

async function extend(key: string, id: string, ttl: number): Promise<Answer> {
  const res = await server.gql<{ extendHold: Answer }>(key, EXTEND, { id, ttl });
  expect(res.body.errors).toBeUndefined();
  return res.body.data!.extendHold;
}
async function times(id: string): Promise<{ allocatedAt: number; expiresAt: number }> {
  const { rows } = await server.sql.query<{ a: Date; e: Date }>('SELECT allocated_at AS a, expires_at AS e FROM allocations WHERE id = $1', [id]);
  return { allocatedAt: rows[0]!.a.getTime(), expiresAt: rows[0]!.e.getTime() };
}

/** A WAITLIST_FIRST campaign's one ticket, released and offered to a waiting holder: the offer's hold. */
async function offeredHold(input: Record<string, unknown> = {}, keys?: { owner: string; waiter: string }): Promise<Hold> {
  const owner = keys?.owner ?? (await server.createPartner('owner')).apiKey;
  const waiter = keys?.waiter ?? (await server.createPartner('waiter')).apiKey;
  const campaignId = await server.openCampaignWith(1, { releasePolicy: 'WAITLIST_FIRST', ...input });
  const claimed = (await server.gql<ClaimPayload>(owner, CLAIM, { input: { campaignId, holder: 'first' } })).body.data!.claimTicket.allocation!;
  const entryId = (await server.gql(waiter, JOIN, { input: { campaignId, holder: 'next' } })).body.data!.joinWaitlist.entry.id as string;
  expect((await server.gql(owner, RELEASE, { id: claimed.id })).body.data!.releaseAllocation.error).toBeNull();
  // A release makes its offer before it answers.
  const entry = (await server.gql(waiter, OFFER, { id: entryId })).body.data!.waitlistEntry;
  expect(entry).toMatchObject({ status: 'OFFERED', offer: [{ status: 'HELD' }] });
  return { key: waiter, id: entry.offer[0].id, campaignId };
}

/** A BALLOT campaign of one ticket, drawn with one entry: the winner's hold. */
async function wonHold(input: Record<string, unknown> = {}): Promise<Hold> {
  const { apiKey } = await server.createPartner('entrant');
  const campaignId = await server.openCampaignWith(1, { mode: 'BALLOT', ...input });
  const entryId = (await server.gql(apiKey, ENTER, { input: { campaignId, holder: 'lucky' } })).body.data!.enterBallot.entry.id as string;
  expect((await server.gql(ADMIN_KEY, 'mutation($id: ID!) { drawBallot(campaignId: $id) { ballot { winners } } }', { id: campaignId })).body.data!.drawBallot.ballot.winners).toBe(1);
  const entry = (await server.gql(apiKey, WON, { id: entryId })).body.data!.ballotEntry;
  expect(entry).toMatchObject({ status: 'WON', allocations: [{ status: 'HELD' }] });
  return { key: apiKey, id: entry.allocations[0].id, campaignId };
}

/**
 * The hold ends by allocatedAt + windowSeconds however it is extended: every extension past it is
 * refused and changes nothing; one within it is answered (and moves the expiry when it is later).
 */
async function endsByItsWindow(hold: Hold, windowSeconds: number, refusedTtls: number[]): Promise<void> {
  const start = await times(hold.id);
  const end = start.allocatedAt + windowSeconds * 1000;
  expect(Math.abs(start.expiresAt - end)).toBeLessThan(2_000);
  for (const ttl of refusedTtls) {
    expect(await extend(hold.key, hold.id, ttl)).toEqual({ allocation: null, error: { code: 'HOLD_EXTENSION_LIMIT', message: expect.any(String) } });
    expect(await times(hold.id)).toEqual(start);
  }
  // Within the window: answered; the expiry stays (max of the two), never past the window.
  const within = await extend(hold.key, hold.id, 60);
  expect(within.error).toBeNull();
  expect(Date.parse(within.allocation!.expiresAt)).toBe(start.expiresAt);

  // With its expiry a minute away (a hold part-way through its window), an extension inside the
  // window moves it, and one past the window's end is still refused.
  await setTimes(server.sql, 'allocations', { expires_at: "clock_timestamp() + interval '60 seconds'" }, 'id = $1', [hold.id]);
  const moved = await extend(hold.key, hold.id, Math.floor(windowSeconds / 2));
  expect(moved.error).toBeNull();
  const movedTo = Date.parse(moved.allocation!.expiresAt);
  expect(movedTo).toBeGreaterThan(Date.now() + (windowSeconds / 2 - 10) * 1000);
  expect(movedTo).toBeLessThanOrEqual(end);
  for (const ttl of [windowSeconds, ...refusedTtls]) expect((await extend(hold.key, hold.id, ttl)).error?.code).toBe('HOLD_EXTENSION_LIMIT');
  expect((await times(hold.id)).expiresAt).toBe(movedTo);

  // Still the holder's to confirm.
  expect((await server.gql(hold.key, CONFIRM, { id: hold.id })).body.data!.confirmHold.allocation.status).toBe('ACTIVE');
  await assertPoolInvariants(server.sql, hold.campaignId);
}

describe('a waitlist offer', () => {
  test("is held no longer than waitlistOfferSeconds from the offer: extendHold past it answers HOLD_EXTENSION_LIMIT, however often it is asked", async () => {
    await endsByItsWindow(await offeredHold(), 900, [86_400, 86_400, 901]);
  });

  test('with maxHoldSeconds set too, ends by the earlier of the two', async () => {
    await endsByItsWindow(await offeredHold({ waitlistOfferSeconds: 120, maxHoldSeconds: 3_600 }), 120, [86_400, 3_600, 600]);
  });

  test('an operator key is held to the window too', async () => {
    const hold = await offeredHold();
    expect((await extend(ADMIN_KEY, hold.id, 86_400)).error?.code).toBe('HOLD_EXTENSION_LIMIT');
  });
});

describe('a ballot win', () => {
  test('is held no longer than ballotConfirmSeconds from the draw: extendHold past it answers HOLD_EXTENSION_LIMIT', async () => {
    await endsByItsWindow(await wonHold(), 900, [86_400, 86_400, 901]);
  });

  test('with maxHoldSeconds set too, ends by the earlier of the two', async () => {
    await endsByItsWindow(await wonHold({ ballotConfirmSeconds: 120, maxHoldSeconds: 3_600 }), 120, [86_400, 3_600, 600]);
  });

  test('passed on after a lapse, the fresh hold ends by ballotConfirmSeconds from when it was passed on', async () => {
    const { apiKey } = await server.createPartner('entrants');
    const campaignId = await server.openCampaignWith(1, { mode: 'BALLOT', ballotConfirmSeconds: 300 });
    const entries: string[] = [];
    for (const holder of ['a', 'b']) entries.push((await server.gql(apiKey, ENTER, { input: { campaignId, holder } })).body.data!.enterBallot.entry.id);
    await server.gql(ADMIN_KEY, 'mutation($id: ID!) { drawBallot(campaignId: $id) { ballot { winners } } }', { id: campaignId });
    const read = async () => Promise.all(entries.map(async (id) => (await server.gql(apiKey, WON, { id })).body.data!.ballotEntry));
    const winner = (await read()).find((e) => e.status === 'WON')!;
    expect((await server.gql(apiKey, RELEASE, { id: winner.allocations[0].id })).body.data!.releaseAllocation.error).toBeNull();
    const passedOn = await until(async () => (await read()).find((e) => e.status === 'WON' && e.allocations.length === 1), { message: 'the released ticket to pass on' });
    await endsByItsWindow({ key: apiKey, id: passedOn.allocations[0].id, campaignId }, 300, [86_400, 301]);
  });
});

test('over graphql-ws, which serves subscriptions only, extendHold of an offer or a win is refused and changes nothing', async () => {
  for (const hold of [await offeredHold(), await wonHold()]) {
    const before = await times(hold.id);
    const socket = connectSocket(server.url, hold.key);
    try {
      const answer = await runOverSocket(socket, { query: EXTEND, variables: { id: hold.id, ttl: 86_400 } });
      expect(answer.results).toEqual([]);
      expect(answer.error).toEqual([expect.objectContaining({ extensions: { code: 'BAD_REQUEST' } })]);
    } finally {
      await socket.dispose();
    }
    expect(await times(hold.id)).toEqual(before);
  }
});

test("under advanceTestClock, an offer's window is kept as maxHoldSeconds is: from allocatedAt, on the real clock", async () => {
  const made = await server.gql(ADMIN_KEY, 'mutation { createPartner(input: { name: "rehearsal" }) { testApiKey } }');
  const key = made.body.data!.createPartner.testApiKey as string;
  const owner = (await server.gql(ADMIN_KEY, 'mutation { createPartner(input: { name: "rehearsal owner" }) { testApiKey } }')).body.data!.createPartner.testApiKey as string;
  const offer = await offeredHold({ test: true }, { owner, waiter: key });
  const capped = await server.openCampaignWith(1, { test: true, maxHoldSeconds: 900 });
  const held = allocated(await server.hold(key, { campaignId: capped, ttlSeconds: 900 })).id;
  const advance = (campaignId: string, seconds: number) =>
    server.gql(ADMIN_KEY, 'mutation($c: ID!, $s: Int!) { advanceTestClock(campaignId: $c, seconds: $s) { campaign { id } } }', { c: campaignId, s: seconds });
  for (const campaignId of [offer.campaignId, capped]) expect((await advance(campaignId, 300)).body.errors).toBeUndefined();

  // The same answers for the offer and for a hold under maxHoldSeconds: past allocatedAt + 900 s refused.
  for (const ttl of [86_400, 901, 60, 700]) {
    const [onOffer, onHold] = [await extend(key, offer.id, ttl), await extend(key, held, ttl)];
    expect(onOffer.error?.code ?? 'OK').toBe(onHold.error?.code ?? 'OK');
    if (ttl > 900) expect(onOffer.error?.code).toBe('HOLD_EXTENSION_LIMIT');
  }
  for (const id of [offer.id, held]) {
    const t = await times(id);
    expect(t.expiresAt).toBeLessThanOrEqual(t.allocatedAt + 900_000);
  }
  // Past the window on the campaign's clock: expired, not extended.
  for (const campaignId of [offer.campaignId, capped]) await advance(campaignId, 900);
  expect((await extend(key, offer.id, 60)).error?.code).toBe('HOLD_EXPIRED');
  expect((await extend(key, held, 60)).error?.code).toBe('HOLD_EXPIRED');
});
