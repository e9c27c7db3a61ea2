// @dialects postgresql citus
// What operators see: one JSON log line per operation with a request id (never a key or metadata),
// Prometheus metrics, and health endpoints.
import { Writable } from 'node:stream';
import pino from 'pino';
import { ADMIN_KEY, CLAIM, startTestServer, type TestServer } from './helpers/testServer';
import { until } from './helpers/time';
import { connectSocket, runOverSocket } from './helpers/ws';

const lines: Record<string, any>[] = [];
const sink = new Writable({
  write(chunk, _encoding, done) {
    for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line));
    done();
  },
});

let server: TestServer;
let base: string;
beforeAll(async () => {
  server = await startTestServer({ logger: pino({ level: 'info' }, sink) });
  base = server.url.replace(/\/graphql$/, '');
});
afterAll(() => server.stop());

test('each operation logs one JSON line with its request id, and neither the API key nor the metadata', async () => {
  const partner = await server.createPartner('Logged');
  const campaignId = await server.openCampaignWith(2);
  lines.length = 0;
  const res = await fetch(server.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${partner.apiKey}`, 'x-request-id': 'req-obs-1' },
    body: JSON.stringify({ query: CLAIM, operationName: 'Claim', variables: { input: { campaignId, holder: 'secret-holder', metadata: { card: '4111-SECRET' } } } }),
  });
  expect(res.status).toBe(200);
  const line = await until(() => lines.find((l) => l.clientRequestId === 'req-obs-1'), { message: 'the log line of request req-obs-1', timeoutMs: 5_000, intervalMs: 10 });
  // The client's id is kept beside the server's own, which the response names.
  expect(line).toMatchObject({ msg: 'graphql', requestId: res.headers.get('x-request-id'), operation: 'Claim', type: 'mutation', status: 200, viewer: 'partner', partnerId: partner.id });
  expect(typeof line!.ms).toBe('number');
  const everything = JSON.stringify(lines);
  expect(everything).not.toContain(partner.apiKey);
  expect(everything).not.toContain(partner.apiKey.slice(0, 20));
  expect(everything).not.toContain('4111-SECRET');
  expect(everything).not.toContain(ADMIN_KEY);
});

test('an operation name of half a megabyte is logged cut to 100 characters with its length, over HTTP and over the socket', async () => {
  const name = `Q${'x'.repeat(499_999)}`;
  const campaignId = await server.openCampaignWith(1);
  lines.length = 0;
  const overHttp = await server.gql(ADMIN_KEY, `query ${name} { __typename }`);
  expect(overHttp.status).toBe(200);
  const socket = connectSocket(server.url, ADMIN_KEY);
  try {
    const live = await runOverSocket(socket, { query: `subscription ${name}($id: ID!) { campaignStats(id: $id) { total } }`, variables: { id: campaignId } });
    expect(live.results[0]?.data).toEqual({ campaignStats: { total: 1 } });
  } finally {
    await socket.dispose();
  }
  const logged = await until(() => (lines.filter((l) => l.msg === 'graphql' && l.operation?.startsWith('Qxx')).length >= 2 ? lines : undefined), {
    message: 'the log lines of both operations',
    timeoutMs: 5_000,
    intervalMs: 10,
  });
  const named = logged!.filter((l) => l.operation?.startsWith('Qxx'));
  expect(named.map((l) => l.transport).sort()).toEqual(['http', 'ws']);
  for (const line of named) expect(line.operation).toBe(`${name.slice(0, 100)}… (500000 characters)`);
  expect(Math.max(...logged!.map((l) => JSON.stringify(l).length))).toBeLessThan(2_000);
});

test('a failed authentication is logged without the key that was tried', async () => {
  lines.length = 0;
  const forged = 'tsp_0123456789ab_' + 'A'.repeat(43);
  await server.gql(forged, '{ __typename }');
  await until(() => lines.some((l) => l.errors?.includes('UNAUTHENTICATED') && l.status === 401), {
    message: 'the log line of the refused request',
    timeoutMs: 5_000,
    intervalMs: 10,
  });
  expect(JSON.stringify(lines)).not.toContain(forged);
});

test('GET /metrics counts claims by outcome, their latency, pool state and GraphQL errors by code', async () => {
  const partner = await server.createPartner('Measured');
  const campaignId = await server.openCampaignWith(1);
  await server.gql(partner.apiKey, CLAIM, { input: { campaignId, holder: 'm1' } });
  await server.gql(partner.apiKey, CLAIM, { input: { campaignId, holder: 'm2' } });
  await server.gql(partner.apiKey, 'mutation { openCampaign(id: "x") { campaign { id } } }');
  const res = await fetch(`${base}/metrics`);
  expect(res.status).toBe(200);
  const text = await res.text();
  expect(text).toMatch(/tessera_claims_total\{operation="claimTicket",outcome="ALLOCATED"\} [1-9]/);
  expect(text).toMatch(/tessera_claims_total\{operation="claimTicket",outcome="SOLD_OUT"\} [1-9]/);
  // Timed, whatever the machine's load made the time: counted in the histogram's last bucket and its count.
  expect(text).toMatch(/tessera_claim_duration_seconds_bucket\{le="\+Inf",operation="claimTicket",outcome="ALLOCATED"\} [1-9]/);
  expect(text).toMatch(/tessera_claim_duration_seconds_count\{operation="claimTicket",outcome="ALLOCATED"\} [1-9]/);
  expect(text).toMatch(/tessera_db_pool_connections\{state="in_use"\} \d+/);
  expect(text).toMatch(/tessera_db_pool_waiting \d+/);
  expect(text).toMatch(/tessera_graphql_errors_total\{code="FORBIDDEN"\} [1-9]/);
});

test('GET /readyz answers 200 when the database is reachable and migrations are applied', async () => {
  const res = await fetch(`${base}/readyz`);
  expect(res.status).toBe(200);
  expect(await res.json()).toEqual({ status: 'ok' });
});
