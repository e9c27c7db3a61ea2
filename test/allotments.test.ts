// @dialects postgresql citus
// Allotments (src/db/allotments.ts): tickets set aside for one partner. Other partners can never take
// them; the partner's claims draw on them first; remaining = size - used; at lapsesAt the unused ones
// are claimable by anyone at once and the sweeper returns them to the pool exactly once, announcing
// ALLOTMENT_LAPSED. After every test, total = allocated + held + allotted + available + void.
import { sealSecret } from '../src/webhooks/secrets';
import { newWebhookSecret } from '../src/webhooks/signature';
import { ADMIN_KEY, allocated, assertPoolInvariants, startTestServer, TEST_WEBHOOK_KEY, type TestServer } from './helpers/testServer';
import { startReceiver, untilWebhooksSettled } from './helpers/receiver';
import { ticketsLiveTwice } from './helpers/sql';
import { sleep, until, untilSessionsWaitForLock } from './helpers/time';
import { setTimes } from './helpers/setTimes';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ database: { poolSize: 20 }, config: { holdSweepIntervalMs: 100 } });
});
afterAll(() => server.stop());

const SET = `mutation($c: ID!, $p: ID!, $size: Int!, $lapsesAt: DateTime) {
  setPartnerAllotment(campaignId: $c, partnerId: $p, size: $size, lapsesAt: $lapsesAt) {
    id allotments { partner { id } size used remaining lapsesAt lapsedAt }
  }
}`;
const READ = `query($id: ID!) {
  campaign(id: $id) {
    stats { total allocated held allotted available void }
    allotments { partner { id } size used remaining lapsesAt lapsedAt }
  }
}`;

interface AllotmentView {
  partner: { id: string };
  size: number;
  used: number;
  remaining: number;
  lapsesAt: string | null;
  lapsedAt: string | null;
}

async function allot(campaignId: string, partnerId: string, size: number, lapsesAt: string | null = null) {
  return server.gql<{ setPartnerAllotment: { allotments: AllotmentView[] } }>(ADMIN_KEY, SET, { c: campaignId, p: partnerId, size, lapsesAt });
}
async function read(key: string, campaignId: string) {
  const res = await server.gql<{ campaign: { stats: Record<string, number>; allotments: AllotmentView[] } }>(key, READ, { id: campaignId });
  expect(res.body.errors).toBeUndefined();
  return res.body.data!.campaign;
}
/** Live allocations whose ticket is set aside for another partner: must be none. */
const outsiders = async (campaignId: string) =>
  (
    await server.sql.query(
      `SELECT a.id FROM allocations a JOIN tickets t ON t.campaign_id = a.campaign_id AND t.id = a.ticket_id
        WHERE a.campaign_id = $1 AND a.status IN ('ACTIVE', 'HELD') AND t.allotted_to IS NOT NULL AND t.allotted_to <> a.partner_id`,
      [campaignId],
    )
  ).rows;

