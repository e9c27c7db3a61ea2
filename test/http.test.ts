// The HTTP surface around the API: health, GraphiQL offline, request limits, transport errors.
import { createDatabase } from '../src/db/client';
import { createLogger } from '../src/logger';
import { createServer } from '../src/server';
import { ADMIN_KEY, startTestServer, TEST_DATABASE_CONFIG, type TestServer } from './helpers/testServer';

let server: TestServer;
let base: string;
beforeAll(async () => {
  server = await startTestServer();
  base = server.url.replace(/\/graphql$/, '');
});
afterAll(() => server.stop());

test('GET /healthz answers 200 when the database answers and every migration is applied', async () => {
  const res = await fetch(`${base}/healthz`);
  expect(res.status).toBe(200);
  expect(await res.json()).toEqual({ status: 'ok' });
});

test('GET /healthz answers 503 when the database is unreachable', async () => {
  const db = createDatabase({ ...TEST_DATABASE_CONFIG, poolTimeoutMs: 500, url: 'postgresql://postgres@127.0.0.1:1/nowhere' });
  const down = await createServer({ config: { env: 'test', adminApiKey: ADMIN_KEY, shutdownGraceMs: 100 }, db, logger: createLogger({ env: 'test' }) });
  const { port } = await down.listen(0, '127.0.0.1');
  try {
    const res = await fetch(`http://127.0.0.1:${port}/healthz`);
    expect(res.status).toBe(503);
  } finally {
    await down.stop();
    await db.close();
  }
});

test('a browser GET /graphql gets GraphiQL, whose scripts are all served by Tessera itself', async () => {
  const res = await fetch(server.url, { headers: { accept: 'text/html' } });
  expect(res.status).toBe(200);
  const html = await res.text();
  expect(html).toContain('GraphiQL');
  const sources = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
  expect(sources.length).toBeGreaterThanOrEqual(4);
  for (const source of sources) {
    expect(source.startsWith('/')).toBe(true);
    const asset = await fetch(`${base}${source}`);
    expect(asset.status).toBe(200);
    expect((await asset.arrayBuffer()).byteLength).toBeGreaterThan(1000);
  }
});

test('a request without an API key answers UNAUTHENTICATED with HTTP 401', async () => {
  const r = await server.gql(null, '{ __typename }');
  expect(r.status).toBe(401);
  expect(r.body.errors![0]!.extensions!.code).toBe('UNAUTHENTICATED');
});

test('a 20 MB body is refused with 413 and the server keeps serving', async () => {
  const res = await fetch(server.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${ADMIN_KEY}` },
    body: JSON.stringify({ query: '{ __typename }', variables: { pad: 'x'.repeat(20 * 1024 * 1024) } }),
  });
  expect(res.status).toBe(413);
  expect(((await res.json()) as { errors: { extensions: { code: string } }[] }).errors[0]!.extensions.code).toBe('PAYLOAD_TOO_LARGE');
  expect((await server.gql(ADMIN_KEY, '{ __typename }')).status).toBe(200);
});

test('loadTickets with 10,000 codes of 128 characters fits in one request', async () => {
  const campaignId = await server.createCampaign();
  const codes = Array.from({ length: 10_000 }, (_, i) => `${String(i).padStart(8, '0')}${'x'.repeat(120)}`);
  const r = await server.gql(ADMIN_KEY, 'mutation($id: ID!, $codes: [String!]!) { loadTickets(campaignId: $id, codes: $codes) { loaded duplicates } }', {
    id: campaignId,
    codes,
  });
  expect(r.body.data!.loadTickets).toEqual({ loaded: 10_000, duplicates: 0 });
});

test('a malformed JSON body answers 400 BAD_REQUEST in GraphQL shape', async () => {
  const res = await fetch(server.url, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${ADMIN_KEY}` }, body: '{"query": ' });
  expect(res.status).toBe(400);
  expect(((await res.json()) as { errors: { extensions: { code: string } }[] }).errors[0]!.extensions.code).toBe('BAD_REQUEST');
});

test('batched array requests are refused', async () => {
  const res = await fetch(server.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${ADMIN_KEY}` },
    body: JSON.stringify([{ query: '{ __typename }' }, { query: '{ __typename }' }]),
  });
  expect(res.status).toBe(400);
});

test('a GET query without a CSRF-safe header is refused (Apollo CSRF prevention)', async () => {
  const res = await fetch(`${server.url}?query=${encodeURIComponent('{ __typename }')}`, { headers: { authorization: `Bearer ${ADMIN_KEY}` } });
  expect(res.status).toBe(400);
});

test("every response carries the server's own request id, whatever id the client sent", async () => {
  const res = await fetch(server.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${ADMIN_KEY}`, 'x-request-id': 'trace-123' },
    body: JSON.stringify({ query: '{ __typename }' }),
  });
  expect(res.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  const other = await server.gql(ADMIN_KEY, '{ __typename }');
  expect(other.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
});
