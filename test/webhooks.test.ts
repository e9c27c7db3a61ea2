// Partner webhooks end to end (docs/WEBHOOKS.md): real Tessera servers on a real PostgreSQL, real
// node:http receivers that check every signature as a partner would. Events come from the outbox
// the claim statements, the allocations trigger and open/close write in the same transactions as
// their changes; the dispatcher drains them into deliveries, leases them and sends them.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import { leaseDue, recordAttempt } from '../src/db/webhookDeliveries';
import { PER_ENDPOINT } from '../src/webhooks/dispatcher';
import { sealSecret } from '../src/webhooks/secrets';
import { newWebhookSecret } from '../src/webhooks/signature';
import { startReceiver, untilWebhooksSettled, type Receiver } from './helpers/receiver';
import { allocated, createTestDatabase, startTestServer, TEST_WEBHOOK_KEY, ADMIN_KEY, type TestServer } from './helpers/testServer';
import { until } from './helpers/time';

const ALL_EVENTS = ['ALLOCATION_CREATED', 'ALLOCATION_RELEASED', 'HOLD_CREATED', 'HOLD_CONFIRMED', 'HOLD_EXPIRED', 'CAMPAIGN_OPENED', 'CAMPAIGN_CLOSED'];

/** An endpoint written straight into the table, as createWebhook would store it. */
async function endpoint(server: TestServer, receiver: Receiver, partnerId: string | null, events = ALL_EVENTS): Promise<string> {
  const { rows } = await server.sql.query<{ id: string }>(
    'INSERT INTO webhook_endpoints (partner_id, url, events, secret_sealed) VALUES ($1, $2, $3, $4) RETURNING id',
    [partnerId, `${receiver.url}/hook`, events, sealSecret(receiver.secret!, TEST_WEBHOOK_KEY)],
  );
  return rows[0]!.id;
}

let server: TestServer;
const receivers: Receiver[] = [];
const receiver = async () => {
  const r = await startReceiver({ secret: newWebhookSecret() });
  receivers.push(r);
  return r;
};
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server.stop();
  await Promise.all(receivers.map((r) => r.close()));
});

test('without an enabled endpoint nothing is written to the outbox', async () => {
  const partner = await server.createPartner('quiet');
  const campaignId = await server.openCampaignWith(5);
  expect((await server.claim(partner.apiKey, { campaignId })).allocation).toBeTruthy();
  const { rows } = await server.sql.query('SELECT count(*)::int AS n FROM webhook_events');
  expect(rows[0].n).toBe(0);
});

test('a claim reaches its partner and the operator, signed, and never another partner', async () => {
  const [a, b] = [await server.createPartner('a'), await server.createPartner('b')];
  const [toA, toB, toOperator] = [await receiver(), await receiver(), await receiver()];
  await endpoint(server, toA, a.id);
  await endpoint(server, toB, b.id);
  await endpoint(server, toOperator, null);
  const campaignId = await server.openCampaignWith(10);
  const claimed = allocated(await server.claim(a.apiKey, { campaignId, holder: 'alice', metadata: { seat: 1 } }));

  const got = await until(() => toA.received.find((r) => r.body.type === 'ALLOCATION_CREATED'), { message: "A's ALLOCATION_CREATED" });
  expect(toA.rejected).toEqual([]);
  expect(got.eventId).toBe(got.body.id);
  expect(got.body.data.allocation).toEqual({
    id: claimed.id,
    campaignId,
    partnerId: a.id,
    holder: 'alice',
    sequence: claimed.sequence,
    status: 'ACTIVE',
    expiresAt: null,
    ticket: { code: claimed.ticket.code },
  });
  await until(() => toOperator.received.find((r) => r.eventId === got.eventId), { message: 'the operator to get the same event' });
  // B gets campaign-wide events only: never A's allocation.
  await untilWebhooksSettled(server.sql);
  expect(toB.received.filter((r) => r.body.data.allocation)).toEqual([]);
});

