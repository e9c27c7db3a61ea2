// offboardPartner: one operator action that cuts a partner off — its live key and its test key
// UNAUTHENTICATED over HTTP, the open graphql-ws sockets of both closed (here at once; on another
// instance within API_KEY_CACHE_TTL_MS), its webhook endpoints (live and test) deleted with their
// pending deliveries — where revokeApiKey(partnerId) revokes the live key alone. A partner key
// calling it is FORBIDDEN, and each call leaves an audit row.
import { ADMIN_KEY, startTestServer, type TestServer } from './helpers/testServer';
import { until } from './helpers/time';
import { connectSocket, muteClosedSocketErrors, runOverSocket, type SocketClient, socketErrors } from './helpers/ws';

const TTL_MS = 1_000;
/** Timers, a look-up and the close frame, on a machine running other tests beside this one (keyRevocation.test.ts). */
const MARGIN_MS = 750;
const OFFBOARD = 'mutation($p: ID!) { offboardPartner(partnerId: $p) { partner { id revokedAt testKey { revokedAt } } } }';
const CREATE_PARTNER = 'mutation($name: String!) { createPartner(input: { name: $name }) { partner { id } apiKey testApiKey } }';
const CREATE_WEBHOOK = 'mutation($input: CreateWebhookInput!) { createWebhook(input: $input) { endpoint { id test } } }';
const LIVE = 'subscription($id: ID!) { campaignStats(id: $id) { total } }';
const WHO = '{ viewer { partner { id } } }';
/** Nothing listens on the discard port: the dispatcher's attempt fails at once, and the delivery waits PENDING for its retry. */
const DEAD_URL = 'https://127.0.0.1:9/hook';

let here: TestServer;
let there: TestServer;
const sockets: SocketClient[] = [];

muteClosedSocketErrors();

beforeAll(async () => {
  here = await startTestServer({ config: { env: 'production', apiKeyCacheTtlMs: TTL_MS } });
  there = await startTestServer({ databaseUrl: here.databaseUrl, config: { env: 'production', apiKeyCacheTtlMs: TTL_MS } });
});
afterEach(async () => {
  await Promise.all(sockets.splice(0).map((s) => s.dispose()));
});
afterAll(async () => {
  await there.stop();
  await here.stop();
});

interface Partner {
  id: string;
  apiKey: string;
  testApiKey: string;
}

async function createPartner(name: string): Promise<Partner> {
  const made = await here.gql(ADMIN_KEY, CREATE_PARTNER, { name });
  expect(made.body.errors).toBeUndefined();
  const { partner, apiKey, testApiKey } = made.body.data!.createPartner;
  return { id: partner.id, apiKey, testApiKey };
}

/** A socket of `key` on `server`, open and authenticated (a partner may not watch stats: FORBIDDEN, and the socket stays open). */
async function openSocket(server: TestServer, key: string): Promise<SocketClient> {
  const s = connectSocket(server.url, key);
  sockets.push(s);
  const outcome = await runOverSocket(s, { query: LIVE, variables: { id: '00000000-0000-0000-0000-000000000001' } });
  expect(socketErrors(outcome).map((e) => e.extensions?.code)).toEqual(['FORBIDDEN']);
  expect(s.closed()).toBeUndefined();
  return s;
}

const status = async (key: string) => (await here.gql(key, WHO)).status;

test('revokeApiKey(partnerId) revokes the live key alone: the test key and its socket go on working', async () => {
  const partner = await createPartner('revoked, not off-boarded');
  const testSocket = await openSocket(here, partner.testApiKey);
  await here.gql(ADMIN_KEY, 'mutation($p: ID!) { revokeApiKey(partnerId: $p) { partner { id } } }', { p: partner.id });
  expect(await status(partner.apiKey)).toBe(401);
  expect(await status(partner.testApiKey)).toBe(200);
  expect(testSocket.closed()).toBeUndefined();
});

