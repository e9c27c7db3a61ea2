// @dialects postgresql citus
// Release policies (prisma/migrations/20261203110000_release_policy): POOL returns a released or
// expired ticket to the pool; VOID retires it for good — the ticket is VOID, counted in stats.void,
// never claimable again, and a claim never takes over a VOID campaign's expired hold. After every
// test, total = allocated + held + available + void, in the tickets and in the counters alike.
import { ADMIN_KEY, allocated, assertPoolInvariants, startTestServer, type TestServer } from './helpers/testServer';
import { ticketsLiveTwice } from './helpers/sql';
import { expireHolds, until } from './helpers/time';

let server: TestServer;
beforeAll(async () => {
  // The sweeper only when a test asks for it (server.sweep): the lapsed-but-unswept state is read first.
  server = await startTestServer({ database: { poolSize: 20 }, config: { holdSweepIntervalMs: 0 } });
});
afterAll(() => server.stop());

const CREATE = 'mutation($input: CreateCampaignInput!) { createCampaign(input: $input) { campaign { id releasePolicy } } }';
const CREATE_WITH_OFFER =
  'mutation($input: CreateCampaignInput!) { createCampaign(input: $input) { campaign { id releasePolicy waitlistOfferSeconds waitlistLength } } }';
const STATS = 'query($id: ID!) { campaign(id: $id) { releasePolicy stats { total allocated held available void soldOutAt } } }';
const RELEASE = 'mutation($id: ID!) { releaseAllocation(allocationId: $id) { allocation { id status ticket { id code status } } error { code } } }';
const TICKET_OF = 'query($id: ID!) { allocation(id: $id) { status ticket { status } } }';

async function campaignWith(count: number, releasePolicy?: string): Promise<string> {
  const res = await server.gql<{ createCampaign: { campaign: { id: string } } }>(ADMIN_KEY, CREATE, { input: { name: 'policy', ...(releasePolicy ? { releasePolicy } : {}) } });
  expect(res.body.errors).toBeUndefined();
  const id = res.body.data!.createCampaign.campaign.id;
  await server.loadTickets(id, count);
  await server.openCampaign(id);
  return id;
}
const stats = async (id: string) => (await server.gql(ADMIN_KEY, STATS, { id })).body.data!.campaign.stats;
const release = async (key: string, id: string) => (await server.gql(key, RELEASE, { id })).body.data!.releaseAllocation;

