// The HTTP surface around the API: health, GraphiQL offline, request limits, transport errors.
import http from 'node:http';
import { gzipSync } from 'node:zlib';
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

/** A POST written chunk by chunk (node:http, so a body can be chunked, compressed, or never sent). */
function rawPost(url: string, headers: Record<string, string | number>, chunks: (string | Buffer)[] | null): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'POST', headers: { authorization: `Bearer ${ADMIN_KEY}`, ...headers } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => {
        resolve({ status: res.statusCode!, headers: res.headers, body });
        req.destroy();
      });
    });
    req.on('error', reject);
    if (chunks === null) {
      req.flushHeaders(); // headers only: the body never comes
      return;
    }
    for (const chunk of chunks) req.write(chunk);
    req.end();
  });
}

const code = (body: string) => (JSON.parse(body) as { errors: { extensions: { code: string } }[] }).errors[0]!.extensions.code;

describe('request bodies are read as body-parser reads them', () => {
  const JSON_TYPE = { 'content-type': 'application/json' };
  const QUERY = '{"query":"{ __typename }"}';
  const typename = '{"data":{"__typename":"Query"}}\n';

  test('a chunked body, one byte at a time, and a character split across chunks', async () => {
    const split = Buffer.from('{"query":"{ __typename }","variables":{"name":"café"}}');
    const bytes = [...split].map((b) => Buffer.from([b]));
    const r = await rawPost(server.url, { ...JSON_TYPE, 'transfer-encoding': 'chunked' }, bytes);
    expect([r.status, r.body]).toEqual([200, typename]);
  });

  test('a byte order mark and leading whitespace are allowed; a body that is not an object or an array is not JSON', async () => {
    expect((await rawPost(server.url, JSON_TYPE, ['\ufeff' + QUERY])).body).toBe(typename);
    expect((await rawPost(server.url, JSON_TYPE, [' \r\n\t' + QUERY])).body).toBe(typename);
    for (const body of ['"{ __typename }"', '1', 'null', '   ']) {
      const r = await rawPost(server.url, JSON_TYPE, [body]);
      expect([r.status, code(r.body)]).toEqual([400, 'BAD_REQUEST']);
    }
  });

  test('an empty body is an empty request, as Apollo words it', async () => {
    const r = await rawPost(server.url, { ...JSON_TYPE, 'content-length': 0 }, []);
    expect(r.status).toBe(400);
    expect(JSON.parse(r.body).errors[0].message).toMatch(/POST body missing/);
  });

  test('gzip bodies are inflated, other charsets than UTF-* and unknown encodings are refused with 415', async () => {
    expect((await rawPost(server.url, { ...JSON_TYPE, 'content-encoding': 'gzip' }, [gzipSync(QUERY)])).body).toBe(typename);
    const latin1 = await rawPost(server.url, { 'content-type': 'application/json; charset=latin1' }, [QUERY]);
    expect([latin1.status, code(latin1.body)]).toEqual([415, 'BAD_REQUEST']);
    const unknown = await rawPost(server.url, { ...JSON_TYPE, 'content-encoding': 'zip' }, [QUERY]);
    expect(unknown.status).toBe(415);
  });

  test('the 5 MB limit counts bytes: exactly 5 MB is read, one byte more is refused, chunked or not', async () => {
    const padded = (size: number) => {
      const empty = JSON.stringify({ query: '{ __typename }', variables: { pad: '' } });
      return JSON.stringify({ query: '{ __typename }', variables: { pad: 'x'.repeat(size - empty.length) } });
    };
    expect((await rawPost(server.url, JSON_TYPE, [padded(5 * 1024 * 1024)])).status).toBe(200);
    const over = await rawPost(server.url, JSON_TYPE, [padded(5 * 1024 * 1024 + 1)]);
    expect([over.status, code(over.body)]).toEqual([413, 'PAYLOAD_TOO_LARGE']);
    const body = padded(6 * 1024 * 1024);
    const chunked = await rawPost(server.url, { ...JSON_TYPE, 'transfer-encoding': 'chunked' }, [body.slice(0, 3_000_000), body.slice(3_000_000)]);
    expect([chunked.status, code(chunked.body)]).toEqual([413, 'PAYLOAD_TOO_LARGE']);
    expect((await server.gql(ADMIN_KEY, '{ __typename }')).status).toBe(200);
  });
});

test('with the database queue full, POST /graphql is answered 503 at once, before its body arrives', async () => {
  const full = await createServer({
    config: { env: 'test', adminApiKey: ADMIN_KEY, shutdownGraceMs: 100, holdSweepIntervalMs: 0 },
    db: { ...server.db, saturated: () => true },
    logger: createLogger({ env: 'test' }),
  });
  const { port } = await full.listen(0, '127.0.0.1');
  try {
    const url = `http://127.0.0.1:${port}/graphql`;
    const r = await rawPost(url, { 'content-type': 'application/json', 'content-length': 1000 }, null);
    expect(r.status).toBe(503);
    expect(r.headers['retry-after']).toMatch(/^\d+$/);
    expect(code(r.body)).toBe('UNAVAILABLE');
    const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    expect(metrics).toMatch(/^tessera_requests_shed_total 1$/m);
  } finally {
    await full.stop();
  }
});

test('the other methods and spellings of /graphql reach Apollo through Express, as before', async () => {
  const get = await fetch(`${server.url}?query=${encodeURIComponent('{ __typename }')}`, { headers: { authorization: `Bearer ${ADMIN_KEY}`, 'apollo-require-preflight': '1' } });
  expect([get.status, await get.text()]).toEqual([200, '{"data":{"__typename":"Query"}}\n']);
  expect(get.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  const put = await fetch(server.url, { method: 'PUT', headers: { 'content-type': 'application/json', authorization: `Bearer ${ADMIN_KEY}` }, body: '{"query":"{ __typename }"}' });
  expect([put.status, put.headers.get('allow')]).toEqual([405, 'GET, POST']);
  for (const path of ['/GRAPHQL', '/graphql/', '/graphql?operationName=']) {
    const r = await fetch(`${base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${ADMIN_KEY}` }, body: '{"query":"{ __typename }"}' });
    expect(r.status).toBe(200);
  }
  const head = await fetch(server.url, { method: 'HEAD', headers: { authorization: `Bearer ${ADMIN_KEY}` } });
  expect(head.status).toBe(400); // Apollo's CSRF prevention: no content-type, no preflight header
});

test('GraphQL answers are never stored by a cache', async () => {
  expect((await server.gql(ADMIN_KEY, '{ __typename }')).headers.get('cache-control')).toBe('no-store');
  expect((await server.gql(null, '{ __typename }')).headers.get('cache-control')).toBe('no-store');
});
