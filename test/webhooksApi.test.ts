// @dialects postgresql citus
// Partner webhooks' API: endpoints (createWebhook, webhooks, deleteWebhook) and deliveries
// (webhookDeliveries, redeliverWebhook), over real HTTP against a real database. Who may touch what,
// the URL and event rules, the per-owner limit, the secret shown once and stored sealed, and the
// audit rows. Delivery rows are written here in SQL; sending them is test/webhooks.test.ts's.
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { buildSchema, isEnumType } from 'graphql';
import { openSecret } from '../src/webhooks/secrets';
import { startReceiver, verifiedWith } from './helpers/receiver';
import { ADMIN_KEY, startTestServer, TEST_WEBHOOK_KEY, type GraphQLResponse, type TestServer } from './helpers/testServer';
import { until } from './helpers/time';
import { connectSocket, runOverSocket, socketErrors } from './helpers/ws';

const CREATE = `mutation Create($input: CreateWebhookInput!) {
  createWebhook(input: $input) { endpoint { id url events enabled createdAt partner { id name } } secret }
}`;
const DELETE = 'mutation Delete($id: ID!) { deleteWebhook(id: $id) }';
const LIST = '{ webhooks { id url events partner { id } } }';
const DELIVERIES = `query Deliveries($endpointId: ID!, $first: Int, $after: String, $status: DeliveryStatus) {
  webhookDeliveries(endpointId: $endpointId, first: $first, after: $after, status: $status) {
    edges { cursor node { id eventId event status attempts lastStatusCode lastError nextAttemptAt deliveredAt createdAt } }
    pageInfo { hasNextPage endCursor }
    totalCount
  }
}`;
const REDELIVER = 'mutation Redeliver($id: ID!) { redeliverWebhook(deliveryId: $id) { id eventId event status attempts lastError nextAttemptAt } }';

/** Nothing listens on the discard port: a delivery the dispatcher tries there fails at once. */
const LOCAL_URL = 'http://127.0.0.1:9/hook';

interface Endpoint {
  id: string;
  url: string;
  events: string[];
  enabled: boolean;
  partner: { id: string; name: string } | null;
}

const errorOf = (res: GraphQLResponse) => {
  const error = res.body.errors?.[0];
  return { code: error?.extensions?.code as string | undefined, field: error?.extensions?.field as string | undefined, message: error?.message ?? '' };
};

let server: TestServer;
let a: { id: string; apiKey: string };
let b: { id: string; apiKey: string };
/** Every secret this file was given: none may appear in the audit log. */
const secrets: string[] = [];

async function create(key: string, input: Record<string, unknown>): Promise<{ endpoint: Endpoint; secret: string }> {
  const res = await server.gql<{ createWebhook: { endpoint: Endpoint; secret: string } }>(key, CREATE, { input });
  if (res.body.errors) throw new Error(`createWebhook failed: ${JSON.stringify(res.body.errors)}`);
  secrets.push(res.body.data!.createWebhook.secret);
  return res.body.data!.createWebhook;
}

/** A delivery row written directly, as the dispatcher would have left it. */
async function insertDelivery(
  endpointId: string,
  d: { status?: string; attempts?: number; createdAt?: string; lastError?: string | null; leaseUntil?: string | null; nextAttemptAt?: string } = {},
): Promise<{ id: string; eventId: string; body: string }> {
  const eventId = randomUUID();
  const body = JSON.stringify({ id: eventId, type: 'ALLOCATION_CREATED', createdAt: new Date().toISOString(), data: {} });
  const { rows } = await server.sql.query(
    `INSERT INTO webhook_deliveries (endpoint_id, event_id, event, event_created_at, body, status, attempts, last_error, created_at, lease_until, next_attempt_at)
     VALUES ($1, $2, 'ALLOCATION_CREATED', now(), $3, $4::webhook_delivery_status, $5, $6, COALESCE($7::timestamptz, now()), $8::timestamptz,
             -- A PENDING row is due tomorrow unless told otherwise: the running dispatcher leaves it alone.
             COALESCE($9::timestamptz, now() + interval '1 day'))
     RETURNING id`,
    [endpointId, eventId, body, d.status ?? 'PENDING', d.attempts ?? 0, d.lastError ?? null, d.createdAt ?? null, d.leaseUntil ?? null, d.nextAttemptAt ?? null],
  );
  return { id: rows[0].id as string, eventId, body };
}

