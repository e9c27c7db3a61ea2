// The key cache (API_KEY_CACHE_TTL_MS), partner and operator keys alike: a revocation or a scope
// this process did not make takes effect within the TTL, never later.
import { ADMIN_KEY, startTestServer, type TestServer } from './helpers/testServer';
import { until } from './helpers/time';

const TTL_MS = 400;

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ config: { apiKeyCacheTtlMs: TTL_MS } });
});
afterAll(() => server.stop());

test('a key revoked behind the server\'s back stops working within the cache TTL', async () => {
  const partner = await server.createPartner();
  expect((await server.gql(partner.apiKey, '{ __typename }')).status).toBe(200);
  // The server (in this process, on this clock) cached the key's record while answering that
  // request: the record is stale TTL_MS after this instant at the latest.
  const cachedBy = performance.now();
  await server.sql.query('UPDATE partners SET revoked_at = now() WHERE id = $1', [partner.id]);
  // Until the TTL has passed the cached record may still answer; after it, never. Ask until refused.
  const answers: { sentAt: number; status: number }[] = [];
  const after = await until(
    async () => {
      const sentAt = performance.now();
      const r = await server.gql(partner.apiKey, '{ __typename }');
      answers.push({ sentAt, status: r.status });
      return r.status === 200 ? null : r;
    },
    { message: 'the revoked key to be refused', timeoutMs: 5_000, intervalMs: 20 },
  );
  expect(after.status).toBe(401);
  expect(after.body.errors![0]!.extensions!.code).toBe('UNAUTHENTICATED');
  // Every request the revoked key still passed was sent within the TTL (lru-cache reads its clock
  // to the millisecond: a little slack).
  const lastAccepted = Math.max(cachedBy, ...answers.filter((a) => a.status === 200).map((a) => a.sentAt));
  expect(lastAccepted - cachedBy).toBeLessThan(TTL_MS + 5);
});

test('a wrong secret with a cached key prefix is still refused (the hash is compared every time)', async () => {
  const partner = await server.createPartner();
  expect((await server.gql(partner.apiKey, '{ __typename }')).status).toBe(200);
  const forged = partner.apiKey.slice(0, -4) + (partner.apiKey.endsWith('AAAA') ? 'BBBB' : 'AAAA');
  expect((await server.gql(forged, '{ __typename }')).status).toBe(401);
});

test("an operator key revoked behind the server's back stops working within the cache TTL, as a partner key does", async () => {
  const made = await server.gql(ADMIN_KEY, 'mutation { createOperatorKey(input: { name: "cached", role: VIEWER }) { apiKey key { id } } }');
  const { apiKey, key } = made.body.data!.createOperatorKey;
  expect((await server.gql(apiKey, '{ viewer { role } }')).body.data!.viewer.role).toBe('VIEWER');
  const cachedBy = performance.now();
  await server.sql.query('UPDATE operator_keys SET revoked_at = now() WHERE id = $1', [key.id]);
  const refused = await until(async () => {
    const r = await server.gql(apiKey, '{ viewer { role } }');
    return r.status === 401 ? { r, at: performance.now() } : null;
  }, { message: 'the revoked operator key to be refused', timeoutMs: 5_000, intervalMs: 20 });
  expect(refused.r.body.errors![0]!.extensions!.code).toBe('UNAUTHENTICATED');
  expect(refused.at - cachedBy).toBeLessThan(TTL_MS + 500);
});

test("a partner key scoped behind the server's back loses the other campaigns within the cache TTL", async () => {
  const partner = await server.createPartner();
  const [inside, outside] = [await server.openCampaignWith(1), await server.openCampaignWith(1)];
  const read = async () => (await server.gql(partner.apiKey, 'query($id: ID!) { campaign(id: $id) { id } }', { id: outside })).body.data!.campaign;
  expect(await read()).toEqual({ id: outside });
  await server.sql.query('UPDATE partners SET scoped = true, campaign_scope = $2 WHERE id = $1', [partner.id, [inside]]);
  await until(async () => (await read()) === null, { message: 'the scope to apply', timeoutMs: 5_000, intervalMs: 20 });
});
