// @dialects postgresql citus
// One meaning of sold out (issue 27; the definition: CampaignStats.soldOutAt in schema.graphql,
// prisma/functions/tessera_campaign_counts.sql): nothing available, nothing allotted, nothing held
// that could come back (a held ticket cannot come back under VOID). The claims' SOLD_OUT (against
// ALL_HELD and ALL_ALLOTTED), stats.soldOut and soldOutAt, and CAMPAIGN_SOLD_OUT follow it at every
// step — with an allotment outstanding, with holds that expire, with waitlist offers, under VOID —
// and every campaign event carries every CampaignStats field, as the API gives them.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { buildSchema, type GraphQLObjectType } from 'graphql';
import { sealSecret } from '../src/webhooks/secrets';
import { newWebhookSecret } from '../src/webhooks/signature';
import { startReceiver, untilWebhooksSettled, type Receiver } from './helpers/receiver';
import { assertPoolInvariants, ADMIN_KEY, startTestServer, TEST_WEBHOOK_KEY, type AllocationAnswer, type TestServer } from './helpers/testServer';
import { expireHolds, until } from './helpers/time';
import { setTimes } from './helpers/setTimes';

/** Every field of CampaignStats, read from the schema itself: the event must carry each. */
const STATS_FIELDS = Object.keys(
  (buildSchema(readFileSync(path.resolve(__dirname, '../schema.graphql'), 'utf8')).getType('CampaignStats') as GraphQLObjectType).getFields(),
);
const STATS = `query($id: ID!) { campaign(id: $id) { stats { ${STATS_FIELDS.join(' ')} } } }`;
const CONFIRM = 'mutation($id: ID!) { confirmHold(allocationId: $id) { allocation { id status } error { code } } }';
const ALLOT = `mutation($c: ID!, $p: ID!, $size: Int!, $lapsesAt: DateTime) {
  setPartnerAllotment(campaignId: $c, partnerId: $p, size: $size, lapsesAt: $lapsesAt) { id }
}`;
const JOIN = 'mutation($input: JoinWaitlistInput!) { joinWaitlist(input: $input) { entry { id status } error { code } } }';
const ENTRY = 'query($id: ID!) { waitlistEntry(id: $id) { status offer { id } } }';

interface Stats {
  total: number;
  allocated: number;
  held: number;
  allotted: number;
  available: number;
  void: number;
  fillRate: number;
  soldOut: boolean;
  soldOutAt: string | null;
}

let server: TestServer;
let receiver: Receiver;
beforeAll(async () => {
  // No sweeper of its own: the tests sweep (server.sweep) when they mean to.
  server = await startTestServer({ config: { holdSweepIntervalMs: 0 } });
  const secret = newWebhookSecret();
  receiver = await startReceiver({ secret });
  // An operator endpoint: every campaign's events.
  await server.sql.query('INSERT INTO webhook_endpoints (partner_id, url, events, secret_sealed) VALUES (NULL, $1, $2, $3)', [
    `${receiver.url}/hook`,
    ['CAMPAIGN_OPENED', 'CAMPAIGN_SOLD_OUT'],
    sealSecret(secret, TEST_WEBHOOK_KEY),
  ]);
});
afterAll(async () => {
  await server.stop();
  await receiver.close();
});

async function stats(campaignId: string): Promise<Stats> {
  const res = await server.gql<{ campaign: { stats: Stats } }>(ADMIN_KEY, STATS, { id: campaignId });
  expect(res.body.errors).toBeUndefined();
  return res.body.data!.campaign.stats;
}

/**
 * A claim that takes nothing, and the stats right after it: SOLD_OUT exactly when the stats say sold
 * out; ALL_ALLOTTED only while tickets are allotted. Returns the code.
 */