test('releasePolicy is POOL unless chosen; VOID and WAITLIST_FIRST are kept; waitlistOfferSeconds defaults within maxHoldSeconds; nonsense is a validation error', async () => {
  const plain = await server.gql(ADMIN_KEY, CREATE, { input: { name: 'default' } });
  expect(plain.body.data!.createCampaign.campaign.releasePolicy).toBe('POOL');
  const voiding = await server.gql(ADMIN_KEY, CREATE, { input: { name: 'void', releasePolicy: 'VOID' } });
  expect(voiding.body.data!.createCampaign.campaign.releasePolicy).toBe('VOID');
  const waitlist = await server.gql(ADMIN_KEY, CREATE_WITH_OFFER, { input: { name: 'w', releasePolicy: 'WAITLIST_FIRST' } });
  expect(waitlist.body.data!.createCampaign.campaign).toMatchObject({ releasePolicy: 'WAITLIST_FIRST', waitlistOfferSeconds: 900, waitlistLength: 0 });
  const short = await server.gql(ADMIN_KEY, CREATE_WITH_OFFER, { input: { name: 's', releasePolicy: 'WAITLIST_FIRST', maxHoldSeconds: 60 } });
  expect(short.body.data!.createCampaign.campaign.waitlistOfferSeconds).toBe(60);
  const listed = await server.gql(ADMIN_KEY, '{ campaigns(first: 5) { edges { node { id releasePolicy waitlistOfferSeconds } } } }');
  expect(listed.body.data!.campaigns.edges.map((e: { node: { releasePolicy: string } }) => e.node.releasePolicy)).toEqual(
    expect.arrayContaining(['POOL', 'VOID', 'WAITLIST_FIRST']),
  );

  const before = (await server.sql.query('SELECT count(*)::int AS n FROM campaigns')).rows[0].n;
  // An offer is a hold: never longer than maxHoldSeconds.
  const tooLong = await server.gql(ADMIN_KEY, CREATE, { input: { name: 'l', releasePolicy: 'WAITLIST_FIRST', maxHoldSeconds: 60, waitlistOfferSeconds: 61 } });
  expect(tooLong.body.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
  expect(tooLong.body.errors?.[0]?.message).toContain('waitlistOfferSeconds');
  const zero = await server.gql(ADMIN_KEY, CREATE, { input: { name: 'z', releasePolicy: 'WAITLIST_FIRST', waitlistOfferSeconds: 0 } });
  expect(zero.body.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
  const nonsense = await server.gql(ADMIN_KEY, CREATE, { input: { name: 'n', releasePolicy: 'SOMETIMES' } });
  expect(nonsense.body.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
  expect((await server.sql.query('SELECT count(*)::int AS n FROM campaigns')).rows[0].n).toBe(before);
});

test('VOID: a released ticket is retired — VOID, counted in void, never claimed again — and the pool then sells out', async () => {
  const partner = await server.createPartner();
  const campaignId = await campaignWith(3, 'VOID');
  const first = await server.claim(partner.apiKey, { campaignId, holder: 'a' });
  await server.claim(partner.apiKey, { campaignId, holder: 'b' });
  const released = await release(partner.apiKey, first.allocation!.id);
  expect(released.allocation).toMatchObject({ status: 'RELEASED', ticket: { status: 'VOID' } });
  expect(await stats(campaignId)).toMatchObject({ total: 3, allocated: 1, held: 0, available: 1, void: 1 });
  const last = await server.claim(partner.apiKey, { campaignId, holder: 'c' });
  expect(last.allocation!.ticket.code).not.toBe(released.allocation.ticket.code);
  expect((await server.claim(partner.apiKey, { campaignId, holder: 'd' })).error?.code).toBe('SOLD_OUT');
  expect(await stats(campaignId)).toMatchObject({ total: 3, allocated: 2, held: 0, available: 0, void: 1, soldOutAt: expect.any(String) });
  // The retired ticket stays retired: no allocation ever takes it again.
  const { rows } = await server.sql.query('SELECT count(*)::int AS n FROM allocations a JOIN tickets t ON t.campaign_id = a.campaign_id AND t.id = a.ticket_id WHERE t.code = $1 AND a.campaign_id = $2', [
    released.allocation.ticket.code,
    campaignId,
  ]);
  expect(rows[0].n).toBe(1);
  await assertPoolInvariants(server.sql, campaignId);
});

test('VOID: an expired hold is retired from the instant it lapses — not taken over by a claim — and the sweeper writes it so', async () => {
  const partner = await server.createPartner();
  const campaignId = await campaignWith(2, 'VOID');
  const held = allocated(await server.hold(partner.apiKey, { campaignId, holder: 'h', ttlSeconds: 60 }));
  // One ticket available, one held: a claim takes the available one; then nothing is available and
  // the hold can never come back to the pool, so the next claim is SOLD_OUT, not ALL_HELD.
  expect((await server.claim(partner.apiKey, { campaignId, holder: 'x' })).allocation).not.toBeNull();
  expect((await server.claim(partner.apiKey, { campaignId, holder: 'y' })).error?.code).toBe('SOLD_OUT');
  await expireHolds(server.sql, [held.id]);
  expect(await stats(campaignId)).toMatchObject({ total: 2, allocated: 1, held: 0, available: 0, void: 1 });
  expect((await server.gql(ADMIN_KEY, TICKET_OF, { id: held.id })).body.data!.allocation).toEqual({ status: 'EXPIRED', ticket: { status: 'VOID' } });
  expect((await server.claim(partner.apiKey, { campaignId, holder: 'z' })).error?.code).toBe('SOLD_OUT');
  expect((await server.sql.query("SELECT status::text FROM allocations WHERE id = $1", [held.id])).rows[0].status).toBe('HELD'); // not taken over
  await server.sweep();
  const { rows } = await server.sql.query('SELECT a.status::text AS a, t.status::text AS t FROM allocations a JOIN tickets t ON t.campaign_id = a.campaign_id AND t.id = a.ticket_id WHERE a.id = $1', [held.id]);
  expect(rows[0]).toEqual({ a: 'EXPIRED', t: 'VOID' });
  expect(await stats(campaignId)).toMatchObject({ total: 2, allocated: 1, held: 0, available: 0, void: 1 });
  await assertPoolInvariants(server.sql, campaignId);
});

test('POOL, for comparison: the same release and expiry return both tickets to the pool', async () => {
  const partner = await server.createPartner();
  const campaignId = await campaignWith(2);
  const claimed = await server.claim(partner.apiKey, { campaignId, holder: 'a' });
  const held = allocated(await server.hold(partner.apiKey, { campaignId, holder: 'b', ttlSeconds: 60 }));
  expect((await server.claim(partner.apiKey, { campaignId, holder: 'c' })).error?.code).toBe('ALL_HELD');
  await release(partner.apiKey, claimed.allocation!.id);
  await expireHolds(server.sql, [held.id]);
  expect(await stats(campaignId)).toMatchObject({ total: 2, allocated: 0, held: 0, available: 2, void: 0 });
  expect((await server.claim(partner.apiKey, { campaignId, holder: 'd' })).allocation).not.toBeNull();
  expect((await server.claim(partner.apiKey, { campaignId, holder: 'e' })).allocation).not.toBeNull(); // takes over the expired hold
  await assertPoolInvariants(server.sql, campaignId);
});

test('VOID under concurrency: 60 claims, 30 holds lapsing and 20 releases at once retire exactly what came back, and the identity holds', async () => {
  const partners = await Promise.all([server.createPartner('p1'), server.createPartner('p2')]);
  const campaignId = await campaignWith(80, 'VOID');
  const holds = (await Promise.all(Array.from({ length: 30 }, (_, i) => server.hold(partners[i % 2]!.apiKey, { campaignId, holder: `hold${i}`, ttlSeconds: 60 })))).map(allocated);
  const claims = await Promise.all(Array.from({ length: 20 }, (_, i) => server.claim(partners[i % 2]!.apiKey, { campaignId, holder: `first${i}` })));
  expect(claims.every((c) => c.allocation)).toBe(true);
  // Together: the holds lapse (and the sweeper runs twice), 20 claims are released, 60 more claims run.
  await Promise.all([
    expireHolds(server.sql, holds.map((h) => h.id)).then(() => server.sweep()).then(() => server.sweep()),
    ...claims.map((c, i) => release(partners[i % 2]!.apiKey, c.allocation!.id)),
    ...Array.from({ length: 60 }, (_, i) => server.claim(partners[i % 2]!.apiKey, { campaignId, holder: `storm${i}` })),
  ]);
  await server.sweep();
  const figures = await assertPoolInvariants(server.sql, campaignId);
  // What came back was retired, all of it: 30 lapsed holds and 20 releases; the storm took the
  // 30 never-touched tickets and no more.
  expect(figures).toEqual({ total: 80, allocated: 30, held: 0, available: 0, void: 50, allotted: 0, returned: 0 });
  expect(await stats(campaignId)).toMatchObject({ total: 80, allocated: 30, held: 0, available: 0, void: 50 });
  expect(await ticketsLiveTwice(server.sql, campaignId)).toEqual([]);
  await until(async () => (await server.sql.query("SELECT count(*)::int AS n FROM allocations WHERE campaign_id = $1 AND status = 'HELD'", [campaignId])).rows[0].n === 0, {
    message: 'every lapsed hold swept',
  });
});

test("a claim's campaign answers its settings too, though the claim statement returns the campaign without them", async () => {
  const partner = await server.createPartner();
  const res = await server.gql<{ createCampaign: { campaign: { id: string } } }>(ADMIN_KEY, CREATE, {
    input: { name: 'settings', releasePolicy: 'VOID', maxHoldSeconds: 600, lowStockThreshold: 3 },
  });
  const campaignId = res.body.data!.createCampaign.campaign.id;
  await server.loadTickets(campaignId, 2);
  await server.openCampaign(campaignId);
  const claimed = await server.gql(partner.apiKey, 'mutation($i: ClaimTicketInput!) { claimTicket(input: $i) { allocation { campaign { id releasePolicy maxHoldSeconds lowStockThreshold } } } }', {
    i: { campaignId, holder: 's' },
  });
  expect(claimed.body.data!.claimTicket.allocation.campaign).toEqual({ id: campaignId, releasePolicy: 'VOID', maxHoldSeconds: 600, lowStockThreshold: 3 });
});
