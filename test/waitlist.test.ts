// @dialects postgresql citus
// Waitlists (src/db/waitlist.ts) under the WAITLIST_FIRST release policy: joining only when nothing
// is available, FIFO offers of returned tickets as HELD allocations, all or nothing per entry,
// confirmation (ACCEPTED), decline and leave (LEFT), expiry that passes the offer on (EXPIRED), and
// no first-come claim ever taking a returned ticket while an entry it could serve waits. After every
// test: total = allocated + held + allotted + available + void, nothing left RETURNED, no ticket
// live twice.
import { CLAIM_MESSAGES, WAITLIST_SOLD_OUT_MESSAGE } from '../src/errors';
import { sealSecret } from '../src/webhooks/secrets';
import { newWebhookSecret } from '../src/webhooks/signature';
import { startReceiver, untilWebhooksSettled } from './helpers/receiver';
import { ticketsLiveTwice } from './helpers/sql';
import { allocated, assertPoolInvariants, ADMIN_KEY, startTestServer, TEST_WEBHOOK_KEY, type TestServer } from './helpers/testServer';
import { sleep, until } from './helpers/time';
import { setTimes } from './helpers/setTimes';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ database: { poolSize: 30 }, config: { holdSweepIntervalMs: 100 } });
});
afterAll(() => server.stop());

const ENTRY_FIELDS = 'id holder quantity status position createdAt offer { id status expiresAt holder partner { id } ticket { code status } }';
const JOIN = `mutation($input: JoinWaitlistInput!) { joinWaitlist(input: $input) { entry { ${ENTRY_FIELDS} } error { code message } } }`;
const LEAVE = `mutation($id: ID!) { leaveWaitlist(entryId: $id) { entry { ${ENTRY_FIELDS} } error { code message } } }`;
const ENTRY = `query($id: ID!) { waitlistEntry(id: $id) { ${ENTRY_FIELDS} } }`;
const RELEASE = 'mutation($id: ID!) { releaseAllocation(allocationId: $id) { allocation { id status } error { code } } }';
const CONFIRM = 'mutation($id: ID!) { confirmHold(allocationId: $id) { allocation { id status } error { code } } }';
const CAMPAIGN = `query($id: ID!) {
  campaign(id: $id) {
    waitlistLength
    stats { total allocated held allotted available void }
    waitlist(first: 100) { totalCount edges { node { id holder status position } } }
  }
}`;

interface Allocation {
  id: string;
  status: string;
  expiresAt: string | null;
  holder: string;
  partner: { id: string };
  ticket: { code: string; status: string };
}
interface Entry {
  id: string;
  holder: string;
  quantity: number;
  status: string;
  position: number | null;
  offer: Allocation[];
}
type EntryPayload = { entry: Entry | null; error: { code: string; message: string } | null };

const join = async (key: string, input: Record<string, unknown>) =>
  (await server.gql<{ joinWaitlist: EntryPayload }>(key, JOIN, { input })).body.data!.joinWaitlist;
const leave = async (key: string, id: string) => (await server.gql<{ leaveWaitlist: EntryPayload }>(key, LEAVE, { id })).body.data!.leaveWaitlist;
const entry = async (key: string, id: string) => (await server.gql<{ waitlistEntry: Entry | null }>(key, ENTRY, { id })).body.data!.waitlistEntry;
const release = async (key: string, id: string) => (await server.gql(key, RELEASE, { id })).body.data!.releaseAllocation;
const confirm = async (key: string, id: string) => (await server.gql(key, CONFIRM, { id })).body.data!.confirmHold;
const campaign = async (id: string) => {
  const res = await server.gql<{ campaign: { waitlistLength: number; stats: Record<string, number>; waitlist: { totalCount: number; edges: { node: Entry }[] } } }>(
    ADMIN_KEY,
    CAMPAIGN,
    { id },
  );
  expect(res.body.errors).toBeUndefined();
  return res.body.data!.campaign;
};

/** An OPEN WAITLIST_FIRST campaign of `count` tickets, every one claimed by `owner` (holders t0, t1, …). */
async function soldOut(count: number, owner: { apiKey: string }, input: Record<string, unknown> = {}) {
  const campaignId = await server.openCampaignWith(count, { releasePolicy: 'WAITLIST_FIRST', ...input });
  const claims = [];
  for (let i = 0; i < count; i += 1) claims.push((await server.claim(owner.apiKey, { campaignId, holder: `t${i}` })).allocation!);
  return { campaignId, claims };
}

