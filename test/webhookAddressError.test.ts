// What a partner reads of a refused webhook address. In production the dispatcher refuses a host
// name that resolves to a private or reserved address, and one that does not resolve at all; both
// must read the same through the API ("address not allowed"), or lastError would tell a partner
// which internal names exist and where they point. The server's log keeps the detail for
// operators: the name, and the address. Real dispatcher, real DNS (localhost and an .invalid name).
import { Writable } from 'node:stream';
import pino from 'pino';
import { startTestServer, TEST_WEBHOOK_KEY, type TestServer } from './helpers/testServer';
import { until } from './helpers/time';

const CREATE = 'mutation($input: CreateWebhookInput!) { createWebhook(input: $input) { endpoint { id } } }';
const DELIVERIES = 'query($id: ID!) { webhookDeliveries(endpointId: $id) { edges { node { status attempts lastStatusCode lastError } } } }';

const logged: Record<string, any>[] = [];
const sink = new Writable({
  write(chunk, _encoding, done) {
    for (const line of String(chunk).split('\n').filter(Boolean)) logged.push(JSON.parse(line));
    done();
  },
});

let server: TestServer;
let partner: { id: string; apiKey: string };

beforeAll(async () => {
  server = await startTestServer({
    logger: pino({ level: 'info' }, sink),
    config: { webhooks: { secretKey: TEST_WEBHOOK_KEY, allowPrivateNetworks: false, production: true } },
  });
  partner = await server.createPartner('Maps internal names');
});
afterAll(() => server.stop());

type Delivery = { status: string; attempts: number; lastStatusCode: number | null; lastError: string | null };

/** An endpoint of the partner's at `url`, and its first delivery once it has been attempted, as the partner reads it. */
async function firstAttempt(url: string): Promise<{ endpointId: string; delivery: Delivery }> {
  const made = await server.gql(partner.apiKey, CREATE, { input: { url, events: ['ALLOCATION_CREATED'] } });
  expect(made.body.errors).toBeUndefined();
  const endpointId = made.body.data!.createWebhook.endpoint.id as string;
  const campaignId = await server.openCampaignWith(1);
  expect((await server.claim(partner.apiKey, { campaignId })).error).toBeNull();
  const delivery = await until(
    async () => {
      const read = await server.gql(partner.apiKey, DELIVERIES, { id: endpointId });
      expect(read.body.errors).toBeUndefined();
      const node = read.body.data!.webhookDeliveries.edges[0]?.node as Delivery | undefined;
      return node && node.attempts >= 1 && node.lastError !== null ? node : null;
    },
    { message: `the delivery to ${url} to be attempted` },
  );
  return { endpointId, delivery };
}

test('a name that resolves to a loopback address and a name that does not resolve read alike: "address not allowed"', async () => {
  const internal = await firstAttempt('https://localhost:5715/hooks');
  const unknown = await firstAttempt('https://no-such-host.invalid/hooks');
  expect(internal.delivery).toEqual({ status: 'PENDING', attempts: 1, lastStatusCode: null, lastError: 'address not allowed' });
  expect(unknown.delivery).toEqual(internal.delivery);

  // The operators' log names the name and the address, per delivery.
  const refusals = logged.filter((l) => l.msg === 'webhook attempt refused: address not allowed');
  expect(refusals.find((l) => l.endpoint === internal.endpointId)?.detail).toMatch(/^localhost resolves to (127\.0\.0\.1|::1), a forbidden address$/);
  expect(refusals.find((l) => l.endpoint === unknown.endpointId)?.detail).toMatch(/^no-such-host\.invalid did not resolve \(/);

  // Nor is the detail stored where the API reads it.
  const { rows } = await server.sql.query<{ last_error: string }>(
    'SELECT DISTINCT d.last_error FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id WHERE e.partner_id = $1',
    [partner.id],
  );
  expect(rows.map((r) => r.last_error)).toEqual(['address not allowed']);
});