test('offboardPartner: both keys UNAUTHENTICATED, the sockets of both closed at once, every endpoint of the partner deleted with its pending deliveries', async () => {
  const partner = await createPartner('off-boarded');
  const other = await createPartner('stays');
  const campaignId = await here.openCampaignWith(3);
  const live = await here.gql(partner.apiKey, CREATE_WEBHOOK, { input: { url: DEAD_URL, events: ['ALLOCATION_CREATED'] } });
  const testMode = await here.gql(partner.testApiKey, CREATE_WEBHOOK, { input: { url: DEAD_URL, events: ['ALLOCATION_CREATED'] } });
  const others = await here.gql(other.apiKey, CREATE_WEBHOOK, { input: { url: DEAD_URL, events: ['ALLOCATION_CREATED'] } });
  const endpoints = [live, testMode, others].map((r) => r.body.data!.createWebhook.endpoint.id as string);
  expect((await here.claim(partner.apiKey, { campaignId })).error).toBeNull();
  await until(async () => (await here.sql.query('SELECT 1 FROM webhook_deliveries WHERE endpoint_id = $1', [endpoints[0]])).rowCount === 1, {
    message: 'the delivery to the live endpoint to be queued',
  });
  const both = [await openSocket(here, partner.apiKey), await openSocket(here, partner.testApiKey)];
  const bystander = await openSocket(here, other.apiKey);

  const done = await here.gql(ADMIN_KEY, OFFBOARD, { p: partner.id });
  expect(done.body.errors).toBeUndefined();
  const revokedAt = done.body.data!.offboardPartner.partner.revokedAt as string;
  expect(done.body.data!.offboardPartner.partner).toEqual({ id: partner.id, revokedAt: expect.any(String), testKey: { revokedAt: expect.any(String) } });

  for (const key of [partner.apiKey, partner.testApiKey]) {
    const answer = await here.gql(key, WHO);
    expect([answer.status, answer.body.errors?.map((e) => e.extensions?.code)]).toEqual([401, ['UNAUTHENTICATED']]);
  }
  await until(() => both.every((s) => s.closed() !== undefined), { message: 'the sockets of both keys to close', timeoutMs: 3_000 });
  expect(both.map((s) => s.closed())).toEqual([4403, 4403]);
  expect(bystander.closed()).toBeUndefined();
  expect(await status(other.apiKey)).toBe(200);

  const { rows } = await here.sql.query('SELECT id, enabled, deleted_at IS NOT NULL AS deleted FROM webhook_endpoints WHERE id = ANY($1::uuid[])', [endpoints]);
  const byId = new Map(rows.map((r) => [r.id, { enabled: r.enabled, deleted: r.deleted }]));
  expect(endpoints.map((id) => byId.get(id))).toEqual([
    { enabled: false, deleted: true },
    { enabled: false, deleted: true },
    { enabled: true, deleted: false },
  ]);
  const deliveries = await here.sql.query('SELECT status, last_error FROM webhook_deliveries WHERE endpoint_id = $1', [endpoints[0]]);
  expect(deliveries.rows).toEqual([{ status: 'FAILED', last_error: 'endpoint deleted' }]);
  const listed = (await here.gql(ADMIN_KEY, '{ webhooks { id } }')).body.data!.webhooks.map((w: { id: string }) => w.id);
  expect(listed).toContain(endpoints[2]);
  expect(listed).not.toContain(endpoints[0]);
  expect(listed).not.toContain(endpoints[1]);

  // Again: nothing more to revoke, the first revokedAt kept.
  const again = await here.gql(ADMIN_KEY, OFFBOARD, { p: partner.id });
  expect(again.body.data!.offboardPartner.partner.revokedAt).toBe(revokedAt);
  const audit = await here.sql.query("SELECT actor, arguments, outcome FROM audit_log WHERE operation = 'offboardPartner' AND arguments->>'partnerId' = $1 ORDER BY id", [partner.id]);
  expect(audit.rows).toEqual([
    { actor: 'admin', arguments: { partnerId: partner.id }, outcome: 'OK' },
    { actor: 'admin', arguments: { partnerId: partner.id }, outcome: 'OK' },
  ]);

  // rotateApiKey issues new keys; the endpoints stay deleted.
  const rotated = await here.gql(ADMIN_KEY, 'mutation($p: ID!) { rotateApiKey(partnerId: $p) { apiKey } }', { p: partner.id });
  expect(await status(rotated.body.data!.rotateApiKey.apiKey)).toBe(200);
  expect((await here.gql(rotated.body.data!.rotateApiKey.apiKey, '{ webhooks { id } }')).body.data!.webhooks).toEqual([]);
});

test('the sockets of both keys on another instance close within API_KEY_CACHE_TTL_MS', async () => {
  const partner = await createPartner('off-boarded elsewhere');
  const both = [await openSocket(there, partner.apiKey), await openSocket(there, partner.testApiKey)];
  const sent = performance.now();
  expect((await here.gql(ADMIN_KEY, OFFBOARD, { p: partner.id })).body.errors).toBeUndefined();
  await until(() => both.every((s) => s.closed() !== undefined), { message: 'the sockets on the other instance to close', timeoutMs: 4 * TTL_MS, intervalMs: 5 });
  expect(performance.now() - sent).toBeLessThan(TTL_MS + MARGIN_MS);
  expect(both.map((s) => s.closed())).toEqual([4403, 4403]);
  for (const key of [partner.apiKey, partner.testApiKey]) expect((await there.gql(key, WHO)).status).toBe(401);
});

test('a partner key calling offboardPartner is FORBIDDEN, even for itself, and nothing is revoked; the refusal is audited', async () => {
  const partner = await createPartner('tries');
  for (const key of [partner.apiKey, partner.testApiKey]) {
    const answer = await here.gql(key, OFFBOARD, { p: partner.id });
    expect(answer.body.errors?.map((e) => e.extensions?.code)).toEqual(['FORBIDDEN']);
  }
  expect(await status(partner.apiKey)).toBe(200);
  expect(await status(partner.testApiKey)).toBe(200);
  const audit = await here.sql.query("SELECT actor, outcome FROM audit_log WHERE operation = 'offboardPartner' AND actor = $1", [`partner:${partner.id}`]);
  expect(audit.rows).toEqual([
    { actor: `partner:${partner.id}`, outcome: 'FORBIDDEN' },
    { actor: `partner:${partner.id}`, outcome: 'FORBIDDEN' },
  ]);
});

test('an unknown partner is NOT_FOUND', async () => {
  for (const p of ['00000000-0000-0000-0000-0000000000aa', 'not-a-uuid', '00000000-0000-0000-0000-000000000000']) {
    expect((await here.gql(ADMIN_KEY, OFFBOARD, { p })).body.errors?.map((e) => e.extensions?.code)).toEqual(['NOT_FOUND']);
  }
});