test("one allocation's events arrive in the order they happened: hold, confirmation, creation, release", async () => {
  const partner = await server.createPartner('order');
  const hook = await receiver();
  await endpoint(server, hook, partner.id);
  const campaignId = await server.openCampaignWith(3);
  const held = allocated(await server.hold(partner.apiKey, { campaignId, ttlSeconds: 60 }));
  await server.gql(partner.apiKey, 'mutation($id: ID!) { confirmHold(allocationId: $id) { allocation { id } } }', { id: held.id });
  await server.gql(partner.apiKey, 'mutation($id: ID!) { releaseAllocation(allocationId: $id) { allocation { id } } }', { id: held.id });
  const mine = () => hook.received.filter((r) => r.body.data.allocation?.id === held.id);
  await until(() => mine().length >= 4, { message: 'four events of the allocation' });
  expect(mine().map((r) => [r.body.type, r.body.data.allocation.status])).toEqual([
    ['HOLD_CREATED', 'HELD'],
    ['HOLD_CONFIRMED', 'ACTIVE'],
    ['ALLOCATION_CREATED', 'ACTIVE'],
    ['ALLOCATION_RELEASED', 'RELEASED'],
  ]);
  expect(mine()[0]!.body.data.allocation.expiresAt).not.toBeNull();
  expect(hook.rejected).toEqual([]);
});

test('opening and closing a campaign reach every endpoint that asks, partners included, with the campaign and its figures', async () => {
  const partner = await server.createPartner('campaigns');
  const hook = await receiver();
  await endpoint(server, hook, partner.id, ['CAMPAIGN_OPENED', 'CAMPAIGN_CLOSED']);
  const campaignId = await server.createCampaign();
  await server.loadTickets(campaignId, 4);
  await server.openCampaign(campaignId);
  // Claims right after the opening, most likely before the dispatcher drains it: the event still
  // reports the figures of the moment it opened, taken in the opening's own statement.
  await Promise.all([1, 2].map((i) => server.claim(partner.apiKey, { campaignId, holder: `early${i}` })));
  await server.openCampaign(campaignId); // opening an open campaign changes nothing: no second event
  await server.gql(ADMIN_KEY, 'mutation($id: ID!) { closeCampaign(id: $id) { campaign { id } } }', { id: campaignId });
  await server.gql(ADMIN_KEY, 'mutation($id: ID!) { closeCampaign(id: $id) { campaign { id } } }', { id: campaignId });
  const mine = () => hook.received.filter((r) => r.body.data.campaign?.id === campaignId);
  await until(() => mine().length >= 2, { message: 'the opening and the closing' });
  await untilWebhooksSettled(server.sql);
  expect(mine().map((r) => [r.body.type, r.body.data.campaign.status])).toEqual([
    ['CAMPAIGN_OPENED', 'OPEN'],
    ['CAMPAIGN_CLOSED', 'CLOSED'],
  ]);
  // Every CampaignStats field (test/soldOut.test.ts checks the names against schema.graphql).
  const none = { held: 0, allotted: 0, void: 0, soldOut: false, soldOutAt: null };
  expect(mine()[0]!.body.data.campaign.stats).toEqual({ ...none, total: 4, allocated: 0, available: 4, fillRate: 0 });
  expect(mine()[1]!.body.data.campaign.stats).toEqual({ ...none, total: 4, allocated: 2, available: 2, fillRate: 0.5 });
});