async function refusedConsistently(key: string, campaignId: string, holder: string): Promise<string> {
  const answer = await server.claim(key, { campaignId, holder });
  expect(answer.allocation).toBeNull();
  const s = await stats(campaignId);
  expect(answer.error!.code === 'SOLD_OUT').toBe(s.soldOut);
  if (answer.error!.code === 'ALL_ALLOTTED') expect(s.allotted).toBeGreaterThan(0);
  expect(s.total).toBe(s.allocated + s.held + s.allotted + s.available + s.void);
  return answer.error!.code;
}

/** A sweep, now: its last step announces whatever is due. */
async function announce(): Promise<void> {
  await server.sweep();
}
/** CAMPAIGN_SOLD_OUT announced for the campaign: the marker, and the events written or delivered. */
async function announced(campaignId: string): Promise<{ marker: Date | null; written: number }> {
  const { rows } = await server.sql.query(
    `SELECT (SELECT sold_out_announced_at FROM campaigns WHERE id = $1) AS marker,
            (SELECT count(*) FROM webhook_events WHERE type = 'CAMPAIGN_SOLD_OUT' AND campaign_id = $1)::int
          + (SELECT count(*) FROM webhook_deliveries WHERE event = 'CAMPAIGN_SOLD_OUT' AND body LIKE '%' || $1 || '%')::int AS written`,
    [campaignId],
  );
  return rows[0];
}
const soldOutEvents = (campaignId: string) => receiver.received.filter((e) => e.body.type === 'CAMPAIGN_SOLD_OUT' && e.body.data.campaign.id === campaignId);

/** Nothing is announced while the campaign is not sold out, however many sweeps run. */
async function notAnnounced(campaignId: string): Promise<void> {
  await announce();
  await announce();
  expect(await announced(campaignId)).toEqual({ marker: null, written: 0 });
}

/** Announced once, delivered once, with the figures the API gives (nothing moved since). */
async function announcedOnce(campaignId: string): Promise<void> {
  await announce();
  await until(() => soldOutEvents(campaignId).length > 0, { message: 'CAMPAIGN_SOLD_OUT' });
  await announce();
  await untilWebhooksSettled(server.sql); // everything the sweeps announced has arrived
  const events = soldOutEvents(campaignId);
  expect(events).toHaveLength(1);
  expect((await announced(campaignId)).written).toBe(1);
  const figures = events[0]!.body.data.campaign.stats;
  expect(Object.keys(figures).sort()).toEqual([...STATS_FIELDS].sort());
  expect(figures).toEqual(await stats(campaignId));
  expect(figures.soldOut).toBe(true);
}

test('with tickets still allotted to a partner, the campaign is not sold out; after the allotment lapses and its tickets are claimed, it is, once, with every figure', async () => {
  const [owner, other] = await Promise.all([server.createPartner('allotted'), server.createPartner('pool')]);
  const campaignId = await server.openCampaignWith(20);
  const set = await server.gql(ADMIN_KEY, ALLOT, { c: campaignId, p: owner.id, size: 5, lapsesAt: new Date(Date.now() + 3_600_000).toISOString() });
  expect(set.body.errors).toBeUndefined();

  // The other partner takes the 15 of the pool: nothing is available, 5 are allotted.
  const taken = await Promise.all(Array.from({ length: 15 }, (_, i) => server.claim(other.apiKey, { campaignId, holder: `p${i}` })));
  expect(taken.every((a) => a.allocation)).toBe(true);
  expect(await refusedConsistently(other.apiKey, campaignId, 'late')).toBe('ALL_ALLOTTED');
  expect(await stats(campaignId)).toEqual({ total: 20, allocated: 15, held: 0, allotted: 5, available: 0, void: 0, fillRate: 0.75, soldOut: false, soldOutAt: null });
  await notAnnounced(campaignId);

  // The owner draws one; the allotment then lapses (the clock moved in SQL), its 4 come back.
  expect((await server.claim(owner.apiKey, { campaignId, holder: 'o1' })).allocation).not.toBeNull();
  expect(await refusedConsistently(other.apiKey, campaignId, 'late')).toBe('ALL_ALLOTTED');
  await setTimes(server.sql, 'allotments', { lapses_at: "clock_timestamp() - interval '1 millisecond'" }, 'campaign_id = $1', [campaignId]);
  expect(await stats(campaignId)).toMatchObject({ allotted: 0, available: 4, soldOut: false, soldOutAt: null });
  await notAnnounced(campaignId);

  let last: AllocationAnswer | null = null;
  for (let i = 0; i < 4; i += 1) {
    last = await server.claim(other.apiKey, { campaignId, holder: `after${i}` });
    expect(last.allocation).not.toBeNull();
    if (i < 3) await notAnnounced(campaignId);
  }
  expect(await refusedConsistently(other.apiKey, campaignId, 'late')).toBe('SOLD_OUT');
  const s = await stats(campaignId);
  expect(s).toMatchObject({ total: 20, allocated: 20, held: 0, allotted: 0, available: 0, void: 0, fillRate: 1, soldOut: true });
  expect(Date.parse(s.soldOutAt!)).toBe(Date.parse(last!.allocation!.allocatedAt));
  await announcedOnce(campaignId);
  await assertPoolInvariants(server.sql, campaignId);
});