test("an allotment sets tickets aside: the owner draws on them first, others cannot take them, and a release returns one", async () => {
  const [owner, other] = await Promise.all([server.createPartner('owner'), server.createPartner('other')]);
  const campaignId = await server.openCampaignWith(8);
  const set = await allot(campaignId, owner.id, 3);
  expect(set.body.errors).toBeUndefined();
  expect(set.body.data!.setPartnerAllotment.allotments).toEqual([{ partner: { id: owner.id }, size: 3, used: 0, remaining: 3, lapsesAt: null, lapsedAt: null }]);
  expect((await read(ADMIN_KEY, campaignId)).stats).toEqual({ total: 8, allocated: 0, held: 0, allotted: 3, available: 5, void: 0 });

  // The owner's first two claims come out of its allotment.
  const drawn = [await server.claim(owner.apiKey, { campaignId, holder: 'o1' }), await server.claim(owner.apiKey, { campaignId, holder: 'o2' })];
  const { rows } = await server.sql.query('SELECT from_allotment FROM allocations WHERE id = ANY($1::uuid[])', [drawn.map((d) => d.allocation!.id)]);
  expect(rows.map((r) => r.from_allotment)).toEqual([true, true]);
  expect((await read(owner.apiKey, campaignId)).allotments).toEqual([expect.objectContaining({ size: 3, used: 2, remaining: 1 })]);
  // A partner sees only its own allotment.
  expect((await read(other.apiKey, campaignId)).allotments).toEqual([]);

  // The other partner takes the 5 of the pool, then is told the rest is allotted.
  const others = await Promise.all(Array.from({ length: 6 }, (_, i) => server.claim(other.apiKey, { campaignId, holder: `x${i}` })));
  expect(others.filter((c) => c.allocation).length).toBe(5);
  expect(others.filter((c) => c.error).map((c) => c.error!.code)).toEqual(['ALL_ALLOTTED']);
  expect(await outsiders(campaignId)).toEqual([]);
  expect((await read(ADMIN_KEY, campaignId)).stats).toEqual({ total: 8, allocated: 7, held: 0, allotted: 1, available: 0, void: 0 });

  // A drawn ticket released goes back to the allotment, not to the pool.
  await server.gql(owner.apiKey, 'mutation($id: ID!) { releaseAllocation(allocationId: $id) { error { code } } }', { id: drawn[0]!.allocation!.id });
  expect((await read(ADMIN_KEY, campaignId)).allotments).toEqual([expect.objectContaining({ size: 3, used: 1, remaining: 2 })]);
  expect((await server.claim(other.apiKey, { campaignId, holder: 'x9' })).error?.code).toBe('ALL_ALLOTTED');
  expect((await server.claim(owner.apiKey, { campaignId, holder: 'o3' })).allocation).not.toBeNull();
  expect((await server.claim(owner.apiKey, { campaignId, holder: 'o4' })).allocation).not.toBeNull();
  // Spent: the owner too now finds nothing (SOLD_OUT: nothing is allotted to anyone else).
  expect((await server.claim(owner.apiKey, { campaignId, holder: 'o5' })).error?.code).toBe('SOLD_OUT');
  const figures = await read(ADMIN_KEY, campaignId);
  expect(figures.allotments).toEqual([expect.objectContaining({ size: 3, used: 3, remaining: 0 })]);
  expect(figures.stats).toEqual({ total: 8, allocated: 8, held: 0, allotted: 0, available: 0, void: 0 });
  await assertPoolInvariants(server.sql, campaignId);
});