/** No ticket left on its way to the waitlist, none live twice, and the stats identity. */
async function settled(campaignId: string) {
  await until(async () => (await server.sql.query("SELECT count(*)::int AS n FROM tickets WHERE campaign_id = $1 AND status = 'RETURNED'", [campaignId])).rows[0].n === 0, {
    message: 'returned tickets to be offered',
  });
  expect(await ticketsLiveTwice(server.sql, campaignId)).toEqual([]);
  const figures = await campaign(campaignId);
  const s = figures.stats;
  expect(s.allocated + s.held + s.allotted + s.available + s.void).toBe(s.total);
  await assertPoolInvariants(server.sql, campaignId);
  return figures;
}

test('joining: only on a WAITLIST_FIRST campaign with nothing available, one live entry per holder, key replays, bad input refused with nothing recorded', async () => {
  const [owner, partner, other] = await Promise.all([server.createPartner('owner'), server.createPartner('waiter'), server.createPartner('other')]);
  const entries = async () => (await server.sql.query('SELECT count(*)::int AS n FROM waitlist_entries')).rows[0].n as number;
  const before = await entries();

  const pooled = await server.openCampaignWith(1);
  expect((await join(partner.apiKey, { campaignId: pooled, holder: 'h' })).error?.code).toBe('INVALID_INPUT');
  const { campaignId } = await soldOut(2, owner, { perHolderLimit: 3 });
  const open = await server.openCampaignWith(2, { releasePolicy: 'WAITLIST_FIRST' });
  expect((await join(partner.apiKey, { campaignId: open, holder: 'h' })).error?.code).toBe('NOT_SOLD_OUT');
  expect((await join(partner.apiKey, { campaignId: '00000000-0000-4000-8000-000000000000', holder: 'h' })).error?.code).toBe('CAMPAIGN_NOT_FOUND');
  expect((await join(partner.apiKey, { campaignId: 'nonsense', holder: 'h' })).error?.code).toBe('CAMPAIGN_NOT_FOUND');
  const draft = await server.createCampaign({ releasePolicy: 'WAITLIST_FIRST' });
  expect((await join(partner.apiKey, { campaignId: draft, holder: 'h' })).error?.code).toBe('CAMPAIGN_NOT_OPEN');
  for (const bad of [{ quantity: 0 }, { quantity: 101 }, { holder: '' }, { holder: 'x'.repeat(257) }, { idempotencyKey: '' }, { quantity: 4 }]) {
    const answer = await join(partner.apiKey, { campaignId, holder: 'h', ...bad });
    expect(answer).toMatchObject({ entry: null, error: { code: 'INVALID_INPUT' } });
  }
  expect(await entries()).toBe(before);

  const first = await join(partner.apiKey, { campaignId, holder: 'h', quantity: 2, idempotencyKey: 'k1', metadata: { seat: 'any' } });
  expect(first.error).toBeNull();
  expect(first.entry).toMatchObject({ holder: 'h', quantity: 2, status: 'WAITING', position: 1, offer: [] });
  const again = await join(partner.apiKey, { campaignId, holder: 'h', quantity: 2, idempotencyKey: 'k1', metadata: { seat: 'any' } });
  expect(again).toMatchObject({ error: null, entry: { id: first.entry!.id } });
  expect((await join(partner.apiKey, { campaignId, holder: 'h', quantity: 1, idempotencyKey: 'k1' })).error?.code).toBe('IDEMPOTENCY_KEY_REUSED');
  const twice = await join(partner.apiKey, { campaignId, holder: 'h' });
  expect(twice).toMatchObject({ error: { code: 'ALREADY_ENTERED' }, entry: { id: first.entry!.id, status: 'WAITING' } });
  // The same holder name of another partner is another holder.
  const theirs = await join(other.apiKey, { campaignId, holder: 'h' });
  expect(theirs.entry).toMatchObject({ status: 'WAITING', position: 2 });
  const third = await join(partner.apiKey, { campaignId, holder: 'i' });
  expect(third.entry!.position).toBe(3);

  // A partner sees its own entries only; the admin sees all, in join order.
  expect(await entry(other.apiKey, first.entry!.id)).toBeNull();
  expect((await leave(other.apiKey, first.entry!.id)).error?.code).toBe('ENTRY_NOT_FOUND');
  expect((await leave(other.apiKey, 'nonsense')).error?.code).toBe('ENTRY_NOT_FOUND');
  expect(await entry(partner.apiKey, first.entry!.id)).toMatchObject({ status: 'WAITING', position: 1 });
  const listed = await server.gql(partner.apiKey, CAMPAIGN, { id: campaignId });
  expect(listed.body.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
  let figures = await campaign(campaignId);
  expect(figures.waitlistLength).toBe(3);
  expect(figures.waitlist.edges.map((e) => [e.node.holder, e.node.position])).toEqual([
    ['h', 1],
    ['h', 2],
    ['i', 3],
  ]);

  // Leaving renumbers those behind; leaving twice is NOT_WAITLISTED; then the holder may join again, at the back.
  expect((await leave(partner.apiKey, first.entry!.id)).entry).toMatchObject({ status: 'LEFT', position: null });
  expect((await leave(partner.apiKey, first.entry!.id)).error?.code).toBe('NOT_WAITLISTED');
  expect((await entry(other.apiKey, theirs.entry!.id))!.position).toBe(1);
  const back = await join(partner.apiKey, { campaignId, holder: 'h' });
  expect(back.entry).toMatchObject({ status: 'WAITING', position: 3 });
  figures = await campaign(campaignId);
  expect(figures.waitlistLength).toBe(3);
  expect(figures.waitlist.totalCount).toBe(4);
  await settled(campaignId);
});

test('SOLD_OUT on a WAITLIST_FIRST campaign says to join the waitlist with joinWaitlist (claim, hold and a replayed key alike); on a POOL campaign it does not', async () => {
  const [owner, partner] = await Promise.all([server.createPartner('owner'), server.createPartner('refused')]);
  const { campaignId } = await soldOut(1, owner);
  const claimed = await server.claim(partner.apiKey, { campaignId, holder: 'z', idempotencyKey: 'sold-out-1' });
  expect(claimed.error).toEqual({ code: 'SOLD_OUT', message: WAITLIST_SOLD_OUT_MESSAGE });
  expect(WAITLIST_SOLD_OUT_MESSAGE).toContain('joinWaitlist');
  const replayed = await server.claim(partner.apiKey, { campaignId, holder: 'z', idempotencyKey: 'sold-out-1' });
  expect(replayed.error).toEqual({ code: 'SOLD_OUT', message: WAITLIST_SOLD_OUT_MESSAGE });
  const held = await server.hold(partner.apiKey, { campaignId, holder: 'z', ttlSeconds: 60 });
  expect(held.error).toEqual({ code: 'SOLD_OUT', message: WAITLIST_SOLD_OUT_MESSAGE });
  // And joining, as it says, works.
  expect((await join(partner.apiKey, { campaignId, holder: 'z' })).entry).toMatchObject({ status: 'WAITING', position: 1 });

  const pool = await server.openCampaignWith(1);
  await server.claim(owner.apiKey, { campaignId: pool, holder: 't0' });
  expect((await server.claim(partner.apiKey, { campaignId: pool, holder: 'z' })).error).toEqual({ code: 'SOLD_OUT', message: CLAIM_MESSAGES.SOLD_OUT });
});

test('a release is offered to the head of the waitlist as a hold; confirmHold makes the entry ACCEPTED, and the next one moves up', async () => {
  const [owner, partner] = await Promise.all([server.createPartner('owner'), server.createPartner('waiter')]);
  const { campaignId, claims } = await soldOut(3, owner, { waitlistOfferSeconds: 120 });
  const a = (await join(partner.apiKey, { campaignId, holder: 'a', metadata: { note: 'first' } })).entry!;
  const b = (await join(partner.apiKey, { campaignId, holder: 'b' })).entry!;
  expect((await server.claim(partner.apiKey, { campaignId, holder: 'z' })).error?.code).toBe('SOLD_OUT');

  const started = Date.now();
  expect((await release(owner.apiKey, claims[0]!.id)).allocation.status).toBe('RELEASED');
  const offered = (await entry(partner.apiKey, a.id))!;
  expect(offered).toMatchObject({ status: 'OFFERED', position: null });
  expect(offered.offer).toHaveLength(1);
  expect(offered.offer[0]).toMatchObject({ status: 'HELD', holder: 'a', partner: { id: partner.id }, ticket: { status: 'HELD' } });
  const expiresIn = Date.parse(offered.offer[0]!.expiresAt!) - started;
  expect(expiresIn).toBeGreaterThan(100_000);
  expect(expiresIn).toBeLessThan(125_000);
  expect((await entry(partner.apiKey, b.id))!.position).toBe(1);
  // The offered ticket is held: nobody else can claim it, and the figures say so.
  expect((await server.claim(owner.apiKey, { campaignId, holder: 'late' })).error?.code).toBe('ALL_HELD');
  expect((await campaign(campaignId)).stats).toMatchObject({ held: 1, available: 0, allocated: 2 });
  const metadata = await server.sql.query('SELECT metadata FROM allocations WHERE id = $1', [offered.offer[0]!.id]);
  expect(metadata.rows[0].metadata).toEqual({ note: 'first' });

  expect((await confirm(partner.apiKey, offered.offer[0]!.id)).allocation.status).toBe('ACTIVE');
  expect(await entry(partner.apiKey, a.id)).toMatchObject({ status: 'ACCEPTED', offer: [{ status: 'ACTIVE' }] });
  // ACCEPTED: the holder may join again.
  expect((await join(partner.apiKey, { campaignId, holder: 'a' })).entry).toMatchObject({ status: 'WAITING', position: 2 });
  const figures = await settled(campaignId);
  expect(figures.stats).toMatchObject({ allocated: 3, held: 0, available: 0 });
  expect(figures.waitlistLength).toBe(2);
});

test('all or nothing: an entry for 2 waits while a later entry for 1 is served; a single returned ticket no entry covers goes to the pool; two returned together go to the entry for 2', async () => {
  const [owner, partner] = await Promise.all([server.createPartner('owner'), server.createPartner('waiter')]);
  const { campaignId, claims } = await soldOut(4, owner);
  const pair = (await join(partner.apiKey, { campaignId, holder: 'pair', quantity: 2 })).entry!;
  const single = (await join(partner.apiKey, { campaignId, holder: 'single' })).entry!;

  await release(owner.apiKey, claims[0]!.id);
  expect((await entry(partner.apiKey, single.id))!.status).toBe('OFFERED');
  expect(await entry(partner.apiKey, pair.id)).toMatchObject({ status: 'WAITING', position: 1 });
  // One ticket, and only an entry for 2 waits: it goes to the pool at once, never held back.
  await release(owner.apiKey, claims[1]!.id);
  expect(await entry(partner.apiKey, pair.id)).toMatchObject({ status: 'WAITING', offer: [] });
  expect((await campaign(campaignId)).stats).toMatchObject({ available: 1 });
  expect((await server.claim(owner.apiKey, { campaignId, holder: 'quick' })).allocation).not.toBeNull();

  // Two holds that lapse together come back together (the sweeper): the entry for 2 gets both.
  // One after the other, each release comes back alone (1 ticket: the pool; two releases at once may
  // be offered together). Take them as holds that lapse at one instant.
  await release(owner.apiKey, claims[2]!.id);
  await release(owner.apiKey, claims[3]!.id);
  expect(await entry(partner.apiKey, pair.id)).toMatchObject({ status: 'WAITING' });
  const holds = [];
  for (const holder of ['h1', 'h2']) {
    holds.push(allocated(await server.hold(owner.apiKey, { campaignId, holder, ttlSeconds: 60 })).id);
  }
  await setTimes(server.sql, 'allocations', { expires_at: "clock_timestamp() + interval '300 milliseconds'" }, 'id = ANY($1::uuid[])', [holds]);
  const offered = await until(async () => {
    const now = await entry(partner.apiKey, pair.id);
    return now?.status === 'OFFERED' ? now : null;
  }, { message: 'the pair to be offered' });
  expect(offered.offer).toHaveLength(2);
  expect(offered.offer.every((x) => x.status === 'HELD' && x.holder === 'pair')).toBe(true);
  // Confirming one of two leaves the entry OFFERED; the second makes it ACCEPTED.
  await confirm(partner.apiKey, offered.offer[0]!.id);
  expect((await entry(partner.apiKey, pair.id))!.status).toBe('OFFERED');
  await confirm(partner.apiKey, offered.offer[1]!.id);
  expect((await entry(partner.apiKey, pair.id))!.status).toBe('ACCEPTED');
  await settled(campaignId);
});

test('offers expire and pass on: an unconfirmed offer lapses (EXPIRED, HOLD_EXPIRED on confirm) and its ticket goes to the next entry, then to the pool', async () => {
  const [owner, partner] = await Promise.all([server.createPartner('owner'), server.createPartner('waiter')]);
  const { campaignId, claims } = await soldOut(2, owner, { waitlistOfferSeconds: 1 });
  const first = (await join(partner.apiKey, { campaignId, holder: 'first' })).entry!;
  const second = (await join(partner.apiKey, { campaignId, holder: 'second' })).entry!;
  await release(owner.apiKey, claims[0]!.id);
  const offer = (await entry(partner.apiKey, first.id))!.offer[0]!;
  const code = offer.ticket.code;

  const passed = await until(async () => {
    const now = await entry(partner.apiKey, second.id);
    return now?.status === 'OFFERED' ? now : null;
  }, { message: 'the offer to pass on', timeoutMs: 5_000 });
  expect(passed.offer[0]!.ticket.code).toBe(code);
  expect(await entry(partner.apiKey, first.id)).toMatchObject({ status: 'EXPIRED', offer: [{ status: 'EXPIRED' }] });
  expect((await confirm(partner.apiKey, offer.id)).error?.code).toBe('HOLD_EXPIRED');

  // Nobody left waiting: the next lapse puts the ticket in the pool.
  await until(async () => (await campaign(campaignId)).stats.available === 1, { message: 'the ticket back in the pool', timeoutMs: 5_000 });
  expect((await entry(partner.apiKey, second.id))!.status).toBe('EXPIRED');
  const taken = await server.claim(owner.apiKey, { campaignId, holder: 'after' });
  expect(taken.allocation).not.toBeNull();
  await settled(campaignId);
});

test('declining (releaseAllocation on an offered hold) and leaving while OFFERED pass the tickets on; the entry is LEFT', async () => {
  const [owner, partner] = await Promise.all([server.createPartner('owner'), server.createPartner('waiter')]);
  const { campaignId, claims } = await soldOut(2, owner);
  const entries = [];
  for (const holder of ['a', 'b', 'c']) entries.push((await join(partner.apiKey, { campaignId, holder })).entry!);
  await release(owner.apiKey, claims[0]!.id);
  const offerA = (await entry(partner.apiKey, entries[0]!.id))!.offer[0]!;
  expect((await release(partner.apiKey, offerA.id)).allocation.status).toBe('RELEASED');
  expect((await entry(partner.apiKey, entries[0]!.id))!.status).toBe('LEFT');
  const offeredB = (await entry(partner.apiKey, entries[1]!.id))!;
  expect(offeredB).toMatchObject({ status: 'OFFERED', offer: [{ ticket: { code: offerA.ticket.code } }] });

  const left = await leave(partner.apiKey, entries[1]!.id);
  expect(left.entry).toMatchObject({ status: 'LEFT', offer: [{ status: 'RELEASED' }] });
  expect((await entry(partner.apiKey, entries[2]!.id))!).toMatchObject({ status: 'OFFERED', offer: [{ ticket: { code: offerA.ticket.code } }] });
  // The admin may make someone leave too.
  expect((await leave(ADMIN_KEY, entries[2]!.id)).entry!.status).toBe('LEFT');
  expect((await campaign(campaignId)).stats).toMatchObject({ available: 1, held: 0 });
  await settled(campaignId);
});

test('under WAITLIST_FIRST an expired hold is never taken over by a claim: it waits for the sweeper, which offers it to the waitlist', async () => {
  const [owner, partner, rival] = await Promise.all([server.createPartner('owner'), server.createPartner('waiter'), server.createPartner('rival')]);
  const campaignId = await server.openCampaignWith(1, { releasePolicy: 'WAITLIST_FIRST' });
  expect((await server.hold(owner.apiKey, { campaignId, ttlSeconds: 1 })).allocation).not.toBeNull();
  const waiting = (await join(partner.apiKey, { campaignId, holder: 'w' })).entry!;
  // Claims hammer the campaign from before the lapse until the entry has its offer: none gets the ticket.
  const answers: (string | null)[] = [];
  let offered = false;
  const hammer = (async () => {
    while (!offered) answers.push((await server.claim(rival.apiKey, { campaignId, holder: `r${answers.length}` })).error?.code ?? null);
  })();
  await until(async () => (offered = (await entry(partner.apiKey, waiting.id))?.status === 'OFFERED'), { message: 'the offer', timeoutMs: 5_000 });
  await hammer;
  expect(answers.length).toBeGreaterThan(5);
  expect(answers.every((code) => code === 'ALL_HELD')).toBe(true);
  await settled(campaignId);
});

test('30 releases racing 30 joins and 30 claims: every returned ticket goes to exactly one place, offers follow join order, and no entry waits while a ticket is available', async () => {
  const [owner, waiter, claimer] = await Promise.all([server.createPartner('owner'), server.createPartner('waiter'), server.createPartner('claimer')]);
  const { campaignId, claims } = await soldOut(60, owner, { waitlistOfferSeconds: 600 });
  const outcomes = await Promise.all([
    ...claims.slice(0, 30).map(async (c, i) => {
      await sleep(i * 3);
      return { kind: 'release', answer: (await release(owner.apiKey, c.id)).allocation?.status ?? null };
    }),
    ...Array.from({ length: 30 }, async (_, i) => {
      await sleep(i * 3);
      return { kind: 'join', answer: (await join(waiter.apiKey, { campaignId, holder: `j${i}` })).error?.code ?? 'OK' };
    }),
    ...Array.from({ length: 30 }, async (_, i) => {
      await sleep(i * 3);
      return { kind: 'claim', answer: (await server.claim(claimer.apiKey, { campaignId, holder: `c${i}` })).error?.code ?? 'OK' };
    }),
  ]);
  expect(outcomes.filter((o) => o.kind === 'release').every((o) => o.answer === 'RELEASED')).toBe(true);
  for (const o of outcomes.filter((x) => x.kind === 'join')) expect(['OK', 'NOT_SOLD_OUT']).toContain(o.answer);
  for (const o of outcomes.filter((x) => x.kind === 'claim')) expect(['OK', 'SOLD_OUT', 'ALL_HELD']).toContain(o.answer);
  await settled(campaignId);

  // Where each of the 30 returned tickets went: one live allocation (an offer, or a claim) or the pool.
  const { rows: fates } = await server.sql.query<{ code: string; status: string; offers: number; claims: number }>(
    `SELECT t.code, t.status::text,
            count(a.id) FILTER (WHERE a.waitlist_entry_id IS NOT NULL AND a.status IN ('HELD', 'ACTIVE'))::int AS offers,
            count(a.id) FILTER (WHERE a.waitlist_entry_id IS NULL AND a.partner_id = $2 AND a.status IN ('HELD', 'ACTIVE'))::int AS claims
       FROM tickets t
       JOIN allocations r ON r.campaign_id = t.campaign_id AND r.ticket_id = t.id AND r.status = 'RELEASED'
       LEFT JOIN allocations a ON a.campaign_id = t.campaign_id AND a.ticket_id = t.id AND a.sequence > r.sequence
      WHERE t.campaign_id = $1
      GROUP BY t.code, t.status`,
    [campaignId, claimer.id],
  );
  expect(fates).toHaveLength(30);
  for (const f of fates) expect(f.offers + f.claims + (f.status === 'AVAILABLE' ? 1 : 0)).toBe(1);
  const offeredCount = fates.filter((f) => f.offers === 1).length;

  // Offers went in join order: the offered entries are the earliest ones, and were offered in that order.
  const { rows: entries } = await server.sql.query<{ seq: string; status: string; offered_seq: string | null }>(
    `SELECT w.seq::text, w.status::text, (SELECT min(a.sequence)::text FROM allocations a WHERE a.campaign_id = w.campaign_id AND a.waitlist_entry_id = w.id) AS offered_seq
       FROM waitlist_entries w WHERE w.campaign_id = $1 ORDER BY w.seq`,
    [campaignId],
  );
  const offeredEntries = entries.filter((e) => e.offered_seq !== null);
  expect(offeredEntries).toHaveLength(offeredCount);
  expect(entries.slice(0, offeredCount).every((e) => e.status === 'OFFERED')).toBe(true);
  const offerOrder = offeredEntries.map((e) => BigInt(e.offered_seq!));
  expect([...offerOrder].sort((x, y) => (x < y ? -1 : x > y ? 1 : 0))).toEqual(offerOrder);
  // Every join that was answered is an entry; and no entry waits while a ticket is available.
  expect(entries).toHaveLength(outcomes.filter((o) => o.kind === 'join' && o.answer === 'OK').length);
  const figures = await campaign(campaignId);
  expect(figures.waitlistLength === 0 || figures.stats.available === 0).toBe(true);
  expect(figures.waitlistLength).toBe(entries.filter((e) => e.status === 'WAITING').length);
});

test('a lapsing allotment under WAITLIST_FIRST goes to the waitlist first: no claim takes its tickets, the waiting entries get them', async () => {
  const [owner, waiter, rival] = await Promise.all([server.createPartner('allotted'), server.createPartner('waiter'), server.createPartner('rival')]);
  const campaignId = await server.openCampaignWith(3, { releasePolicy: 'WAITLIST_FIRST' });
  const set = await server.gql(
    ADMIN_KEY,
    'mutation($c: ID!, $p: ID!, $at: DateTime) { setPartnerAllotment(campaignId: $c, partnerId: $p, size: 3, lapsesAt: $at) { id } }',
    { c: campaignId, p: owner.id, at: new Date(Date.now() + 600).toISOString() },
  );
  expect(set.body.errors).toBeUndefined();
  expect((await server.claim(rival.apiKey, { campaignId, holder: 'r' })).error?.code).toBe('ALL_ALLOTTED');
  const [x, y] = [(await join(waiter.apiKey, { campaignId, holder: 'x' })).entry!, (await join(waiter.apiKey, { campaignId, holder: 'y' })).entry!];
  const answers: (string | null)[] = [];
  let done = false;
  const hammer = (async () => {
    while (!done) answers.push((await server.claim(rival.apiKey, { campaignId, holder: `r${answers.length}` })).error?.code ?? null);
  })();
  await until(async () => (done = (await entry(waiter.apiKey, y.id))?.status === 'OFFERED'), { message: 'the lapse offered', timeoutMs: 5_000 });
  await hammer;
  // Until the sweep has offered them, the leftovers are on their way to the waitlist: no claim takes
  // one. The third, which no entry wants, goes to the pool after the offers: a rival may take it then.
  for (const code of answers) expect([null, 'ALL_ALLOTTED', 'ALL_HELD']).toContain(code);
  const { rows } = await server.sql.query<{ rival: string | null; offered: string }>(
    `SELECT max(sequence) FILTER (WHERE partner_id = $2)::text AS rival, max(sequence) FILTER (WHERE waitlist_entry_id IS NOT NULL)::text AS offered
       FROM allocations WHERE campaign_id = $1`,
    [campaignId, rival.id],
  );
  expect(answers.filter((code) => code === null).length).toBeLessThanOrEqual(1);
  if (rows[0]!.rival !== null) expect(BigInt(rows[0]!.rival)).toBeGreaterThan(BigInt(rows[0]!.offered));
  expect((await entry(waiter.apiKey, x.id))!.status).toBe('OFFERED');
  await settled(campaignId);
});

test('WAITLIST_OFFERED reaches the entry\'s partner, signed, with the entry and its allocations; another partner\'s endpoint never sees it', async () => {
  const [owner, waiter, bystander] = await Promise.all([server.createPartner('owner'), server.createPartner('waiter'), server.createPartner('bystander')]);
  const secret = newWebhookSecret();
  const receiver = await startReceiver({ secret });
  const received = receiver.received;
  try {
    for (const p of [waiter, bystander]) {
      await server.sql.query('INSERT INTO webhook_endpoints (partner_id, url, events, secret_sealed) VALUES ($1, $2, $3, $4)', [
        p.id,
        `${receiver.url}/${p.id}`,
        ['WAITLIST_OFFERED'],
        sealSecret(secret, TEST_WEBHOOK_KEY),
      ]);
    }
    const { campaignId, claims } = await soldOut(1, owner);
    const waiting = (await join(waiter.apiKey, { campaignId, holder: 'w' })).entry!;
    await release(owner.apiKey, claims[0]!.id);
    const offer = (await entry(waiter.apiKey, waiting.id))!.offer[0]!;
    await untilWebhooksSettled(server.sql);
    expect(received).toHaveLength(1);
    expect(received[0]!.path).toBe(`/${waiter.id}`);
    expect(received[0]!.body).toMatchObject({
      type: 'WAITLIST_OFFERED',
      data: {
        entry: { id: waiting.id, campaignId, holder: 'w' },
        allocations: [{ id: offer.id, campaignId, partnerId: waiter.id, holder: 'w', status: 'HELD', expiresAt: offer.expiresAt, ticket: { code: offer.ticket.code } }],
      },
    });
    await settled(campaignId);
  } finally {
    await receiver.close();
  }
});

test('leaves racing offers: an entry that left is never offered afterwards, and every offer that raced a leave is released', async () => {
  const [owner, waiter] = await Promise.all([server.createPartner('owner'), server.createPartner('waiter')]);
  const { campaignId, claims } = await soldOut(20, owner);
  const entries: Entry[] = [];
  for (let i = 0; i < 20; i += 1) entries.push((await join(waiter.apiKey, { campaignId, holder: `q${i}` })).entry!);
  await Promise.all([
    ...claims.map(async (c, i) => {
      await sleep(i * 2);
      await release(owner.apiKey, c.id);
    }),
    ...entries.map(async (e, i) => {
      await sleep(i * 2);
      expect((await leave(waiter.apiKey, e.id)).entry!.status).toBe('LEFT');
    }),
  ]);
  await settled(campaignId);
  const { rows } = await server.sql.query<{ status: string; live: number }>(
    `SELECT w.status::text, count(a.id) FILTER (WHERE a.status IN ('HELD', 'ACTIVE'))::int AS live
       FROM waitlist_entries w LEFT JOIN allocations a ON a.campaign_id = w.campaign_id AND a.waitlist_entry_id = w.id
      WHERE w.campaign_id = $1 GROUP BY w.campaign_id, w.id`,
    [campaignId],
  );
  expect(rows.every((r) => r.status === 'LEFT' && r.live === 0)).toBe(true);
  // Everyone left: every returned ticket is back in the pool.
  expect((await campaign(campaignId)).stats).toMatchObject({ available: 20, held: 0, allocated: 0 });
});

test("an entry whose partner is at its quota is passed over and keeps its place; the next entry gets the ticket", async () => {
  const [owner, capped, other] = await Promise.all([server.createPartner('owner'), server.createPartner('capped'), server.createPartner('other')]);
  const { campaignId, claims } = await soldOut(2, owner);
  const first = (await join(capped.apiKey, { campaignId, holder: 'c' })).entry!;
  const second = (await join(other.apiKey, { campaignId, holder: 'o' })).entry!;
  const quota = await server.gql(ADMIN_KEY, 'mutation($c: ID!, $p: ID!) { setPartnerQuota(campaignId: $c, partnerId: $p, quota: 0) { campaign { id } } }', {
    c: campaignId,
    p: capped.id,
  });
  expect(quota.body.errors).toBeUndefined();
  await release(owner.apiKey, claims[0]!.id);
  expect(await entry(capped.apiKey, first.id)).toMatchObject({ status: 'WAITING', position: 1, offer: [] });
  expect((await entry(other.apiKey, second.id))!.status).toBe('OFFERED');
  // Its quota lifted, the next returned ticket is its.
  await server.gql(ADMIN_KEY, 'mutation($c: ID!, $p: ID!) { setPartnerQuota(campaignId: $c, partnerId: $p, quota: null) { campaign { id } } }', { c: campaignId, p: capped.id });
  await release(owner.apiKey, claims[1]!.id);
  expect((await entry(capped.apiKey, first.id))!.status).toBe('OFFERED');
  await settled(campaignId);
});