const auditRows = async (operation: string, actor: string) =>
  (await server.sql.query('SELECT actor, arguments, outcome FROM audit_log WHERE operation = $1 AND actor = $2 ORDER BY id', [operation, actor])).rows;

beforeAll(async () => {
  server = await startTestServer();
  a = await server.createPartner('Partner A');
  b = await server.createPartner('Partner B');
});
afterAll(() => server.stop());

describe('createWebhook', () => {
  test('a partner creates an endpoint for itself: the secret is shown once, starts with whsec_, and is stored only sealed', async () => {
    const { endpoint, secret } = await create(a.apiKey, { url: LOCAL_URL, events: ['ALLOCATION_CREATED', 'HOLD_EXPIRED'] });
    expect(endpoint).toMatchObject({ url: LOCAL_URL, events: ['ALLOCATION_CREATED', 'HOLD_EXPIRED'], enabled: true, partner: { id: a.id, name: 'Partner A' } });
    expect(secret).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);
    const { rows } = await server.sql.query('SELECT partner_id, secret_sealed FROM webhook_endpoints WHERE id = $1', [endpoint.id]);
    expect(rows[0].partner_id).toBe(a.id);
    expect(rows[0].secret_sealed).not.toContain(secret.slice('whsec_'.length));
    expect(openSecret(rows[0].secret_sealed, TEST_WEBHOOK_KEY)).toBe(secret);
    // Its own id, given explicitly, is the same as leaving it out.
    expect((await create(a.apiKey, { url: LOCAL_URL, events: ['HOLD_CREATED'], partnerId: a.id.toUpperCase() })).endpoint.partner?.id).toBe(a.id);
  });

  test("a partner naming another partner gets exactly the answer for a partner that does not exist, and nothing is created", async () => {
    const before = (await server.sql.query('SELECT count(*)::int AS n FROM webhook_endpoints')).rows[0].n;
    const nobody = randomUUID();
    const other = errorOf(await server.gql(a.apiKey, CREATE, { input: { url: LOCAL_URL, events: ['HOLD_CREATED'], partnerId: b.id } }));
    const unknown = errorOf(await server.gql(a.apiKey, CREATE, { input: { url: LOCAL_URL, events: ['HOLD_CREATED'], partnerId: nobody } }));
    const byAdmin = errorOf(await server.gql(ADMIN_KEY, CREATE, { input: { url: LOCAL_URL, events: ['HOLD_CREATED'], partnerId: nobody } }));
    expect(other).toEqual({ code: 'NOT_FOUND', field: undefined, message: `Partner ${b.id} does not exist.` });
    expect(unknown).toEqual({ ...other, message: `Partner ${nobody} does not exist.` });
    expect(byAdmin).toEqual(unknown);
    expect((await server.sql.query('SELECT count(*)::int AS n FROM webhook_endpoints')).rows[0].n).toBe(before);
  });

  test('the admin creates operator endpoints (partner null) and endpoints for any partner, but not for the operator partner row', async () => {
    const operator = await create(ADMIN_KEY, { url: LOCAL_URL, events: ['CAMPAIGN_CLOSED'] });
    expect(operator.endpoint.partner).toBeNull();
    expect((await server.sql.query('SELECT partner_id FROM webhook_endpoints WHERE id = $1', [operator.endpoint.id])).rows[0].partner_id).toBeNull();
    const forB = await create(ADMIN_KEY, { url: LOCAL_URL, events: ['CAMPAIGN_OPENED'], partnerId: b.id });
    expect(forB.endpoint.partner).toEqual({ id: b.id, name: 'Partner B' });
    const operatorRow = '00000000-0000-0000-0000-000000000000';
    expect(errorOf(await server.gql(ADMIN_KEY, CREATE, { input: { url: LOCAL_URL, events: ['CAMPAIGN_OPENED'], partnerId: operatorRow } })).code).toBe('NOT_FOUND');
    expect(errorOf(await server.gql(ADMIN_KEY, CREATE, { input: { url: LOCAL_URL, events: ['CAMPAIGN_OPENED'], partnerId: 'not-a-uuid' } })).code).toBe('NOT_FOUND');
  });

  test.each([
    ['plain http to a public host', 'http://example.com/hook', /http is allowed only to 127\.0\.0\.1, localhost or \[::1\]/],
    ['garbage', 'not a url', /spaces/],
    ['a relative URL', '/hook', /not an absolute URL/],
    ['credentials', 'https://user:secret@example.com/hook', /credentials/],
    ['a fragment', 'https://example.com/hook#part', /fragment/],
    ['another scheme', 'ftp://example.com/hook', /https/],
    ['a newline', 'https://example.com/ho\nok', /control characters/],
    ['more than 2048 characters', `https://example.com/${'a'.repeat(2048)}`, /longer than 2048/],
  ])('a URL with %s is refused: BAD_USER_INPUT naming url, with the reason, and nothing is stored', async (_name, url, reason) => {
    const res = await server.gql(a.apiKey, CREATE, { input: { url, events: ['HOLD_CREATED'] } });
    const error = errorOf(res);
    expect({ code: error.code, field: error.field }).toEqual({ code: 'BAD_USER_INPUT', field: 'url' });
    expect(error.message).toMatch(reason);
    expect((await server.sql.query('SELECT count(*)::int AS n FROM webhook_endpoints WHERE url = $1', [url])).rows[0].n).toBe(0);
  });

  test('http to 127.0.0.1, localhost or [::1] is accepted outside production, and https anywhere', async () => {
    for (const url of ['http://127.0.0.1:9/x', 'http://localhost:9/x', 'http://[::1]:9/x', 'https://example.com/hooks/tessera?k=1']) {
      expect((await create(b.apiKey, { url, events: ['HOLD_CREATED'] })).endpoint.url).toBe(url);
    }
  });

  test('events: none is refused naming events; repeats are stored once, in the order of the WebhookEvent enum', async () => {
    const empty = errorOf(await server.gql(a.apiKey, CREATE, { input: { url: LOCAL_URL, events: [] } }));
    expect(empty).toMatchObject({ code: 'BAD_USER_INPUT', field: 'events' });
    const schema = buildSchema(readFileSync(path.resolve(__dirname, '../schema.graphql'), 'utf8'));
    const type = schema.getType('WebhookEvent');
    if (!isEnumType(type)) throw new Error('WebhookEvent is not an enum');
    const all = type.getValues().map((v) => v.name);
    const { endpoint } = await create(b.apiKey, { url: LOCAL_URL, events: [...all].reverse().concat(all) });
    expect(endpoint.events).toEqual(all);
  });

  test('a partner has at most 20 endpoints, even when it asks for more at once; deleting one makes room', async () => {
    const c = await server.createPartner('Partner C');
    const answers = await Promise.all(
      Array.from({ length: 25 }, () => server.gql<{ createWebhook: { secret: string } }>(c.apiKey, CREATE, { input: { url: LOCAL_URL, events: ['HOLD_CREATED'] } })),
    );
    answers.forEach((res) => res.body.data?.createWebhook && secrets.push(res.body.data.createWebhook.secret));
    const refused = answers.map(errorOf).filter((e) => e.code !== undefined);
    expect(refused).toHaveLength(5);
    for (const error of refused) expect(error.code).toBe('LIMIT_REACHED');
    expect(answers.find((res) => res.body.errors)!.body.errors![0]!.extensions).toEqual({ code: 'LIMIT_REACHED', limit: 20 });
    const { rows } = await server.sql.query('SELECT id FROM webhook_endpoints WHERE partner_id = $1 AND deleted_at IS NULL', [c.id]);
    expect(rows).toHaveLength(20);
    expect((await server.gql(c.apiKey, DELETE, { id: rows[0].id })).body.data).toEqual({ deleteWebhook: true });
    await create(c.apiKey, { url: LOCAL_URL, events: ['HOLD_CREATED'] });
  });

  test('without WEBHOOK_SECRET_KEY (production) createWebhook says webhooks need it; the reads still work', async () => {
    const production = await startTestServer({ databaseUrl: server.databaseUrl, config: { webhooks: { secretKey: undefined, allowPrivateNetworks: false, production: true } } });
    try {
      const res = await production.gql(a.apiKey, CREATE, { input: { url: 'https://example.com/hook', events: ['HOLD_CREATED'] } });
      expect(errorOf(res).code).toBe('NOT_CONFIGURED');
      expect(errorOf(res).message).toMatch(/WEBHOOK_SECRET_KEY/);
      const listed = await production.gql<{ webhooks: Endpoint[] }>(a.apiKey, LIST);
      expect(listed.body.errors).toBeUndefined();
      expect(listed.body.data!.webhooks.length).toBeGreaterThan(0);
    } finally {
      await production.stop();
    }
  });
});

