// One set of controls for every transport: each finding of the probe of 2026-11-30, over HTTP and
// over graphql-ws with a real socket, where both apply (docs/SECURITY.md, "Transports").
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { buildSchema, parse, type OperationDefinitionNode } from 'graphql';
import { AUTH_FAILURE_FLOOR_MS } from '../src/admission';
import { measureOperation } from '../src/cost';
import { SCHEMA_PATH } from '../src/server';
import { ADMIN_KEY, CLAIM, createTestDatabase, startTestServer, type TestServer } from './helpers/testServer';
import { until, untilSessionsWaitForLock } from './helpers/time';
import { connectSocket, postFrom, runOverSocket, socketErrors, type SocketClient } from './helpers/ws';

const LIVE = 'subscription Live($id: ID!) { campaignStats(id: $id) { total allocated available } }';
const codes = (errors: { extensions?: Record<string, unknown> }[] | undefined) => (errors ?? []).map((e) => e.extensions?.code);

let server: TestServer;
const sockets: SocketClient[] = [];
const socket = (key: string | null, localAddress?: string) => {
  const s = connectSocket(server.url, key, { localAddress });
  sockets.push(s);
  return s;
};
const auditRows = async (operation: string) =>
  (await server.sql.query('SELECT actor, operation, arguments, outcome, request_id, client_request_id FROM audit_log WHERE operation = $1 ORDER BY id', [operation])).rows;

beforeAll(async () => {
  // As in production: no introspection, no suggestions; limits at their defaults.
  server = await startTestServer({ config: { env: 'production', apiKeyCacheTtlMs: 1_000 } });
});
afterEach(async () => {
  await Promise.all(sockets.splice(0).map((s) => s.dispose()));
});
afterAll(() => server.stop());