test("a scoped partner key's endpoints get only its campaigns' events, campaign-wide ones included; null brings every campaign back", async () => {
  const partner = await server.createPartner('scoped hooks');
  const hook = await receiver();
  await endpoint(server, hook, partner.id, ['ALLOCATION_CREATED', 'CAMPAIGN_CLOSED']);
  const [inside, outside] = [await server.openCampaignWith(3), await server.openCampaignWith(3)];
  // Its allocation in `outside` is made before the scope; its later events must not reach it.
  const early = allocated(await server.claim(partner.apiKey, { campaignId: outside, holder: 'before' }));
  await until(() => hook.received.find((r) => r.body.data.allocation?.id === early.id), { message: 'the claim made before the scope' });
  const scope = 'mutation($p: ID!, $ids: [ID!]) { scopePartnerKey(partnerId: $p, campaignIds: $ids) { campaignScope } }';
  expect((await server.gql(ADMIN_KEY, scope, { p: partner.id, ids: [inside] })).body.data!.scopePartnerKey.campaignScope).toEqual([inside]);

  const claimed = allocated(await server.claim(partner.apiKey, { campaignId: inside, holder: 'in' }));
  await server.gql(ADMIN_KEY, 'mutation($id: ID!) { closeCampaign(id: $id) { campaign { id } } }', { id: outside });
  await server.gql(ADMIN_KEY, 'mutation($id: ID!) { closeCampaign(id: $id) { campaign { id } } }', { id: inside });
  await until(() => hook.received.find((r) => r.body.type === 'CAMPAIGN_CLOSED' && r.body.data.campaign.id === inside), { message: "the closing of its campaign" });
  await untilWebhooksSettled(server.sql);
  expect(hook.received.find((r) => r.body.data.allocation?.id === claimed.id)).toBeTruthy();
  expect(hook.received.filter((r) => r.body.type === 'CAMPAIGN_CLOSED').map((r) => r.body.data.campaign.id)).toEqual([inside]);
  // The operator's own deliveries are untouched: both closings were written as events.
  const { rows } = await server.sql.query("SELECT count(*)::int AS n FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id WHERE e.partner_id = $1 AND d.event = 'CAMPAIGN_CLOSED'", [partner.id]);
  expect(rows[0].n).toBe(1);

  await server.gql(ADMIN_KEY, scope, { p: partner.id, ids: null });
  const other = await server.openCampaignWith(2);
  const again = allocated(await server.claim(partner.apiKey, { campaignId: other, holder: 'after' }));
  await until(() => hook.received.find((r) => r.body.data.allocation?.id === again.id), { message: 'an event of any campaign once the scope is gone' });
});

test('a failing receiver is tried again with the same event id and body until it answers 2xx', async () => {
  const partner = await server.createPartner('flaky');
  const hook = await receiver();
  let failures = 0;
  hook.answer = () => (failures++ < 1 ? 500 : 200);
  const endpointId = await endpoint(server, hook, partner.id, ['ALLOCATION_CREATED']);
  const campaignId = await server.openCampaignWith(2);
  await server.claim(partner.apiKey, { campaignId });
  await until(() => hook.received.length >= 2, { message: 'the retry', timeoutMs: 15_000 });
  expect(hook.received[1]!.eventId).toBe(hook.received[0]!.eventId);
  expect(hook.received[1]!.body).toEqual(hook.received[0]!.body);
  const delivery = await until(
    async () => (await server.sql.query("SELECT status, attempts, last_status_code FROM webhook_deliveries WHERE endpoint_id = $1 AND status <> 'PENDING'", [endpointId])).rows[0],
    { message: 'the delivery to be recorded' },
  );
  expect(delivery).toEqual({ status: 'DELIVERED', attempts: 2, last_status_code: 200 });
});

test('a claim storm: every committed allocation produces exactly one event, delivered once, through two instances sharing the queue', async () => {
  const second = await startTestServer({ databaseUrl: server.databaseUrl });
  try {
    const partner = await server.createPartner('storm');
    const hook = await receiver();
    await endpoint(server, hook, partner.id, ['ALLOCATION_CREATED']);
    const campaignId = await server.openCampaignWith(150);
    const answers = await Promise.all(
      Array.from({ length: 200 }, (_, i) => (i % 2 ? server : second).claim(partner.apiKey, { campaignId, holder: `h${i}` })),
    );
    const claimed = answers.map((a) => a.allocation?.id).filter(Boolean) as string[];
    expect(claimed).toHaveLength(150);
    await until(() => new Set(hook.received.map((r) => r.eventId)).size >= 150, { message: '150 events', timeoutMs: 20_000 });
    await untilWebhooksSettled(server.sql);
    const allocationIds = hook.received.map((r) => r.body.data.allocation.id);
    expect(new Set(allocationIds)).toEqual(new Set(claimed));
    // At least once, and here (no crash) exactly once: no event reached the receiver twice.
    expect(hook.received).toHaveLength(150);
    expect(hook.rejected).toEqual([]);
  } finally {
    await second.stop();
  }
});