test('a hold keeps a campaign from selling out until it lapses and is claimed; a hold confirmed sells it out', async () => {
  const [partner, holder] = await Promise.all([server.createPartner('claims'), server.createPartner('holds')]);
  const campaignId = await server.openCampaignWith(3);
  await server.claim(partner.apiKey, { campaignId, holder: 'a' });
  const held = await server.hold(holder.apiKey, { campaignId, holder: 'h' });
  const kept = await server.hold(holder.apiKey, { campaignId, holder: 'k' });
  expect(await refusedConsistently(partner.apiKey, campaignId, 'late')).toBe('ALL_HELD');
  expect(await stats(campaignId)).toMatchObject({ allocated: 1, held: 2, available: 0, soldOut: false, soldOutAt: null });
  await notAnnounced(campaignId);

  // One hold lapses: its ticket is claimable at once, and claimed.
  await expireHolds(server.sql, [held.allocation!.id]);
  expect(await stats(campaignId)).toMatchObject({ held: 1, available: 1, soldOut: false });
  expect((await server.claim(partner.apiKey, { campaignId, holder: 'b' })).allocation).not.toBeNull();
  expect(await refusedConsistently(partner.apiKey, campaignId, 'late')).toBe('ALL_HELD');
  await notAnnounced(campaignId);

  // The other is confirmed: nothing is left that could come back.
  expect((await server.gql(holder.apiKey, CONFIRM, { id: kept.allocation!.id })).body.data!.confirmHold.allocation.status).toBe('ACTIVE');
  expect(await refusedConsistently(partner.apiKey, campaignId, 'late')).toBe('SOLD_OUT');
  expect(await stats(campaignId)).toMatchObject({ allocated: 3, held: 0, available: 0, soldOut: true, soldOutAt: expect.any(String) });
  await announcedOnce(campaignId);
  await assertPoolInvariants(server.sql, campaignId);
});