describe('the socket serves subscriptions only, through the same checks as HTTP', () => {
  test('twenty aliased claims: refused on both transports, nothing allocated', async () => {
    const partner = await server.createPartner();
    const campaignId = await server.openCampaignWith(30);
    const aliases = Array.from({ length: 20 }, (_, i) => `c${i}: claimTicket(input: { campaignId: "${campaignId}", holder: "h${i}" }) { allocation { id } }`);
    const document = `mutation { ${aliases.join(' ')} }`;
    const overHttp = await server.gql(partner.apiKey, document);
    expect(codes(overHttp.body.errors)).toContain('GRAPHQL_VALIDATION_FAILED');
    const overSocket = socketErrors(await runOverSocket(socket(partner.apiKey), { query: document }));
    expect(codes(overSocket)).toContain('GRAPHQL_VALIDATION_FAILED');
    const { rows } = await server.sql.query('SELECT count(*)::int AS n FROM allocations WHERE campaign_id = $1', [campaignId]);
    expect(rows[0].n).toBe(0);
  });

  test('a mutation within the limits is refused over the socket, naming HTTP, and does not run', async () => {
    const partner = await server.createPartner();
    const campaignId = await server.openCampaignWith(5);
    const outcome = await runOverSocket(socket(partner.apiKey), { query: CLAIM, variables: { input: { campaignId, holder: 'over-ws' } } });
    const errors = socketErrors(outcome);
    expect(codes(errors)).toEqual(['BAD_REQUEST']);
    expect(errors[0]!.message).toMatch(/HTTP POST \/graphql/);
    const { rows } = await server.sql.query('SELECT count(*)::int AS n FROM allocations WHERE campaign_id = $1', [campaignId]);
    expect(rows[0].n).toBe(0);
  });

  test('admin mutations over the socket are refused before they run: no partner, no audit row', async () => {
    const name = `ws-${randomBytes(4).toString('hex')}`;
    const outcome = await runOverSocket(socket(ADMIN_KEY), { query: `mutation { createPartner(input: { name: "${name}" }) { apiKey } }` });
    expect(codes(socketErrors(outcome))).toEqual(['BAD_REQUEST']);
    const { rows } = await server.sql.query('SELECT count(*)::int AS n FROM partners WHERE name = $1', [name]);
    expect(rows[0].n).toBe(0);
    expect((await auditRows('createPartner')).filter((r) => JSON.stringify(r.arguments).includes(name))).toEqual([]);
  });

  test.each([
    ['depth 13', `subscription { campaignStats(id: "x") { ${'a { '.repeat(12)}b${' }'.repeat(12)} } }`, 'GRAPHQL_VALIDATION_FAILED'],
    ['36,000 tokens', `subscription { ${'campaignStats(id: "x") { total } '.repeat(4000)} }`, 'GRAPHQL_PARSE_FAILED'],
  ])('a document beyond the limits (%s) is refused on both transports', async (_name, document, code) => {
    expect(codes((await server.gql(ADMIN_KEY, document)).body.errors)).toContain(code);
    expect(codes(socketErrors(await runOverSocket(socket(ADMIN_KEY), { query: document })))).toContain(code);
  });

  test('a document over the cost limit is refused on both transports', async () => {
    const costly = `query { ${Array.from({ length: 10 }, (_, i) => `c${i}: campaigns(first: 100) { edges { node { allocations(first: 100) { edges { node { ticket { code } partner { name } } } } } } }`).join(' ')} }`;
    expect(codes((await server.gql(ADMIN_KEY, costly)).body.errors)).toContain('GRAPHQL_VALIDATION_FAILED');
    expect(codes(socketErrors(await runOverSocket(socket(ADMIN_KEY), { query: costly })))).toContain('GRAPHQL_VALIDATION_FAILED');
  });

  test('introspection is off on both transports where it is off', async () => {
    const query = '{ __schema { types { name } } }';
    expect(codes((await server.gql(ADMIN_KEY, query)).body.errors)).toContain('GRAPHQL_VALIDATION_FAILED');
    const overSocket = socketErrors(await runOverSocket(socket(ADMIN_KEY), { query: 'subscription { __schema { types { name } } }' }));
    expect(codes(overSocket)).toContain('GRAPHQL_VALIDATION_FAILED');
  });

  test('no "Did you mean" on either transport, for fields or enum values', async () => {
    const field = await server.gql(ADMIN_KEY, '{ campaigns { edges { node { nme } } } }');
    expect(field.body.errors![0]!.message).not.toMatch(/Did you mean/);
    const enumValue = await server.gql(ADMIN_KEY, 'query($s: CampaignStatus) { campaigns(status: $s) { totalCount } }', { s: 'OPN' });
    expect(enumValue.body.errors![0]!.message).not.toMatch(/Did you mean/);
    const overSocket = socketErrors(await runOverSocket(socket(ADMIN_KEY), { query: 'subscription { campaignStat(id: "x") { total } }' }));
    expect(overSocket.length).toBeGreaterThan(0);
    expect(overSocket.map((e) => e.message).join(' ')).not.toMatch(/Did you mean/);
  });

  test('a database error never reaches the socket client as text', async () => {
    const outcome = await runOverSocket(socket(ADMIN_KEY), { query: LIVE, variables: { id: 'not-a-uuid' } });
    const text = JSON.stringify(outcome);
    expect(text).not.toMatch(/Raw query failed|22P02|invalid input syntax|prisma/i);
  });

  test('a subscription over HTTP POST answers 400 naming graphql-ws', async () => {
    const campaignId = await server.openCampaignWith(1);
    const answer = await server.gql(ADMIN_KEY, LIVE, { id: campaignId });
    expect(answer.status).toBe(400);
    expect(answer.body.errors![0]!.message).toMatch(/graphql-ws/);
  });
});