test('CAMPAIGN_LOW_STOCK fires once per crossing and CAMPAIGN_SOLD_OUT once, under concurrent claims, to partners too', async () => {
  const partner = await server.createPartner('stock');
  const hook = await receiver();
  await endpoint(server, hook, partner.id, ['CAMPAIGN_LOW_STOCK', 'CAMPAIGN_SOLD_OUT']);
  const campaignId = await server.createCampaign({ lowStockThreshold: 2 });
  await server.loadTickets(campaignId, 6);
  await server.openCampaign(campaignId);
  const claim = (holder: string) => server.claim(partner.apiKey, { campaignId, holder });
  const release = (id: string) => server.gql(partner.apiKey, 'mutation($id: ID!) { releaseAllocation(allocationId: $id) { allocation { id } } }', { id });
  const marker = async () => (await server.sql.query('SELECT low_stock_announced_at AS low, sold_out_announced_at AS sold FROM campaigns WHERE id = $1', [campaignId])).rows[0];
  const mine = () => hook.received.filter((r) => r.body.data.campaign?.id === campaignId);

  // 6 → 2 available, four claims at once: one crossing, one event.
  const first = await Promise.all(['a', 'b', 'c', 'd'].map(claim));
  await until(() => mine().length === 1, { message: 'the first CAMPAIGN_LOW_STOCK' });
  expect(mine()[0]!.body.type).toBe('CAMPAIGN_LOW_STOCK');
  expect(mine()[0]!.body.data.campaign.stats).toMatchObject({ total: 6, available: 2 });
  // Back above the threshold: re-armed by the next sweep, no event.
  await Promise.all(first.slice(0, 2).map((r) => release(allocated(r).id)));
  await until(async () => (await marker()).low === null, { message: 'the low-stock marker to re-arm' });
  // Down again, and on to sold out, by concurrent claims: a second LOW_STOCK, one SOLD_OUT.
  await Promise.all(['e', 'f'].map(claim));
  await until(() => mine().length === 2, { message: 'the second CAMPAIGN_LOW_STOCK' });
  const last = await Promise.all(['g', 'h', 'i'].map(claim));
  expect(last.filter((r) => r.allocation).length).toBe(2);
  await until(() => mine().some((r) => r.body.type === 'CAMPAIGN_SOLD_OUT'), { message: 'CAMPAIGN_SOLD_OUT' });
  // A release and a new sell-out do not announce it again: it fired when the pool first ran out.
  const taken = allocated(last.find((r) => r.allocation)!).id;
  await release(taken);
  await claim('j');
  await server.sweep();
  await server.sweep();
  await untilWebhooksSettled(server.sql);
  expect(mine().map((r) => r.body.type)).toEqual(['CAMPAIGN_LOW_STOCK', 'CAMPAIGN_LOW_STOCK', 'CAMPAIGN_SOLD_OUT']);
  expect(mine()[2]!.body.data.campaign.stats).toEqual({
    total: 6, allocated: 6, held: 0, allotted: 0, available: 0, void: 0, fillRate: 1, soldOut: true, soldOutAt: expect.any(String),
  });
  expect(hook.rejected).toEqual([]);
});

