// The legacy subscriptions protocol (subprotocol `graphql-ws`, subscriptions-transport-ws's: GraphQL
// Playground's) beside graphql-transport-ws on /graphql, spoken with its own client, under the same
// controls (src/wsLegacy.ts). The other WebSocket tests run over it too with
// TESSERA_TEST_WS_PROTOCOL=graphql-ws (test/helpers/ws.ts; `npm run test:legacy-ws`).
import { once } from 'node:events';
import { SubscriptionClient } from 'subscriptions-transport-ws';
import WebSocket from 'ws';
import { ADMIN_KEY, CLAIM, startTestServer, type TestServer } from './helpers/testServer';
import { until } from './helpers/time';
import { connectSocket, muteClosedSocketErrors, openSubscription, runOverSocket, socketErrors, WS_PROTOCOLS, type SocketClient, type WsProtocol } from './helpers/ws';

const LIVE = 'subscription Live($id: ID!) { campaignStats(id: $id) { total allocated available } }';

muteClosedSocketErrors();

let server: TestServer;
const sockets: SocketClient[] = [];
const clients: SubscriptionClient[] = [];
beforeAll(async () => {
  server = await startTestServer({ config: { apiKeyCacheTtlMs: 1000, websocket: { maxMessageBytes: 1_048_576, maxUnauthenticatedBytes: 16_384, maxSubscriptionsPerSocket: 2, maxSubscriptionsPerKey: 100 } } });
});
afterEach(async () => {
  await Promise.all(sockets.splice(0).map((s) => s.dispose()));
  for (const client of clients.splice(0)) client.close(true, true);
});
afterAll(() => server.stop());

const wsUrl = () => server.url.replace(/^http/, 'ws');

/** subscriptions-transport-ws's client as Playground uses it: `start` sent right after connection_init. */
function legacyClient(key: string | null): { client: SubscriptionClient; connectionErrors: unknown[]; closeCode: () => number | undefined } {
  let code: number | undefined;
  class Observed extends WebSocket {
    constructor(address: string, protocols?: string | string[]) {
      super(address, protocols);
      this.on('close', (closeCode) => (code = closeCode));
    }
  }
  const connectionErrors: unknown[] = [];
  const client = new SubscriptionClient(
    wsUrl(),
    { connectionParams: key === null ? {} : { Authorization: `Bearer ${key}` }, reconnect: false, connectionCallback: (error) => error && connectionErrors.push(error) },
    Observed,
  );
  clients.push(client);
  return { client, connectionErrors, closeCode: () => code };
}

/** Everything an operation produced over the legacy client, until `take` results or its end. */
function results(client: SubscriptionClient, payload: { query: string; variables?: Record<string, unknown> }, take: number) {
  const values: { data?: unknown; errors?: readonly unknown[] }[] = [];
  let error: unknown;
  const done = new Promise<void>((resolve) => {
    const subscription = client.request(payload).subscribe({
      next: (value) => {
        values.push(value);
        if (values.length >= take) {
          subscription.unsubscribe();
          resolve();
        }
      },
      error: (e) => {
        error = e;
        resolve();
      },
      complete: () => resolve(),
    });
  });
  return { values, error: () => error, done };
}

test("with subscriptions-transport-ws's client, an operator's campaignStats gets the figures now, then a claim made meanwhile", async () => {
  const campaignId = await server.openCampaignWith(3);
  const partner = await server.createPartner();
  const { client } = legacyClient(ADMIN_KEY);
  const feed = results(client, { query: LIVE, variables: { id: campaignId } }, 2);
  await until(() => feed.values.length >= 1 || null, { message: 'the first figures', timeoutMs: 10_000 });
  expect(feed.values[0]).toEqual({ data: { campaignStats: { total: 3, allocated: 0, available: 3 } } });
  await server.gql(partner.apiKey, CLAIM, { input: { campaignId, holder: 'h1' } });
  await feed.done;
  expect(feed.values[1]).toEqual({ data: { campaignStats: { total: 3, allocated: 1, available: 2 } } });
});

test('the server picks the subprotocol from the handshake: graphql-ws alone is the legacy one, both offered is graphql-transport-ws', async () => {
  for (const [offered, chosen] of [
    [['graphql-ws'], 'graphql-ws'],
    [['graphql-transport-ws'], 'graphql-transport-ws'],
    [['graphql-ws', 'graphql-transport-ws'], 'graphql-transport-ws'],
  ] as const) {
    const socket = new WebSocket(wsUrl(), [...offered]);
    await once(socket, 'open');
    expect(socket.protocol).toBe(chosen);
    socket.close();
  }
});

test('after connection_ack the server sends `ka` keep-alives, which the client needs to watch the connection', async () => {
  const socket = new WebSocket(wsUrl(), 'graphql-ws');
  const messages: { type: string }[] = [];
  socket.on('message', (data) => messages.push(JSON.parse(String(data)) as { type: string }));
  await once(socket, 'open');
  socket.send(JSON.stringify({ type: 'connection_init', payload: { Authorization: `Bearer ${ADMIN_KEY}` } }));
  await until(() => messages.length >= 2 || null, { message: 'connection_ack and a first ka', timeoutMs: 5_000 });
  expect(messages.slice(0, 2)).toEqual([{ type: 'connection_ack' }, { type: 'ka' }]);
  socket.send(JSON.stringify({ type: 'connection_terminate' }));
  const [code] = (await once(socket, 'close')) as [number];
  expect(code).toBe(1000);
});