test('setPartnerAllotment resizes within what is available and what is drawn, removes with 0, and refuses bad input and other callers', async () => {
  const [owner, other] = await Promise.all([server.createPartner('resize'), server.createPartner('bystander')]);
  const campaignId = await server.openCampaignWith(10);
  await allot(campaignId, owner.id, 4);
  await server.claim(owner.apiKey, { campaignId, holder: 'a' });
  await server.claim(owner.apiKey, { campaignId, holder: 'b' }); // used 2
  const grown = await allot(campaignId, owner.id, 7, new Date(Date.now() + 3_600_000).toISOString());
  expect(grown.body.data!.setPartnerAllotment.allotments).toEqual([expect.objectContaining({ size: 7, used: 2, remaining: 5, lapsesAt: expect.any(String) })]);
  expect((await read(ADMIN_KEY, campaignId)).stats).toMatchObject({ allocated: 2, allotted: 5, available: 3 });
  const shrunk = await allot(campaignId, owner.id, 2);
  expect(shrunk.body.data!.setPartnerAllotment.allotments).toEqual([expect.objectContaining({ size: 2, used: 2, remaining: 0 })]);
  expect((await read(ADMIN_KEY, campaignId)).stats).toMatchObject({ allocated: 2, allotted: 0, available: 8 });

  const refusals: [Record<string, unknown>, string, string][] = [
    [{ size: 1 }, 'BAD_USER_INPUT', 'below the 2 tickets drawn'],
    [{ size: 11 }, 'BAD_USER_INPUT', 'Only 8 more'],
    [{ size: -1 }, 'BAD_USER_INPUT', 'size'],
    [{ size: 3, lapsesAt: new Date(Date.now() - 1000).toISOString() }, 'BAD_USER_INPUT', 'lapsesAt'],
    [{ p: '00000000-0000-4000-8000-000000000000' }, 'NOT_FOUND', 'Partner'],
    [{ c: '00000000-0000-4000-8000-000000000000' }, 'NOT_FOUND', 'Campaign'],
  ];
  for (const [change, code, text] of refusals) {
    const res = await server.gql(ADMIN_KEY, SET, { c: campaignId, p: owner.id, size: 3, lapsesAt: null, ...change });
    expect(res.body.errors?.[0]?.extensions?.code).toBe(code);
    expect(res.body.errors?.[0]?.message).toContain(text);
  }
  const forbidden = await server.gql(owner.apiKey, SET, { c: campaignId, p: owner.id, size: 5 });
  expect(forbidden.body.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
  expect((await read(ADMIN_KEY, campaignId)).allotments).toEqual([expect.objectContaining({ size: 2, used: 2, remaining: 0 })]);
  const audit = await server.sql.query("SELECT outcome FROM audit_log WHERE operation = 'setPartnerAllotment' ORDER BY id DESC LIMIT 1");
  expect(audit.rows[0].outcome).toBe('FORBIDDEN');

  // Size 0 removes it: the drawn allocations stay, and return to the pool when released.
  await allot(campaignId, owner.id, 4);
  const removed = await allot(campaignId, owner.id, 0);
  expect(removed.body.data!.setPartnerAllotment.allotments).toEqual([]);
  expect((await read(ADMIN_KEY, campaignId)).stats).toMatchObject({ allocated: 2, allotted: 0, available: 8 });
  const stillDrawn = await server.sql.query('SELECT count(*)::int AS n FROM allocations WHERE campaign_id = $1 AND from_allotment', [campaignId]);
  expect(stillDrawn.rows[0].n).toBe(0);
  expect((await server.claim(other.apiKey, { campaignId, holder: 'c' })).allocation).not.toBeNull();

  await server.gql(ADMIN_KEY, 'mutation($id: ID!) { closeCampaign(id: $id) { campaign { id } } }', { id: campaignId });
  const closed = await allot(campaignId, owner.id, 1);
  expect(closed.body.errors?.[0]?.extensions?.code).toBe('INVALID_TRANSITION');
  await assertPoolInvariants(server.sql, campaignId);
});

test('100 claims by three partners against two allotments and a general pool: no outsider ever takes an allotted ticket', async () => {
  const partners = await Promise.all([server.createPartner('A'), server.createPartner('B'), server.createPartner('C')]);
  const [a, b, c] = partners as [(typeof partners)[0], (typeof partners)[0], (typeof partners)[0]];
  const campaignId = await server.openCampaignWith(60);
  await allot(campaignId, a.id, 20);
  await allot(campaignId, b.id, 10);
  const answers = await Promise.all(
    Array.from({ length: 100 }, (_, i) => {
      const p = partners[i % 3]!;
      return server.claim(p.apiKey, { campaignId, holder: `h${i}` }).then((answer) => ({ partner: p.id, answer }));
    }),
  );
  const won = (id: string) => answers.filter((x) => x.partner === id && x.answer.allocation).length;
  expect(answers.filter((x) => x.answer.allocation).length).toBe(60); // 100 asked for 60: all taken
  expect(won(a.id)).toBeGreaterThanOrEqual(20); // 34 claims: at least its allotment
  expect(won(b.id)).toBeGreaterThanOrEqual(10);
  expect(won(c.id)).toBeLessThanOrEqual(30); // the pool, at most
  for (const x of answers.filter((y) => y.answer.error)) expect(['SOLD_OUT', 'ALL_ALLOTTED']).toContain(x.answer.error!.code);
  expect(await outsiders(campaignId)).toEqual([]);
  const drawn = await server.sql.query(
    'SELECT partner_id, count(*)::int AS n FROM allocations WHERE campaign_id = $1 AND from_allotment GROUP BY partner_id',
    [campaignId],
  );
  expect(Object.fromEntries(drawn.rows.map((r) => [r.partner_id, r.n]))).toEqual({ [a.id]: 20, [b.id]: 10 });
  const figures = await read(ADMIN_KEY, campaignId);
  for (const allotment of figures.allotments) expect(allotment.remaining).toBe(allotment.size - allotment.used);
  expect(figures.stats).toEqual({ total: 60, allocated: 60, held: 0, allotted: 0, available: 0, void: 0 });
  expect(await ticketsLiveTwice(server.sql, campaignId)).toEqual([]);
  await assertPoolInvariants(server.sql, campaignId);
});

test('a lapse racing 50 claims returns each ticket exactly once: nothing before lapsesAt, everything after, ALLOTMENT_LAPSED once', async () => {
  const secret = newWebhookSecret();
  const receiver = await startReceiver({ secret });
  const received = receiver.received;
  try {
    const [owner, other] = await Promise.all([server.createPartner('lapsing'), server.createPartner('waiting')]);
    await server.sql.query('INSERT INTO webhook_endpoints (partner_id, url, events, secret_sealed) VALUES ($1, $2, $3, $4)', [
      owner.id,
      `${receiver.url}/hook`,
      ['ALLOTMENT_LAPSED'],
      sealSecret(secret, TEST_WEBHOOK_KEY),
    ]);
    const campaignId = await server.openCampaignWith(30);
    const lapsesAt = new Date(Date.now() + 400);
    await allot(campaignId, owner.id, 30, lapsesAt.toISOString());
    // 50 claims over 1.5 s around the lapse: before it every one is refused, after it the 30
    // tickets go, each once.
    const answers = await Promise.all(
      Array.from({ length: 50 }, async (_, i) => {
        await sleep(i * 30);
        return server.claim(other.apiKey, { campaignId, holder: `w${i}` });
      }),
    );
    const taken = answers.filter((x) => x.allocation);
    expect(taken.length).toBe(30);
    // ALL_HELD too: a claim that meets the sweeper returning the lapsed tickets (rows locked, then
    // taken by other claims) may answer "retry" — never SOLD_OUT early; the 30 taken say nothing was lost.
    for (const x of answers.filter((y) => y.error)) expect(['ALL_ALLOTTED', 'ALL_HELD', 'SOLD_OUT']).toContain(x.error!.code);
    const early = await server.sql.query('SELECT count(*)::int AS n FROM allocations WHERE campaign_id = $1 AND allocated_at < $2', [campaignId, lapsesAt]);
    expect(early.rows[0].n).toBe(0);
    expect(await ticketsLiveTwice(server.sql, campaignId)).toEqual([]);

    await until(async () => (await read(ADMIN_KEY, campaignId)).allotments[0]?.lapsedAt, { message: 'the sweeper to write the lapse' });
    const figures = await read(ADMIN_KEY, campaignId);
    expect(figures.allotments).toEqual([expect.objectContaining({ size: 30, used: 0, remaining: 0, lapsedAt: expect.any(String) })]);
    expect(figures.stats).toEqual({ total: 30, allocated: 30, held: 0, allotted: 0, available: 0, void: 0 });
    await server.sweep(); // a second sweep would announce it again: it must not
    await untilWebhooksSettled(server.sql);
    expect(received.map((e) => e.body.type)).toEqual(['ALLOTMENT_LAPSED']);
    expect(received[0]!.body.data).toMatchObject({ partnerId: owner.id, campaign: { id: campaignId } });
    expect(received[0]!.body.data.returned).toBe(30); // freed by the sweeper, or taken by claims from lapsesAt on
    await assertPoolInvariants(server.sql, campaignId);
  } finally {
    await receiver.close();
  }
});

test("an allotment's lapse is exact without the sweeper: from lapsesAt the remainder is available in stats and to every claim", async () => {
  const [owner, other] = await Promise.all([server.createPartner('slow'), server.createPartner('quick')]);
  const campaignId = await server.openCampaignWith(4);
  await allot(campaignId, owner.id, 4, new Date(Date.now() + 60_000).toISOString());
  expect((await server.claim(other.apiKey, { campaignId, holder: 'q' })).error?.code).toBe('ALL_ALLOTTED');
  // Lapsed now (the sweeper may not have run yet): the figures and the claims follow at once.
  await setTimes(server.sql, 'allotments', { lapses_at: "clock_timestamp() - interval '1 millisecond'" }, 'campaign_id = $1', [campaignId]);
  expect((await read(ADMIN_KEY, campaignId)).stats).toMatchObject({ allotted: 0, available: 4 });
  expect((await read(ADMIN_KEY, campaignId)).allotments).toEqual([expect.objectContaining({ remaining: 0 })]);
  expect((await server.claim(other.apiKey, { campaignId, holder: 'q' })).allocation).not.toBeNull();
  await assertPoolInvariants(server.sql, campaignId);
});

test('quota and holder limit still cap an allotment owner: what it cannot claim stays set aside for it', async () => {
  const owner = await server.createPartner('capped');
  const campaignId = await server.openCampaignWith(10, { perHolderLimit: 2 });
  await allot(campaignId, owner.id, 6);
  await server.gql(ADMIN_KEY, 'mutation($c: ID!, $p: ID!) { setPartnerQuota(campaignId: $c, partnerId: $p, quota: 4) { campaign { id } } }', { c: campaignId, p: owner.id });
  const one = await Promise.all([1, 2, 3].map(() => server.claim(owner.apiKey, { campaignId, holder: 'same-holder' })));
  expect(one.filter((x) => x.allocation).length).toBe(2);
  expect(one.filter((x) => x.error).map((x) => x.error!.code)).toEqual(['HOLDER_LIMIT_REACHED']);
  const more = await Promise.all(['p', 'q', 'r'].map((h) => server.claim(owner.apiKey, { campaignId, holder: h })));
  expect(more.filter((x) => x.allocation).length).toBe(2);
  expect(more.filter((x) => x.error).map((x) => x.error!.code)).toEqual(['PARTNER_QUOTA_REACHED']);
  const figures = await read(ADMIN_KEY, campaignId);
  expect(figures.allotments).toEqual([expect.objectContaining({ size: 6, used: 4, remaining: 2 })]);
  expect(figures.stats).toEqual({ total: 10, allocated: 4, held: 0, allotted: 2, available: 4, void: 0 });
  await assertPoolInvariants(server.sql, campaignId);
});

test('under VOID a drawn ticket that comes back is retired and the allotment shrinks by one; held drawn tickets return to it under POOL', async () => {
  const owner = await server.createPartner('voiding');
  const res = await server.gql<{ createCampaign: { campaign: { id: string } } }>(ADMIN_KEY, 'mutation { createCampaign(input: { name: "v", releasePolicy: VOID }) { campaign { id } } }');
  const voiding = res.body.data!.createCampaign.campaign.id;
  await server.loadTickets(voiding, 5);
  await server.openCampaign(voiding);
  await allot(voiding, owner.id, 3);
  const drawn = await server.claim(owner.apiKey, { campaignId: voiding, holder: 'v1' });
  await server.gql(owner.apiKey, 'mutation($id: ID!) { releaseAllocation(allocationId: $id) { error { code } } }', { id: drawn.allocation!.id });
  const after = await read(ADMIN_KEY, voiding);
  expect(after.allotments).toEqual([expect.objectContaining({ size: 2, used: 0, remaining: 2 })]);
  expect(after.stats).toEqual({ total: 5, allocated: 0, held: 0, allotted: 2, available: 2, void: 1 });
  await assertPoolInvariants(server.sql, voiding);

  // POOL: a drawn hold that expires goes back to the allotment — counted there at once, and written
  // there by the sweeper.
  const pool = await server.openCampaignWith(3);
  await allot(pool, owner.id, 2);
  const held = allocated(await server.hold(owner.apiKey, { campaignId: pool, ttlSeconds: 60 }));
  await setTimes(server.sql, 'allocations', { expires_at: 'clock_timestamp()' }, 'id = $1', [held.id]);
  expect((await read(ADMIN_KEY, pool)).stats).toEqual({ total: 3, allocated: 0, held: 0, allotted: 2, available: 1, void: 0 });
  await until(async () => (await server.sql.query("SELECT status::text AS s FROM allocations WHERE id = $1", [held.id])).rows[0].s === 'EXPIRED', {
    message: 'the sweeper to end the hold',
  });
  const swept = await read(ADMIN_KEY, pool);
  expect(swept.allotments).toEqual([expect.objectContaining({ size: 2, used: 0, remaining: 2 })]);
  expect(swept.stats).toEqual({ total: 3, allocated: 0, held: 0, allotted: 2, available: 1, void: 0 });
  await assertPoolInvariants(server.sql, pool);
});

test("an owner's claim that finds its allotted tickets locked by a transaction in flight waits for it, and takes what it gives back", async () => {
  const owner = await server.createPartner('patient');
  const campaignId = await server.openCampaignWith(1);
  await allot(campaignId, owner.id, 1);
  const other = await server.sql.connect();
  try {
    await other.query('BEGIN');
    await other.query("SELECT id FROM tickets WHERE campaign_id = $1 AND status = 'ALLOTTED' FOR UPDATE", [campaignId]);
    const pending = server.claim(owner.apiKey, { campaignId, holder: 'o' });
    await untilSessionsWaitForLock(server.sql, 1);
    await other.query('ROLLBACK'); // the ticket comes back: the waiting claim must take it, not answer SOLD_OUT
    expect((await pending).allocation).not.toBeNull();
  } finally {
    other.release();
  }
  await assertPoolInvariants(server.sql, campaignId);
});