test('WAITLIST_FIRST: a lapsed hold on its way to the waitlist, then the offer, keep the campaign from selling out; the offer confirmed sells it out', async () => {
  const partner = await server.createPartner('waitlisted');
  const campaignId = await server.openCampaignWith(2, { releasePolicy: 'WAITLIST_FIRST', waitlistOfferSeconds: 600 });
  await server.claim(partner.apiKey, { campaignId, holder: 'a' });
  const held = await server.hold(partner.apiKey, { campaignId, holder: 'h' });
  expect(await refusedConsistently(partner.apiKey, campaignId, 'w')).toBe('ALL_HELD');
  const joined = (await server.gql(partner.apiKey, JOIN, { input: { campaignId, holder: 'w' } })).body.data!.joinWaitlist;
  expect(joined.error).toBeNull();

  await expireHolds(server.sql, [held.allocation!.id]);
  // Until a sweep offers it, the lapsed hold's ticket is held (no claim takes it), then offered.
  expect(await refusedConsistently(partner.apiKey, campaignId, 'x')).toBe('ALL_HELD');
  await server.sweep();
  const offered = (await server.gql(partner.apiKey, ENTRY, { id: joined.entry.id })).body.data!.waitlistEntry;
  expect(offered.status).toBe('OFFERED');
  expect(await stats(campaignId)).toMatchObject({ allocated: 1, held: 1, available: 0, soldOut: false, soldOutAt: null });
  expect(await refusedConsistently(partner.apiKey, campaignId, 'x')).toBe('ALL_HELD');
  await notAnnounced(campaignId);

  await server.gql(partner.apiKey, CONFIRM, { id: offered.offer[0].id });
  expect(await refusedConsistently(partner.apiKey, campaignId, 'x')).toBe('SOLD_OUT');
  expect(await stats(campaignId)).toMatchObject({ allocated: 2, held: 0, soldOut: true, soldOutAt: expect.any(String) });
  await announcedOnce(campaignId);
  await assertPoolInvariants(server.sql, campaignId);
});

test('VOID: a held ticket cannot come back, so the campaign is sold out with it held — once, and still after the hold lapses', async () => {
  const partner = await server.createPartner('void');
  const campaignId = await server.openCampaignWith(2, { releasePolicy: 'VOID' });
  await server.claim(partner.apiKey, { campaignId, holder: 'a' });
  const held = await server.hold(partner.apiKey, { campaignId, holder: 'h' });
  expect(await refusedConsistently(partner.apiKey, campaignId, 'late')).toBe('SOLD_OUT');
  const s = await stats(campaignId);
  expect(s).toMatchObject({ allocated: 1, held: 1, available: 0, void: 0, soldOut: true });
  expect(Date.parse(s.soldOutAt!)).toBe(Date.parse(held.allocation!.allocatedAt));
  await announcedOnce(campaignId);

  await expireHolds(server.sql, [held.allocation!.id]);
  expect(await stats(campaignId)).toMatchObject({ allocated: 1, held: 0, void: 1, soldOut: true, soldOutAt: s.soldOutAt });
  expect(await refusedConsistently(partner.apiKey, campaignId, 'late')).toBe('SOLD_OUT');
  await announce();
  expect((await announced(campaignId)).written).toBe(1);
  await assertPoolInvariants(server.sql, campaignId);
});

test('a campaign without tickets is not sold out, though a claim finds nothing to take (SOLD_OUT); loading tickets lets claims through', async () => {
  const partner = await server.createPartner('empty');
  const campaignId = await server.openCampaignWith(0);
  expect((await server.claim(partner.apiKey, { campaignId, holder: 'a' })).error?.code).toBe('SOLD_OUT');
  expect(await stats(campaignId)).toMatchObject({ total: 0, soldOut: false, soldOutAt: null });
  await notAnnounced(campaignId);
  await server.loadTickets(campaignId, 1);
  expect((await server.claim(partner.apiKey, { campaignId, holder: 'a' })).allocation).not.toBeNull();
  expect(await stats(campaignId)).toMatchObject({ total: 1, soldOut: true, soldOutAt: expect.any(String) });
});

test('every campaign event carries every CampaignStats field, with the figures the API gives', async () => {
  const campaignId = await server.createCampaign({ name: 'Figures' });
  await server.loadTickets(campaignId, 4);
  await server.openCampaign(campaignId);
  const opened = await until(() => receiver.received.find((e) => e.body.type === 'CAMPAIGN_OPENED' && e.body.data.campaign.id === campaignId), {
    message: 'CAMPAIGN_OPENED',
  });
  expect(opened.body.data.campaign.stats).toEqual(await stats(campaignId));
  expect(opened.body.data.campaign.stats).toEqual({ total: 4, allocated: 0, held: 0, allotted: 0, available: 4, void: 0, fillRate: 0, soldOut: false, soldOutAt: null });
});