test('a bad key is refused: connection_error, then the socket closes with 4403', async () => {
  const { client, connectionErrors, closeCode } = legacyClient('tsp_0123456789ab_' + 'A'.repeat(43));
  const feed = results(client, { query: LIVE, variables: { id: '00000000-0000-0000-0000-000000000001' } }, 1);
  await until(() => closeCode() ?? null, { message: 'the socket to close', timeoutMs: 10_000 });
  expect(closeCode()).toBe(4403);
  expect(connectionErrors).toEqual([{ message: 'Forbidden' }]);
  expect(feed.values).toEqual([]);
});

test("a start sent before the acknowledgement, as the client sends it, counts toward the 16 KiB a socket may send before its key is accepted", async () => {
  const campaignId = await server.openCampaignWith(1);
  const { client, closeCode } = legacyClient(ADMIN_KEY);
  const big = results(client, { query: LIVE, variables: { id: campaignId, padding: 'x'.repeat(20 * 1024) } }, 1);
  await until(() => closeCode() ?? null, { message: 'the socket to be cut off', timeoutMs: 10_000 });
  // Destroyed, not closed politely (1006), and nothing answered.
  expect(closeCode()).toBe(1006);
  expect(big.values).toEqual([]);
});

describe.each(WS_PROTOCOLS)('the same answers over %s', (protocol: WsProtocol) => {
  const socket = (key: string) => {
    const s = connectSocket(server.url, key, { protocol });
    sockets.push(s);
    return s;
  };
  const codes = (outcome: Parameters<typeof socketErrors>[0]) => socketErrors(outcome).map((e) => [e.extensions?.code, e.message]);

  test("a partner's key gets FORBIDDEN for campaignStats", async () => {
    const partner = await server.createPartner();
    const campaignId = await server.openCampaignWith(1);
    expect(codes(await runOverSocket(socket(partner.apiKey), { query: LIVE, variables: { id: campaignId } }))).toEqual([
      ['FORBIDDEN', expect.stringMatching(/VIEWER/)],
    ]);
  });

  test('a mutation over the socket is refused, naming HTTP, and changes nothing', async () => {
    const partner = await server.createPartner();
    const campaignId = await server.openCampaignWith(1);
    const outcome = await runOverSocket(socket(partner.apiKey), { query: CLAIM, variables: { input: { campaignId, holder: 'ws' } } });
    expect(codes(outcome)).toEqual([['BAD_REQUEST', expect.stringMatching(/HTTP/)]]);
    const { rows } = await server.sql.query('SELECT count(*)::int AS n FROM allocations WHERE campaign_id = $1', [campaignId]);
    expect(rows[0].n).toBe(0);
  });

  test('a document that does not validate is refused as over HTTP', async () => {
    expect(codes(await runOverSocket(socket(ADMIN_KEY), { query: 'subscription { nope }' }))[0]![0]).toBe('GRAPHQL_VALIDATION_FAILED');
  });

  test('a socket holds at most its cap of subscriptions: the next gets LIMIT_REACHED', async () => {
    const campaignId = await server.openCampaignWith(1);
    const s = socket(ADMIN_KEY);
    const open = [openSubscription(s, { query: LIVE, variables: { id: campaignId } }), openSubscription(s, { query: LIVE, variables: { id: campaignId } })];
    await Promise.all(open.map((o) => o.settled));
    expect(codes(await runOverSocket(s, { query: LIVE, variables: { id: campaignId } }))).toEqual([['LIMIT_REACHED', expect.stringMatching(/WS_MAX_SUBSCRIPTIONS_PER_SOCKET/)]]);
    for (const o of open) o.stop();
  });

  test('revoking the key closes the socket with 4403', async () => {
    const operator = await server.gql<{ createOperatorKey: { apiKey: string; key: { id: string } } }>(ADMIN_KEY, 'mutation { createOperatorKey(input: { name: "o", role: VIEWER }) { apiKey key { id } } }');
    const { apiKey, key } = operator.body.data!.createOperatorKey;
    const campaignId = await server.openCampaignWith(1);
    const s = socket(apiKey);
    const sub = openSubscription(s, { query: LIVE, variables: { id: campaignId } });
    await sub.settled;
    expect(sub.results).toHaveLength(1);
    const revoked = await server.gql(ADMIN_KEY, 'mutation($id: ID!) { revokeOperatorKey(id: $id) { revokedAt } }', { id: key.id });
    expect(revoked.body.errors).toBeUndefined();
    await until(() => s.closed() ?? null, { message: 'the socket to close', timeoutMs: 10_000 });
    expect(s.closed()).toBe(4403);
  });
});