describe('webhooks and deleteWebhook', () => {
  test("the admin lists every live endpoint, a partner only its own", async () => {
    const mine = await create(a.apiKey, { url: LOCAL_URL, events: ['HOLD_CONFIRMED'] });
    const theirs = await create(b.apiKey, { url: LOCAL_URL, events: ['HOLD_CONFIRMED'] });
    const operator = await create(ADMIN_KEY, { url: LOCAL_URL, events: ['HOLD_CONFIRMED'] });
    const all = (await server.gql<{ webhooks: Endpoint[] }>(ADMIN_KEY, LIST)).body.data!.webhooks.map((e) => e.id);
    expect(all).toEqual(expect.arrayContaining([mine.endpoint.id, theirs.endpoint.id, operator.endpoint.id]));
    const forA = (await server.gql<{ webhooks: Endpoint[] }>(a.apiKey, LIST)).body.data!.webhooks;
    expect(forA.map((e) => e.id)).toContain(mine.endpoint.id);
    expect(forA.every((e) => e.partner?.id === a.id)).toBe(true);
    const { rows } = await server.sql.query('SELECT count(*)::int AS n FROM webhook_endpoints WHERE partner_id = $1 AND deleted_at IS NULL', [a.id]);
    expect(forA).toHaveLength(rows[0].n);
  });

  test("deleting: another partner's endpoint, an unknown one and a malformed id get the same NOT_FOUND; the owner's delete ends its pending deliveries; a second delete is NOT_FOUND", async () => {
    const { endpoint } = await create(a.apiKey, { url: LOCAL_URL, events: ['HOLD_CREATED'] });
    const pending = await insertDelivery(endpoint.id);
    const delivered = await insertDelivery(endpoint.id, { status: 'DELIVERED', attempts: 1 });
    const unknown = randomUUID();
    const byOther = errorOf(await server.gql(b.apiKey, DELETE, { id: endpoint.id }));
    expect(byOther).toEqual({ code: 'NOT_FOUND', field: undefined, message: `Webhook endpoint ${endpoint.id} does not exist.` });
    expect(errorOf(await server.gql(b.apiKey, DELETE, { id: unknown }))).toEqual({ ...byOther, message: `Webhook endpoint ${unknown} does not exist.` });
    expect(errorOf(await server.gql(b.apiKey, DELETE, { id: 'nope' }))).toEqual({ ...byOther, message: 'Webhook endpoint nope does not exist.' });
    expect((await server.sql.query('SELECT deleted_at FROM webhook_endpoints WHERE id = $1', [endpoint.id])).rows[0].deleted_at).toBeNull();

    expect((await server.gql(a.apiKey, DELETE, { id: endpoint.id })).body).toEqual({ data: { deleteWebhook: true } });
    const row = (await server.sql.query('SELECT enabled, deleted_at FROM webhook_endpoints WHERE id = $1', [endpoint.id])).rows[0];
    expect(row.enabled).toBe(false);
    expect(row.deleted_at).toBeInstanceOf(Date);
    const { rows } = await server.sql.query('SELECT id, status, last_error FROM webhook_deliveries WHERE endpoint_id = $1', [endpoint.id]);
    expect(rows).toEqual(
      expect.arrayContaining([
        { id: pending.id, status: 'FAILED', last_error: 'endpoint deleted' },
        { id: delivered.id, status: 'DELIVERED', last_error: null },
      ]),
    );
    expect((await server.gql<{ webhooks: Endpoint[] }>(a.apiKey, LIST)).body.data!.webhooks.map((e) => e.id)).not.toContain(endpoint.id);
    expect(errorOf(await server.gql(a.apiKey, DELETE, { id: endpoint.id }))).toEqual(byOther);
    expect(errorOf(await server.gql(ADMIN_KEY, DELETE, { id: endpoint.id }))).toEqual(byOther);
  });

  test("the admin deletes any partner's endpoint", async () => {
    const { endpoint } = await create(b.apiKey, { url: LOCAL_URL, events: ['HOLD_CREATED'] });
    expect((await server.gql(ADMIN_KEY, DELETE, { id: endpoint.id })).body).toEqual({ data: { deleteWebhook: true } });
  });
});