test("a receiver that never answers holds only its own endpoint's slots: another endpoint's events arrive without waiting for it", async () => {
  const partner = await server.createPartner('isolation');
  const hanging = http.createServer(() => undefined); // accepts, reads nothing, never answers
  await new Promise<void>((resolve) => hanging.listen(0, '127.0.0.1', resolve));
  const hangingUrl = `http://127.0.0.1:${(hanging.address() as AddressInfo).port}/hook`;
  const healthy = await receiver();
  try {
    const { rows } = await server.sql.query<{ id: string }>(
      'INSERT INTO webhook_endpoints (partner_id, url, events, secret_sealed) VALUES ($1, $2, $3, $4) RETURNING id',
      [partner.id, hangingUrl, ['ALLOCATION_CREATED'], sealSecret(newWebhookSecret(), TEST_WEBHOOK_KEY)],
    );
    await endpoint(server, healthy, partner.id, ['ALLOCATION_CREATED']);
    const campaignId = await server.openCampaignWith(20);
    await Promise.all(Array.from({ length: 20 }, (_, i) => server.claim(partner.apiKey, { campaignId, holder: `i${i}` })));
    await until(() => healthy.received.filter((r) => r.body.data.allocation?.campaignId === campaignId).length === 20, { message: "the healthy endpoint's 20 events" });
    // Meanwhile the hanging endpoint delivered nothing and held at most its cap of attempts: the
    // other endpoint's events did not queue behind its 20.
    const stuckDeliveries = (
      await server.sql.query<{ delivered: number; leased: number; total: number }>(
        `SELECT count(*) FILTER (WHERE status = 'DELIVERED')::int AS delivered,
                count(*) FILTER (WHERE status = 'PENDING' AND lease_until > clock_timestamp())::int AS leased,
                count(*)::int AS total
           FROM webhook_deliveries WHERE endpoint_id = $1`,
        [rows[0]!.id],
      )
    ).rows[0]!;
    expect(stuckDeliveries.total).toBe(20);
    expect(stuckDeliveries.delivered).toBe(0);
    expect(stuckDeliveries.leased).toBeLessThanOrEqual(PER_ENDPOINT);
  } finally {
    hanging.closeAllConnections();
    await new Promise((resolve) => hanging.close(resolve));
  }
});

test('the per-endpoint cap counts every live lease: attempts still in flight, and those of concurrent leasers (other instances)', async () => {
  // A database with no dispatcher of its own: only the leasers below touch its deliveries.
  const database = await createTestDatabase();
  const pools = Array.from({ length: 6 }, () => new pg.Pool({ connectionString: database.url, max: 2 }));
  // Dropping the database terminates what is still connected (57P01): expected, not a failure.
  for (const p of pools) p.on('error', () => undefined);
  const [pool] = pools as [pg.Pool];
  const live = async () =>
    (await pool.query<{ n: number }>("SELECT count(*)::int AS n FROM webhook_deliveries WHERE status = 'PENDING' AND lease_until > clock_timestamp()")).rows[0]!.n;
  try {
    const { rows } = await pool.query<{ id: string }>(
      "INSERT INTO webhook_endpoints (url, events, secret_sealed) VALUES ('http://127.0.0.1:9/hook', '{CAMPAIGN_OPENED}', 'x') RETURNING id",
    );
    await pool.query(
      `INSERT INTO webhook_deliveries (endpoint_id, event_id, event, event_created_at, body)
       SELECT $1, gen_random_uuid(), 'CAMPAIGN_OPENED', clock_timestamp(), '{}' FROM generate_series(1, 20)`,
      [rows[0]!.id],
    );
    const options = { limit: 64, perEndpoint: 4, leaseMs: 60_000 };
    const first = await leaseDue(pool, options);
    expect(first).toHaveLength(4);
    expect(await leaseDue(pool, options)).toHaveLength(0); // all four still in flight
    // Two attempts end (retried later): two slots free, not four.
    for (const d of first.slice(0, 2)) await recordAttempt(pool, d.id, { status: 'PENDING', statusCode: 500, error: 'HTTP 500', nextAttemptAt: new Date(Date.now() + 60_000) });
    expect(await leaseDue(pool, options)).toHaveLength(2);
    expect(await live()).toBe(4);
    // All four end; six leasers at once, as six instances would: four leases between them.
    await pool.query("UPDATE webhook_deliveries SET lease_until = NULL WHERE status = 'PENDING'");
    const leased = await Promise.all(pools.map((p) => leaseDue(p, options)));
    expect(leased.flat()).toHaveLength(4);
    expect(new Set(leased.flat().map((d) => d.id)).size).toBe(4);
    expect(await live()).toBe(4);
  } finally {
    await Promise.all(pools.map((p) => p.end()));
    await database.drop();
  }
});
