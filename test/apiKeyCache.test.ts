// The partner-key cache (API_KEY_CACHE_TTL_MS): a revocation this process did not make takes effect
// within the TTL, never later.
import { startTestServer, type TestServer } from './helpers/testServer';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ config: { apiKeyCacheTtlMs: 400 } });
});
afterAll(() => server.stop());

test('a key revoked behind the server\'s back stops working within the cache TTL', async () => {
  const partner = await server.createPartner();
  expect((await server.gql(partner.apiKey, '{ __typename }')).status).toBe(200);
  await server.sql.query('UPDATE partners SET revoked_at = now() WHERE id = $1', [partner.id]);
  const revokedAt = Date.now();
  // Until the TTL has passed the cached record may still answer; after it, never.
  await new Promise((resolve) => setTimeout(resolve, 450));
  const after = await server.gql(partner.apiKey, '{ __typename }');
  expect(Date.now() - revokedAt).toBeGreaterThanOrEqual(400);
  expect(after.status).toBe(401);
  expect(after.body.errors![0]!.extensions!.code).toBe('UNAUTHENTICATED');
});

test('a wrong secret with a cached key prefix is still refused (the hash is compared every time)', async () => {
  const partner = await server.createPartner();
  expect((await server.gql(partner.apiKey, '{ __typename }')).status).toBe(200);
  const forged = partner.apiKey.slice(0, -4) + (partner.apiKey.endsWith('AAAA') ? 'BBBB' : 'AAAA');
  expect((await server.gql(forged, '{ __typename }')).status).toBe(401);
});