describe('webhookDeliveries', () => {
  type Page = { webhookDeliveries: { edges: { cursor: string; node: Record<string, any> }[]; pageInfo: { hasNextPage: boolean; endCursor: string | null }; totalCount: number } };

  test('newest first, in pages with opaque cursors; the status filter applies to the page and the count', async () => {
    const { endpoint } = await create(a.apiKey, { url: LOCAL_URL, events: ['ALLOCATION_CREATED'] });
    const made: { id: string; eventId: string; status: string }[] = [];
    // Two rows share a created_at: id breaks the tie, so no page repeats or skips one.
    for (const [i, status] of ['PENDING', 'DELIVERED', 'FAILED', 'FAILED', 'PENDING'].entries()) {
      made.push({ ...(await insertDelivery(endpoint.id, { status, attempts: i, createdAt: `2030-01-01T00:00:0${Math.min(i, 3)}.123456Z` })), status });
    }
    const seen: Record<string, any>[] = [];
    let after: string | null = null;
    for (let page = 0; page < 3; page += 1) {
      const res: GraphQLResponse<Page> = await server.gql<Page>(a.apiKey, DELIVERIES, { endpointId: endpoint.id, first: 2, after });
      const connection = res.body.data!.webhookDeliveries;
      expect(connection.totalCount).toBe(5);
      seen.push(...connection.edges.map((e) => e.node));
      expect(connection.pageInfo.hasNextPage).toBe(page < 2);
      after = connection.pageInfo.endCursor;
    }
    expect(seen.map((n) => n.id).sort()).toEqual(made.map((d) => d.id).sort());
    const times = seen.map((n) => `${n.createdAt}|${n.id}`);
    expect(times).toEqual([...times].sort().reverse());
    const pending = seen.find((n) => n.status === 'PENDING')!;
    expect(pending.nextAttemptAt).not.toBeNull();
    for (const n of seen.filter((x) => x.status !== 'PENDING')) expect(n.nextAttemptAt).toBeNull();
    expect(seen.find((n) => n.id === made[0]!.id)).toMatchObject({ eventId: made[0]!.eventId, event: 'ALLOCATION_CREATED', attempts: 0 });

    const failed = (await server.gql<Page>(a.apiKey, DELIVERIES, { endpointId: endpoint.id, status: 'FAILED', first: 1 })).body.data!.webhookDeliveries;
    expect(failed.totalCount).toBe(2);
    expect(failed.edges.map((e) => e.node.status)).toEqual(['FAILED']);
    expect(failed.pageInfo.hasNextPage).toBe(true);
    const rest = (await server.gql<Page>(a.apiKey, DELIVERIES, { endpointId: endpoint.id, status: 'FAILED', first: 5, after: failed.pageInfo.endCursor })).body.data!
      .webhookDeliveries;
    expect(rest.edges.map((e) => e.node.status)).toEqual(['FAILED']);
    expect(rest.pageInfo.hasNextPage).toBe(false);
  });

  test('cursors are strict and first is bounded, as in every connection', async () => {
    const { endpoint } = await create(a.apiKey, { url: LOCAL_URL, events: ['ALLOCATION_CREATED'] });
    const campaignCursor = Buffer.from(`campaign:2030-01-01 00:00:00+00|${randomUUID()}`).toString('base64url');
    for (const after of ['garbage', campaignCursor, Buffer.from('delivery:yesterday|x').toString('base64url')]) {
      expect(errorOf(await server.gql(a.apiKey, DELIVERIES, { endpointId: endpoint.id, after }))).toMatchObject({ code: 'BAD_USER_INPUT', field: 'after' });
    }
    expect(errorOf(await server.gql(a.apiKey, DELIVERIES, { endpointId: endpoint.id, first: 101 }))).toMatchObject({ code: 'BAD_USER_INPUT', field: 'first' });
  });

  test("another partner's endpoint, an unknown one and a malformed id are NOT_FOUND alike; the admin reads any, a deleted one's too", async () => {
    const { endpoint } = await create(a.apiKey, { url: LOCAL_URL, events: ['ALLOCATION_CREATED'] });
    await insertDelivery(endpoint.id, { status: 'DELIVERED' });
    const byOther = errorOf(await server.gql(b.apiKey, DELIVERIES, { endpointId: endpoint.id }));
    expect(byOther).toEqual({ code: 'NOT_FOUND', field: undefined, message: `Webhook endpoint ${endpoint.id} does not exist.` });
    const unknown = randomUUID();
    expect(errorOf(await server.gql(b.apiKey, DELIVERIES, { endpointId: unknown }))).toEqual({ ...byOther, message: `Webhook endpoint ${unknown} does not exist.` });
    expect(errorOf(await server.gql(a.apiKey, DELIVERIES, { endpointId: 'x' })).code).toBe('NOT_FOUND');
    await server.gql(a.apiKey, DELETE, { id: endpoint.id });
    for (const key of [a.apiKey, ADMIN_KEY]) {
      expect((await server.gql<Page>(key, DELIVERIES, { endpointId: endpoint.id })).body.data!.webhookDeliveries.totalCount).toBe(1);
    }
  });
});