describe('rate limits and failed logins count on both transports', () => {
  test('subscribe messages are charged to the partner rate limit', async () => {
    const partner = await server.createPartner();
    await server.gql(ADMIN_KEY, 'mutation($p: ID!) { setPartnerRateLimit(partnerId: $p, pointsPerSecond: 1) { partner { id } } }', { p: partner.id });
    const s = socket(partner.apiKey);
    const answers = [];
    for (let i = 0; i < 12; i += 1) answers.push(codes(socketErrors(await runOverSocket(s, { query: LIVE, variables: { id: '00000000-0000-0000-0000-000000000001' } }))));
    expect(answers.flat()).toContain('RATE_LIMITED');
  });

  test('the burst allowance follows the partner own rate: 1 point per second allows a handful of reads, not hundreds', async () => {
    const partner = await server.createPartner();
    await server.gql(ADMIN_KEY, 'mutation($p: ID!) { setPartnerRateLimit(partnerId: $p, pointsPerSecond: 1) { partner { id } } }', { p: partner.id });
    const statuses = await Promise.all(Array.from({ length: 60 }, () => server.gql(partner.apiKey, '{ __typename }').then((r) => r.status)));
    expect(statuses.filter((s) => s === 200).length).toBeLessThanOrEqual(10);
    expect(statuses.filter((s) => s === 429).length).toBeGreaterThanOrEqual(50);
  });

  test('fifteen aliased claims inside a fragment cost fifteen claims, as at the root', async () => {
    const partner = await server.createPartner();
    await server.gql(ADMIN_KEY, 'mutation($p: ID!) { setPartnerRateLimit(partnerId: $p, pointsPerSecond: 10) { partner { id } } }', { p: partner.id });
    const campaignId = await server.openCampaignWith(100);
    const claims = Array.from({ length: 15 }, (_, i) => `c${i}: claimTicket(input: { campaignId: "${campaignId}", holder: "f${i}" }) { allocation { id } }`).join(' ');
    // 75 points, over the key's whole allowance (rate 10, burst 50): refused as one that can never run.
    const inFragment = await server.gql(partner.apiKey, `mutation { ...Claims } fragment Claims on Mutation { ${claims} }`);
    expect([inFragment.status, inFragment.body.errors![0]!.extensions]).toEqual([400, expect.objectContaining({ code: 'COST_EXCEEDS_ALLOWANCE', points: 75, allowance: 50 })]);
    const inline = await server.gql(partner.apiKey, `mutation { ... on Mutation { ${claims} } }`);
    expect([inline.status, inline.body.errors![0]!.extensions]).toEqual([400, expect.objectContaining({ code: 'COST_EXCEEDS_ALLOWANCE', points: 75, allowance: 50 })]);
    const { rows } = await server.sql.query('SELECT count(*)::int AS n FROM allocations WHERE campaign_id = $1', [campaignId]);
    expect(rows[0].n).toBe(0);
  });

  test('an operation is charged what its variables make it cost, though its cost is remembered per document', () => {
    const schema = buildSchema(readFileSync(SCHEMA_PATH, 'utf8'));
    const cost = (query: string, variables: Record<string, unknown> = {}, document = parse(query)) =>
      measureOperation(schema, document, document.definitions[0] as OperationDefinitionNode, variables).points;
    const CLAIMS = 'a: claimTicket(input: $i) { allocation { id } } b: claimTicket(input: $i) @include(if: $two) { allocation { id } }';
    const byVariable = parse(`mutation($i: ClaimTicketInput!, $two: Boolean!) { ${CLAIMS} }`);
    expect([false, true, false, true].map((two) => cost('', { two }, byVariable))).toEqual([5, 10, 5, 10]);
    // In a fragment, the same.
    const inFragment = parse(`mutation($i: ClaimTicketInput!, $two: Boolean!) { ...C } fragment C on Mutation { ${CLAIMS} }`);
    expect([true, false].map((two) => cost('', { two }, inFragment))).toEqual([10, 5]);
    // A literal condition cannot change: remembered, and the same every time.
    const fixed = parse('mutation($i: ClaimTicketInput!) { a: claimTicket(input: $i) { allocation { id } } b: claimTicket(input: $i) @skip(if: true) { allocation { id } } }');
    expect([cost('', {}, fixed), cost('', {}, fixed)]).toEqual([5, 5]);
    expect(cost('{ __typename }')).toBe(1);
  });

  test('over the failed-login limit an address gets one 429 for every wrong key, on both transports, while the right key still gets in; other addresses are unaffected', async () => {
    const limited = await startTestServer({ config: { env: 'production', rateLimit: { pointsPerSecond: 20_000, burstPoints: 100_000, authFailuresPerMinute: 5 } } });
    try {
      const partner = await limited.createPartner();
      const wrongKey = `tsp_${randomBytes(6).toString('hex')}_${randomBytes(32).toString('base64url')}`;
      // Failed logins over the socket count toward the address's limit.
      for (let i = 0; i < 6; i += 1) {
        const s = connectSocket(limited.url, wrongKey, { localAddress: '127.0.0.2' });
        await runOverSocket(s, { query: LIVE, variables: { id: 'x' } });
        await s.dispose();
      }
      // A wrong secret for the partner's prefix and an unknown prefix get the same 429 (issue 26).
      const wrongSecret = await postFrom(limited.url, '127.0.0.2', `${partner.apiKey.slice(0, 'tsp_'.length + 12 + 1)}${randomBytes(32).toString('base64url')}`, '{ __typename }');
      expect(wrongSecret.status).toBe(429);
      expect(codes(wrongSecret.body.errors)).toEqual(['RATE_LIMITED']);
      const wrong = await postFrom(limited.url, '127.0.0.2', wrongKey, '{ __typename }');
      expect(wrong.status).toBe(429);
      expect(wrong.body).toEqual(wrongSecret.body);
      // Others' failures do not lock out the right key (issue 26): over HTTP, and over the socket.
      expect((await postFrom(limited.url, '127.0.0.2', partner.apiKey, '{ __typename }')).status).toBe(200);
      const refused = connectSocket(limited.url, wrongKey, { localAddress: '127.0.0.2' });
      await until(() => refused.closed() !== undefined, { message: 'the socket to be refused' });
      expect(refused.closed()).toBe(4403);
      await refused.dispose();
      const s = connectSocket(limited.url, partner.apiKey, { localAddress: '127.0.0.2' });
      expect(codes(socketErrors(await runOverSocket(s, { query: LIVE, variables: { id: '00000000-0000-0000-0000-000000000001' } })))).toEqual(['FORBIDDEN']);
      expect(s.closed()).toBeUndefined();
      await s.dispose();
      // Another address is not affected.
      expect((await postFrom(limited.url, '127.0.0.3', partner.apiKey, '{ __typename }')).status).toBe(200);
    } finally {
      await limited.stop();
    }
  });

  test('refused guesses over the limit cost the database nothing: they are answered while the pool is busy', async () => {
    const limited = await startTestServer({
      database: { poolSize: 1, poolTimeoutMs: 30_000 },
      config: { env: 'production', rateLimit: { pointsPerSecond: 20_000, burstPoints: 100_000, authFailuresPerMinute: 2 } },
    });
    try {
      const guess = () => postFrom(limited.url, '127.0.0.4', `tsp_${randomBytes(6).toString('hex')}_${randomBytes(32).toString('base64url')}`, '{ __typename }');
      for (let i = 0; i < 3; i += 1) await guess();
      // The only connection is taken by a claim that waits on the campaign gate.
      const partner = await limited.createPartner();
      const campaignId = await limited.openCampaignWith(1);
      const blocker = await limited.sql.connect();
      try {
        await blocker.query('BEGIN');
        // The gate, exclusive, as close takes it: here, and (on Citus) on the campaign's node.
        await blocker.query('SELECT pg_advisory_xact_lock(1, hashtext($1::uuid::text))', [campaignId]);
        await blocker.query('SELECT tessera_lock_campaign_gate($1::uuid)', [campaignId]);
        const stuck = limited.gql(partner.apiKey, CLAIM, { input: { campaignId, holder: 'stuck' } });
        await untilSessionsWaitForLock(limited.sql, 1, { timeoutMs: 10_000, message: 'the claim to hold the only connection' });
        const answers = await Promise.all(Array.from({ length: 20 }, guess));
        expect(answers.map((a) => a.status)).toEqual(Array(20).fill(429));
        await blocker.query('ROLLBACK');
        expect((await stuck).status).toBe(200);
      } finally {
        blocker.release();
      }
    } finally {
      await limited.stop();
    }
  });
});

