// A revoked partner's webhook endpoints get nothing (issue 26, docs/WEBHOOKS.md "Revoked partners"):
// no event is queued for them while the partner is revoked, and a delivery queued before the
// revocation is FAILED unsent ("partner revoked"). Other partners' endpoints and the operator's go on
// receiving, a rotated key is not a revoked one, and rotateApiKey restores a revoked partner's
// deliveries. Real receivers that verify each signature (test/helpers/receiver.ts), the real dispatcher.
import { sealSecret } from '../src/webhooks/secrets';
import { newWebhookSecret } from '../src/webhooks/signature';
import { startReceiver, type Receiver } from './helpers/receiver';
import { ADMIN_KEY, allocated, startTestServer, TEST_WEBHOOK_KEY, type TestServer } from './helpers/testServer';
import { until } from './helpers/time';

let server: TestServer;
let receiver: Receiver;
const secret = newWebhookSecret();

beforeAll(async () => {
  server = await startTestServer();
  receiver = await startReceiver({ secret });
});
afterAll(async () => {
  await receiver.close();
  await server.stop();
});

const EVENTS = ['CAMPAIGN_OPENED', 'CAMPAIGN_CLOSED', 'ALLOCATION_CREATED', 'ALLOCATION_RELEASED', 'HOLD_CREATED'];
const RELEASE = 'mutation($id: ID!) { releaseAllocation(allocationId: $id) { allocation { status } error { code } } }';

/** An endpoint written straight into the table, as createWebhook stores it, posting to `url`. */
async function endpoint(partnerId: string | null, url: string): Promise<string> {
  const { rows } = await server.sql.query<{ id: string }>('INSERT INTO webhook_endpoints (partner_id, url, events, secret_sealed) VALUES ($1, $2, $3, $4) RETURNING id', [
    partnerId,
    url,
    EVENTS,
    sealSecret(secret, TEST_WEBHOOK_KEY),
  ]);
  return rows[0]!.id;
}

/** What reached `path`, as `TYPE campaignId` or `TYPE allocationId`. */
const at = (path: string) => receiver.received.filter((r) => r.path === path).map((r) => `${r.body.type} ${r.body.data.allocation?.id ?? r.body.data.campaign?.id}`);

async function must(key: string, query: string, variables: Record<string, unknown>) {
  const res = await server.gql(key, query, variables);
  expect(res.body.errors).toBeUndefined();
  return res.body.data!;
}