describe('redeliverWebhook', () => {
  test('a FAILED delivery is PENDING again and due now, with its event id, event and attempts kept', async () => {
    const { endpoint } = await create(a.apiKey, { url: LOCAL_URL, events: ['ALLOCATION_CREATED'] });
    const failed = await insertDelivery(endpoint.id, { status: 'FAILED', attempts: 3, lastError: 'HTTP 500' });
    const before = Date.now();
    const res = await server.gql<{ redeliverWebhook: Record<string, any> }>(a.apiKey, REDELIVER, { id: failed.id });
    expect(res.body.errors).toBeUndefined();
    const answer = res.body.data!.redeliverWebhook;
    expect(answer).toMatchObject({ id: failed.id, eventId: failed.eventId, event: 'ALLOCATION_CREATED', status: 'PENDING', attempts: 3, lastError: 'HTTP 500' });
    expect(Math.abs(new Date(answer.nextAttemptAt).getTime() - before)).toBeLessThan(5_000);
    // The dispatcher may already be trying it: its event id and body are what cannot change.
    const { rows } = await server.sql.query('SELECT event_id, body FROM webhook_deliveries WHERE id = $1', [failed.id]);
    expect(rows[0]).toEqual({ event_id: failed.eventId, body: failed.body });
  });

  test('the admin redelivers any; a delivery being attempted right now is left to that attempt', async () => {
    const { endpoint } = await create(b.apiKey, { url: LOCAL_URL, events: ['ALLOCATION_CREATED'] });
    const inFlight = await insertDelivery(endpoint.id, { status: 'PENDING', attempts: 1, leaseUntil: new Date(Date.now() + 60_000).toISOString() });
    const res = await server.gql<{ redeliverWebhook: Record<string, any> }>(ADMIN_KEY, REDELIVER, { id: inFlight.id });
    expect(res.body.data!.redeliverWebhook).toMatchObject({ status: 'PENDING', attempts: 1 });
    const { rows } = await server.sql.query('SELECT lease_until, next_attempt_at > now() + interval \'1 hour\' AS later FROM webhook_deliveries WHERE id = $1', [inFlight.id]);
    expect(rows[0].lease_until).toBeInstanceOf(Date);
    expect(rows[0].later).toBe(true);
  });

  test("another partner's delivery and an unknown one are NOT_FOUND alike; a deleted endpoint's is refused as INVALID_TRANSITION", async () => {
    const { endpoint } = await create(a.apiKey, { url: LOCAL_URL, events: ['ALLOCATION_CREATED'] });
    const delivery = await insertDelivery(endpoint.id, { status: 'FAILED' });
    const byOther = errorOf(await server.gql(b.apiKey, REDELIVER, { id: delivery.id }));
    expect(byOther).toEqual({ code: 'NOT_FOUND', field: undefined, message: `Webhook delivery ${delivery.id} does not exist.` });
    const unknown = randomUUID();
    expect(errorOf(await server.gql(b.apiKey, REDELIVER, { id: unknown }))).toEqual({ ...byOther, message: `Webhook delivery ${unknown} does not exist.` });
    expect(errorOf(await server.gql(b.apiKey, REDELIVER, { id: '42' })).code).toBe('NOT_FOUND');
    await server.gql(a.apiKey, DELETE, { id: endpoint.id });
    const refused = errorOf(await server.gql(a.apiKey, REDELIVER, { id: delivery.id }));
    expect(refused.code).toBe('INVALID_TRANSITION');
    expect(refused.message).toMatch(/endpoint was deleted/);
    expect((await server.sql.query('SELECT status FROM webhook_deliveries WHERE id = $1', [delivery.id])).rows[0].status).toBe('FAILED');
  });

  test('a redelivered delivery reaches the receiver again, with the same Tessera-Event-Id, signed with the secret createWebhook showed', async () => {
    const receiver = await startReceiver();
    const { received } = receiver;
    try {
      const { endpoint, secret } = await create(a.apiKey, { url: `${receiver.url}/hook`, events: ['ALLOCATION_CREATED'] });
      const delivery = await insertDelivery(endpoint.id, { status: 'FAILED', attempts: 2 });
      await server.gql(a.apiKey, REDELIVER, { id: delivery.id });
      await until(() => received.length > 0, { message: 'the redelivered delivery to reach the receiver' });
      expect(received[0]).toMatchObject({ eventId: delivery.eventId, raw: delivery.body });
      expect(verifiedWith(secret, received[0]!)).toBe(true);
      await until(async () => (await server.sql.query('SELECT status FROM webhook_deliveries WHERE id = $1', [delivery.id])).rows[0].status === 'DELIVERED', {
        message: 'the delivery to be DELIVERED',
      });
    } finally {
      await receiver.close();
    }
  });
});