test('a wrong secret for a known prefix and an unknown prefix are answered alike, and no sooner than the floor', async () => {
  const partner = await server.createPartner();
  const knownPrefixWrongSecret = `${partner.apiKey.slice(0, 'tsp_'.length + 12 + 1)}${randomBytes(32).toString('base64url')}`;
  const unknownPrefix = () => `tsp_${randomBytes(6).toString('hex')}_${randomBytes(32).toString('base64url')}`;
  for (const key of [knownPrefixWrongSecret, unknownPrefix()]) {
    const started = performance.now();
    const answer = await postFrom(server.url, '127.0.0.5', key, '{ __typename }');
    expect(performance.now() - started).toBeGreaterThanOrEqual(AUTH_FAILURE_FLOOR_MS);
    expect(answer).toEqual({ status: 401, body: { errors: [expect.objectContaining({ extensions: { code: 'UNAUTHENTICATED' } })] } });
  }
});

describe('keys are checked per operation', () => {
  test('revoking a key closes its open sockets at once, and rotating closes them too', async () => {
    for (const mutation of ['revokeApiKey(partnerId: $p) { partner { id } }', 'rotateApiKey(partnerId: $p) { apiKey }']) {
      const partner = await server.createPartner();
      const s = socket(partner.apiKey);
      // The socket is open and its key works (the partner may not watch stats: FORBIDDEN, not a closed socket).
      expect(codes(socketErrors(await runOverSocket(s, { query: LIVE, variables: { id: '00000000-0000-0000-0000-000000000001' } })))).toEqual(['FORBIDDEN']);
      expect(s.closed()).toBeUndefined();
      await server.gql(ADMIN_KEY, `mutation($p: ID!) { ${mutation} }`, { p: partner.id });
      await until(() => s.closed() !== undefined, { message: 'the socket of the changed key to close', timeoutMs: 3_000 });
      expect(s.closed()).toBe(4403);
    }
  });

  test('a key revoked on another instance closes the sockets here within API_KEY_CACHE_TTL_MS', async () => {
    const other = await startTestServer({ databaseUrl: server.databaseUrl, config: { env: 'production', apiKeyCacheTtlMs: 1_000 } });
    try {
      const partner = await server.createPartner();
      const s = socket(partner.apiKey);
      await runOverSocket(s, { query: LIVE, variables: { id: '00000000-0000-0000-0000-000000000001' } });
      expect(s.closed()).toBeUndefined();
      await other.gql(ADMIN_KEY, 'mutation($p: ID!) { revokeApiKey(partnerId: $p) { partner { id } } }', { p: partner.id });
      await until(() => s.closed() !== undefined, { message: 'the socket to close after a revocation elsewhere', timeoutMs: 5_000 });
      expect(s.closed()).toBe(4403);
    } finally {
      await other.stop();
    }
  });

  test('each subscription gets fresh figures, not a cached read of the socket', async () => {
    const partner = await server.createPartner();
    const campaignId = await server.openCampaignWith(5);
    const s = socket(ADMIN_KEY);
    const first = await runOverSocket(s, { query: LIVE, variables: { id: campaignId } });
    expect(first.results[0]!.data).toEqual({ campaignStats: { total: 5, allocated: 0, available: 5 } });
    await server.gql(partner.apiKey, CLAIM, { input: { campaignId, holder: 'fresh' } });
    const second = await runOverSocket(s, { query: LIVE, variables: { id: campaignId } });
    expect(second.results[0]!.data).toEqual({ campaignStats: { total: 5, allocated: 1, available: 4 } });
  });
});