test("a revoked partner's endpoints receive nothing, queued or new; another partner's and the operator's still do; rotating its key restores them", async () => {
  const [revoked, other] = await Promise.all([server.createPartner('to be revoked'), server.createPartner('other')]);
  await endpoint(revoked.id, `${receiver.url}/revoked`);
  await endpoint(other.id, `${receiver.url}/other`);
  await endpoint(null, `${receiver.url}/operator`);
  // An endpoint of the revoked partner that refuses connections for now: what it is sent stays
  // PENDING, queued for a retry — the deliveries a revocation finds already queued.
  const queued = await endpoint(revoked.id, 'http://127.0.0.1:9/queued');

  // Before the revocation every endpoint receives, the revoked partner's included.
  const before = await server.openCampaignWith(10, { name: 'before' });
  const hold = allocated(await server.hold(revoked.apiKey, { campaignId: before })).id;
  await until(() => at('/revoked').length === 2 && at('/other').length === 1, { message: 'the opening and the hold to reach the partners' });
  expect(at('/revoked').sort()).toEqual([`CAMPAIGN_OPENED ${before}`, `HOLD_CREATED ${hold}`].sort());
  await until(
    async () =>
      (await server.sql.query("SELECT count(*)::int AS n FROM webhook_deliveries WHERE endpoint_id = $1 AND status = 'PENDING' AND attempts >= 1 AND lease_until IS NULL", [queued]))
        .rows[0].n === 2,
    { message: 'the unreachable endpoint to have two deliveries queued for a retry' },
  );

  await must(ADMIN_KEY, 'mutation($p: ID!) { revokeApiKey(partnerId: $p) { partner { id revokedAt } } }', { p: revoked.id });
  // Rotating another partner's key is not revoking it: its deliveries go on.
  const otherKey = (await must(ADMIN_KEY, 'mutation($p: ID!) { rotateApiKey(partnerId: $p) { apiKey } }', { p: other.id })).rotateApiKey.apiKey as string;
  // The queued endpoint now answers, and its deliveries are due: only the revocation stops them.
  await server.sql.query('UPDATE webhook_endpoints SET url = $2 WHERE id = $1', [queued, `${receiver.url}/queued`]);
  await server.sql.query("UPDATE webhook_deliveries SET next_attempt_at = now() WHERE endpoint_id = $1 AND status = 'PENDING'", [queued]);

  // Campaign-wide events, the partner's own allocation released by an operator, another partner's claim.
  const during = await server.openCampaignWith(5, { name: 'during' });
  await must(ADMIN_KEY, 'mutation($id: ID!) { closeCampaign(id: $id) { campaign { id } } }', { id: during });
  expect((await must(ADMIN_KEY, RELEASE, { id: hold })).releaseAllocation).toEqual({ allocation: { status: 'RELEASED' }, error: null });
  const claimed = allocated(await server.claim(otherKey, { campaignId: before, holder: 'o' })).id;

  await until(() => at('/other').includes(`CAMPAIGN_CLOSED ${during}`) && at('/other').includes(`ALLOCATION_CREATED ${claimed}`), {
    message: 'the other partner to receive the opening, the close and its claim',
  });
  await until(() => at('/operator').includes(`ALLOCATION_RELEASED ${hold}`) && at('/operator').includes(`CAMPAIGN_CLOSED ${during}`), {
    message: "the operator to receive the release of the revoked partner's hold",
  });
  const failed = await until(
    async () => {
      const { rows } = await server.sql.query("SELECT status, last_error, last_status_code FROM webhook_deliveries WHERE endpoint_id = $1 AND status <> 'PENDING'", [queued]);
      return rows.length === 2 && rows;
    },
    { message: 'the queued deliveries to end' },
  );
  expect(failed).toEqual([
    { status: 'FAILED', last_error: 'partner revoked', last_status_code: null },
    { status: 'FAILED', last_error: 'partner revoked', last_status_code: null },
  ]);
  // Every event is drained by now (the operator's came after the revoked partner's would have).
  expect((await server.sql.query('SELECT count(*)::int AS n FROM webhook_events')).rows[0].n).toBe(0);
  expect(at('/other')).toEqual(expect.arrayContaining([`CAMPAIGN_OPENED ${during}`, `CAMPAIGN_CLOSED ${during}`, `ALLOCATION_CREATED ${claimed}`]));
  expect(at('/revoked').sort()).toEqual([`CAMPAIGN_OPENED ${before}`, `HOLD_CREATED ${hold}`].sort());
  expect(at('/queued')).toEqual([]);
  const { rows: queuedForRevoked } = await server.sql.query(
    'SELECT count(*)::int AS n FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id WHERE e.partner_id = $1',
    [revoked.id],
  );
  expect(queuedForRevoked[0].n).toBe(4); // the opening and the hold, to each of its two endpoints: nothing since

  // rotateApiKey gives the partner a key again: it is no longer revoked, and its endpoints receive.
  await must(ADMIN_KEY, 'mutation($p: ID!) { rotateApiKey(partnerId: $p) { apiKey } }', { p: revoked.id });
  const after = await server.openCampaignWith(1, { name: 'after' });
  await until(() => at('/revoked').includes(`CAMPAIGN_OPENED ${after}`) && at('/queued').includes(`CAMPAIGN_OPENED ${after}`), {
    message: 'the restored partner to receive again',
  });
  expect(at('/revoked')).not.toContain(`CAMPAIGN_OPENED ${during}`);
});