describe('audit', () => {
  test('every change is audited with the partner (or admin) that made it, and no secret is ever in the audit log', async () => {
    const { endpoint } = await create(b.apiKey, { url: LOCAL_URL, events: ['HOLD_CREATED'] });
    const delivery = await insertDelivery(endpoint.id, { status: 'FAILED' });
    await server.gql(b.apiKey, REDELIVER, { id: delivery.id });
    await server.gql(b.apiKey, DELETE, { id: endpoint.id });
    const actor = `partner:${b.id}`;
    expect((await auditRows('createWebhook', actor)).at(-1)).toEqual({ actor, outcome: 'OK', arguments: { input: { url: LOCAL_URL, events: ['HOLD_CREATED'] } } });
    expect((await auditRows('redeliverWebhook', actor)).at(-1)).toEqual({ actor, outcome: 'OK', arguments: { deliveryId: delivery.id } });
    expect((await auditRows('deleteWebhook', actor)).at(-1)).toEqual({ actor, outcome: 'OK', arguments: { id: endpoint.id } });
    expect((await auditRows('createWebhook', 'admin')).length).toBeGreaterThan(0);

    const { rows } = await server.sql.query('SELECT row_to_json(audit_log)::text AS text FROM audit_log');
    const log = rows.map((r) => r.text as string).join('\n');
    expect(secrets.length).toBeGreaterThan(20);
    for (const secret of secrets) expect(log).not.toContain(secret.slice('whsec_'.length));
    expect(log).not.toContain('whsec_');
  });

  test("a refused call — a partner deleting another's endpoint, or creating for another partner — is audited as FORBIDDEN without its arguments, though answered NOT_FOUND", async () => {
    const { endpoint } = await create(a.apiKey, { url: LOCAL_URL, events: ['HOLD_CREATED'] });
    const c = await server.createPartner('Partner Refused');
    const actor = `partner:${c.id}`;
    expect(errorOf(await server.gql(c.apiKey, DELETE, { id: endpoint.id })).code).toBe('NOT_FOUND');
    expect(errorOf(await server.gql(c.apiKey, CREATE, { input: { url: LOCAL_URL, events: ['HOLD_CREATED'], partnerId: a.id } })).code).toBe('NOT_FOUND');
    expect(await auditRows('deleteWebhook', actor)).toEqual([{ actor, outcome: 'FORBIDDEN', arguments: {} }]);
    expect(await auditRows('createWebhook', actor)).toEqual([{ actor, outcome: 'FORBIDDEN', arguments: {} }]);
    // Unknown is not refused: it is recorded as it ran.
    const unknown = randomUUID();
    await server.gql(c.apiKey, DELETE, { id: unknown });
    expect((await auditRows('deleteWebhook', actor)).at(-1)).toEqual({ actor, outcome: 'NOT_FOUND', arguments: { id: unknown } });
  });

  test('over the WebSocket these mutations are refused like every mutation: nothing created, nothing audited', async () => {
    const c = await server.createPartner('Partner Socket');
    const socket = connectSocket(server.url, c.apiKey);
    try {
      const outcome = await runOverSocket(socket, { query: CREATE, variables: { input: { url: LOCAL_URL, events: ['HOLD_CREATED'] } } });
      expect(socketErrors(outcome).map((e) => e.extensions?.code)).toEqual(['BAD_REQUEST']);
    } finally {
      await socket.dispose();
    }
    expect((await server.sql.query('SELECT count(*)::int AS n FROM webhook_endpoints WHERE partner_id = $1', [c.id])).rows[0].n).toBe(0);
    expect(await auditRows('createWebhook', `partner:${c.id}`)).toEqual([]);
  });
});