describe('the audit comes from what ran', () => {
  test('an admin mutation inside a fragment, an inline fragment or behind @include is audited', async () => {
    const campaignId = await server.createCampaign();
    await server.gql(ADMIN_KEY, `mutation { ...Open } fragment Open on Mutation { openCampaign(id: "${campaignId}") { campaign { id } } }`);
    await server.gql(ADMIN_KEY, `mutation { ... on Mutation { updateCampaign(id: "${campaignId}", input: { name: "Renamed" }) { campaign { id } } } }`);
    await server.gql(ADMIN_KEY, `mutation($yes: Boolean!) { closeCampaign(id: "${campaignId}") @include(if: $yes) { campaign { id } } }`, { yes: true });
    const ran = (await server.sql.query(`SELECT operation, outcome FROM audit_log WHERE arguments->>'id' = $1 ORDER BY id`, [campaignId])).rows;
    expect(ran).toEqual([
      { operation: 'openCampaign', outcome: 'OK' },
      { operation: 'updateCampaign', outcome: 'OK' },
      { operation: 'closeCampaign', outcome: 'OK' },
    ]);
  });

  test('a skipped admin mutation writes no audit row, whoever sent it', async () => {
    const partner = await server.createPartner();
    const campaignId = await server.openCampaignWith(1);
    await server.gql(partner.apiKey, `mutation { closeCampaign(id: "${campaignId}") @skip(if: true) { campaign { id } } }`);
    await server.gql(ADMIN_KEY, `mutation { closeCampaign(id: "${campaignId}") @skip(if: true) { campaign { id } } }`);
    const rows = (await server.sql.query(`SELECT count(*)::int AS n FROM audit_log WHERE operation = 'closeCampaign' AND (arguments->>'id' = $1 OR actor = $2)`, [campaignId, `partner:${partner.id}`])).rows;
    expect(rows[0].n).toBe(0);
    const { rows: status } = await server.sql.query('SELECT status FROM campaigns WHERE id = $1', [campaignId]);
    expect(status[0].status).toBe('OPEN');
  });

  test('a refused call is recorded without its payload: a 250 KiB name (near all a partner may send) stores a few bytes', async () => {
    const partner = await server.createPartner();
    const name = 'x'.repeat(250 * 1024);
    const answer = await server.gql(partner.apiKey, 'mutation($n: String!) { createPartner(input: { name: $n }) { apiKey } }', { n: name });
    expect(codes(answer.body.errors)).toEqual(['FORBIDDEN']);
    const [row] = (await server.sql.query(`SELECT arguments, outcome, pg_column_size(arguments) AS bytes FROM audit_log WHERE actor = $1`, [`partner:${partner.id}`])).rows;
    expect(row).toMatchObject({ arguments: {}, outcome: 'FORBIDDEN' });
    expect(row.bytes).toBeLessThan(100);
  });

  test("the admin's long arguments are stored summarised", async () => {
    const name = 'y'.repeat(300);
    const answer = await server.gql(ADMIN_KEY, 'mutation($n: String!) { createPartner(input: { name: $n }) { apiKey } }', { n: name });
    expect(codes(answer.body.errors)).toEqual(['BAD_USER_INPUT']);
    const rows = await auditRows('createPartner');
    expect(rows.at(-1)).toMatchObject({ outcome: 'BAD_USER_INPUT', arguments: { input: { name: { start: 'y'.repeat(64), length: 300 } } } });
  });

  test('arguments jsonb cannot store are audited as what is wrong with them, and long ones cut at whole characters', async () => {
    const emoji = '😀'.repeat(150);
    const created = await server.gql(ADMIN_KEY, 'mutation($n: String!) { createPartner(input: { name: $n }) { partner { id } } }', { n: `a${emoji}` });
    expect(created.body.errors).toBeUndefined();
    const nul = await server.gql(ADMIN_KEY, 'mutation($n: String!) { createPartner(input: { name: $n }) { apiKey } }', { n: 'bad\u0000name' });
    expect(codes(nul.body.errors)).toEqual(['BAD_USER_INPUT']);
    const rows = (await auditRows('createPartner')).slice(-2);
    expect(rows[0]).toMatchObject({ outcome: 'OK', arguments: { input: { name: { start: `a${'😀'.repeat(63)}`, length: 301 } } } });
    expect(rows[1]).toMatchObject({ outcome: 'BAD_USER_INPUT', arguments: { input: { name: { unstorable: 'NUL', length: 8 } } } });
  });

  test("the audit row's request id is the server's own; a well-formed client id is kept beside it", async () => {
    const campaignId = await server.createCampaign();
    const send = (requestId: string) =>
      fetch(server.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${ADMIN_KEY}`, 'x-request-id': requestId },
        body: JSON.stringify({ query: `mutation { updateCampaign(id: "${campaignId}", input: { name: "${requestId.length}" }) { campaign { id } } }` }),
      });
    const good = await send('client-trace-1');
    const bad = await send('bad id with spaces and {braces}');
    const rows = (await server.sql.query(`SELECT request_id, client_request_id FROM audit_log WHERE arguments->>'id' = $1 ORDER BY id`, [campaignId])).rows;
    expect(rows).toEqual([
      { request_id: good.headers.get('x-request-id'), client_request_id: 'client-trace-1' },
      { request_id: bad.headers.get('x-request-id'), client_request_id: null },
    ]);
    expect(rows[0].request_id).toMatch(/^[0-9a-f-]{36}$/);
  });
});

describe('bad input is BAD_USER_INPUT, never an internal error', () => {
  test.each([
    ['a malformed campaigns cursor', '{ campaigns(after: "MjAyNi0xMy00NSAyNTo2MTo2MS4wMDAwMDArMDB8eA") { totalCount } }'],
    ['a campaigns cursor with an impossible date', `{ campaigns(after: "${Buffer.from('campaign:2026-02-31 10:00:00.123456+00|00000000-0000-0000-0000-000000000001').toString('base64url')}") { totalCount } }`],
    ['an auditLog cursor beyond bigint', `{ auditLog(after: "${Buffer.from('audit:99999999999999999999').toString('base64url')}") { totalCount } }`],
  ])('%s', async (_name, query) => {
    const answer = await server.gql(ADMIN_KEY, query);
    expect(codes(answer.body.errors)).toEqual(['BAD_USER_INPUT']);
    expect(answer.body.errors![0]!.extensions!.field).toBe('after');
  });
});

test('every socket operation writes a log line, as every HTTP one does', async () => {
  const lines: Record<string, unknown>[] = [];
  const pino = (await import('pino')).default;
  const logged = await startTestServer({
    databaseUrl: (await createTestDatabase()).url,
    logger: pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) }),
  });
  try {
    const s = connectSocket(logged.url, ADMIN_KEY);
    await runOverSocket(s, { query: 'subscription Bad { nope }' });
    await runOverSocket(s, { query: LIVE, variables: { id: '00000000-0000-0000-0000-000000000001' }, operationName: 'Live' });
    await s.dispose();
    await until(() => lines.filter((l) => l.transport === 'ws').length >= 2, { message: 'two log lines for the socket' });
    const ws = lines.filter((l) => l.transport === 'ws');
    expect(ws[0]).toMatchObject({ msg: 'graphql', viewer: 'admin', errors: ['GRAPHQL_VALIDATION_FAILED'] });
    expect(ws.some((l) => l.operation === 'Live' && l.type === 'subscription')).toBe(true);
    expect(ws.every((l) => typeof l.requestId === 'string')).toBe(true);
  } finally {
    await logged.stop();
  }
});
