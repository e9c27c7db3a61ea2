// Text PostgreSQL cannot store, in every text input of every mutation: NUL (a TEXT column answers
// 22021, jsonb 22P05) and unpaired UTF-16 surrogates (jsonb: "Unicode low surrogate must follow a
// high surrogate"; a TEXT column would silently get U+FFFD). They arrive as JSON variables exactly as
// a client sends them — `"\u0000"`, `"\ud800"` — and each must be answered as bad input naming the
// field (INVALID_INPUT in a claim payload, BAD_USER_INPUT elsewhere), never INTERNAL_SERVER_ERROR,
// with nothing stored and no error logged. Malformed IDs are unknown IDs (docs/SECURITY.md).
import { Writable } from 'node:stream';
import pino from 'pino';
import { ADMIN_KEY, CLAIM, HOLD, startTestServer, type GraphQLResponse, type TestServer } from './helpers/testServer';

const BAD_TEXT: [string, string][] = [
  ['NUL', 'a\u0000b'],
  ['a lone high surrogate', 'a\ud800'],
  ['a lone low surrogate', '\udc00b'],
  ['a reversed surrogate pair', '\udc00\ud800'],
];

const logged: Record<string, any>[] = [];
const sink = new Writable({
  write(chunk, _encoding, done) {
    for (const line of String(chunk).split('\n').filter(Boolean)) logged.push(JSON.parse(line));
    done();
  },
});
/**
 * Error lines, but the audit log's: an admin mutation's arguments holding such text cannot be written
 * to audit_log's jsonb either — src/audit.ts's to handle (it logs the failed write and goes on).
 */
const errorLines = () => logged.filter((l) => l.level >= 50 && !/audit/i.test(String(l.msg)));

let server: TestServer;
let partner: { id: string; apiKey: string };
let openId: string;
let draftId: string;
beforeAll(async () => {
  server = await startTestServer({ logger: pino({ level: 'warn' }, sink) });
  partner = await server.createPartner('Bad text partner');
  openId = await server.openCampaignWith(20);
  draftId = await server.createCampaign({ name: 'Bad text draft' });
});
afterAll(() => server?.stop());

type Key = 'admin' | 'partner';
interface Case {
  /** `mutation.argument` */
  name: string;
  key: Key;
  query: string;
  variables(bad: string): Record<string, unknown>;
  /** What the answer must be: a claim payload's error code, or a GraphQL error's code (and field). */
  expect: { payload: string } | { code: string; field?: string };
}

const CLAIM_MANY = 'mutation($input: ClaimTicketsInput!) { claimTickets(input: $input) { allocations { id } error { code message } } }';
const CLAIM_LIKE: [string, string, Record<string, unknown>][] = [
  ['claimTicket', CLAIM, {}],
  ['holdTicket', HOLD, { ttlSeconds: 60 }],
  ['claimTickets', CLAIM_MANY, { quantity: 2 }],
];

const cases: Case[] = [
  ...CLAIM_LIKE.flatMap(([mutation, query, extra]): Case[] => {
    const input = (fields: Record<string, unknown>) => ({ input: { campaignId: openId, holder: 'h', ...extra, ...fields } });
    const invalid = { payload: 'INVALID_INPUT' };
    return [
      { name: `${mutation}.holder`, key: 'partner', query, variables: (bad) => input({ holder: bad }), expect: invalid },
      { name: `${mutation}.idempotencyKey`, key: 'partner', query, variables: (bad) => input({ idempotencyKey: bad }), expect: invalid },
      { name: `${mutation}.metadata (a string value)`, key: 'partner', query, variables: (bad) => input({ metadata: { x: bad } }), expect: invalid },
      { name: `${mutation}.metadata (a key)`, key: 'partner', query, variables: (bad) => input({ metadata: { [bad]: 1 } }), expect: invalid },
      { name: `${mutation}.metadata (deep in an array)`, key: 'partner', query, variables: (bad) => input({ metadata: { a: [1, { b: ['ok', bad] }] } }), expect: invalid },
      { name: `${mutation}.metadata (a bare string)`, key: 'partner', query, variables: (bad) => input({ metadata: bad }), expect: invalid },
      { name: `${mutation}.holder (as admin)`, key: 'admin', query, variables: (bad) => input({ holder: bad }), expect: invalid },
      { name: `${mutation}.campaignId`, key: 'partner', query, variables: (bad) => input({ campaignId: bad }), expect: { payload: 'CAMPAIGN_NOT_FOUND' } },
    ];
  }),
  {
    name: 'createPartner.input.name',
    key: 'admin',
    query: 'mutation($name: String!) { createPartner(input: { name: $name }) { partner { id } } }',
    variables: (bad) => ({ name: bad }),
    expect: { code: 'BAD_USER_INPUT', field: 'name' },
  },
  {
    name: 'createCampaign.input.name',
    key: 'admin',
    query: 'mutation($name: String!) { createCampaign(input: { name: $name }) { campaign { id } } }',
    variables: (bad) => ({ name: bad }),
    expect: { code: 'BAD_USER_INPUT', field: 'name' },
  },
  {
    name: 'updateCampaign.input.name',
    key: 'admin',
    query: 'mutation($id: ID!, $name: String) { updateCampaign(id: $id, input: { name: $name }) { campaign { id } } }',
    variables: (bad) => ({ id: draftId, name: bad }),
    expect: { code: 'BAD_USER_INPUT', field: 'name' },
  },
  {
    name: 'loadTickets.codes',
    key: 'admin',
    query: 'mutation($id: ID!, $codes: [String!]!) { loadTickets(campaignId: $id, codes: $codes) { loaded } }',
    variables: (bad) => ({ id: draftId, codes: ['GOOD-1', bad, 'GOOD-2'] }),
    expect: { code: 'BAD_USER_INPUT', field: 'codes' },
  },
  {
    name: 'generateTickets.prefix',
    key: 'admin',
    query: 'mutation($id: ID!, $prefix: String) { generateTickets(campaignId: $id, count: 3, prefix: $prefix) { loaded } }',
    variables: (bad) => ({ id: draftId, prefix: bad }),
    expect: { code: 'BAD_USER_INPUT', field: 'prefix' },
  },
  // IDs: a malformed id is an unknown id.
  ...(
    [
      ['updateCampaign.id', 'mutation($v: ID!) { updateCampaign(id: $v, input: { name: "x" }) { campaign { id } } }', 'NOT_FOUND'],
      ['loadTickets.campaignId', 'mutation($v: ID!) { loadTickets(campaignId: $v, codes: ["A"]) { loaded } }', 'NOT_FOUND'],
      ['generateTickets.campaignId', 'mutation($v: ID!) { generateTickets(campaignId: $v, count: 1) { loaded } }', 'NOT_FOUND'],
      ['openCampaign.id', 'mutation($v: ID!) { openCampaign(id: $v) { campaign { id } } }', 'NOT_FOUND'],
      ['closeCampaign.id', 'mutation($v: ID!) { closeCampaign(id: $v) { campaign { id } } }', 'NOT_FOUND'],
      ['setPartnerQuota.campaignId', 'mutation($v: ID!, $p: ID!) { setPartnerQuota(campaignId: $v, partnerId: $p, quota: 1) { campaign { id } } }', 'NOT_FOUND'],
      ['setPartnerQuota.partnerId', 'mutation($v: ID!, $c: ID!) { setPartnerQuota(campaignId: $c, partnerId: $v, quota: 1) { campaign { id } } }', 'NOT_FOUND'],
      ['revokeApiKey.partnerId', 'mutation($v: ID!) { revokeApiKey(partnerId: $v) { partner { id } } }', 'NOT_FOUND'],
      ['rotateApiKey.partnerId', 'mutation($v: ID!) { rotateApiKey(partnerId: $v) { apiKey } }', 'NOT_FOUND'],
      ['setPartnerRateLimit.partnerId', 'mutation($v: ID!) { setPartnerRateLimit(partnerId: $v, pointsPerSecond: 5) { partner { id } } }', 'NOT_FOUND'],
    ] as const
  ).map(
    ([name, query, code]): Case => ({
      name,
      key: 'admin',
      query,
      variables: (bad) => ({ v: bad, p: partner.id, c: draftId }),
      expect: { code },
    }),
  ),
  {
    name: 'releaseAllocation.allocationId',
    key: 'partner',
    query: 'mutation($v: ID!) { releaseAllocation(allocationId: $v) { allocation { id } error { code message } } }',
    variables: (bad) => ({ v: bad }),
    expect: { payload: 'ALLOCATION_NOT_FOUND' },
  },
  {
    name: 'confirmHold.allocationId',
    key: 'partner',
    query: 'mutation($v: ID!) { confirmHold(allocationId: $v) { allocation { id } error { code message } } }',
    variables: (bad) => ({ v: bad }),
    expect: { payload: 'ALLOCATION_NOT_FOUND' },
  },
];

const rootOf = (query: string) => /\{\s*(\w+)\(/.exec(query)![1]!;

const table = cases.flatMap((c) => BAD_TEXT.map(([label, bad]) => [c.name, label, c, bad] as const));

describe.each(table)('%s with %s', (_name, _label, c, bad) => {
  test('is answered as bad input, never INTERNAL_SERVER_ERROR, and nothing is logged as an error', async () => {
    const errorsBefore = errorLines().length;
    const r: GraphQLResponse = await server.gql(c.key === 'admin' ? ADMIN_KEY : partner.apiKey, c.query, c.variables(bad));
    const codes = (r.body.errors ?? []).map((e) => e.extensions?.code);
    expect(codes).not.toContain('INTERNAL_SERVER_ERROR');
    if ('payload' in c.expect) {
      expect(r.status).toBe(200);
      expect(r.body.errors).toBeUndefined();
      const payload = r.body.data![rootOf(c.query)];
      expect(payload.error.code).toBe(c.expect.payload);
      expect(payload.allocation ?? null).toBeNull();
      expect(payload.allocations ?? []).toEqual([]);
      if (c.expect.payload === 'INVALID_INPUT') expect(payload.error.message).toMatch(/NUL|control characters|surrogate|printable ASCII/);
    } else {
      expect(r.body.errors).toHaveLength(1);
      expect(r.body.errors![0]!.extensions).toMatchObject({ code: c.expect.code, ...(c.expect.field ? { field: c.expect.field } : {}) });
      expect(r.body.data?.[rootOf(c.query)] ?? null).toBeNull();
    }
    expect(errorLines().slice(errorsBefore)).toEqual([]);
  });
});

describe('the metadata validator', () => {
  const claim = (metadata: unknown) => server.claim(partner.apiKey, { campaignId: openId, holder: 'meta', metadata });

  test('names the problem: NUL, or an unpaired surrogate, in a value or a key', async () => {
    expect((await claim({ x: '\u0000' })).error?.message).toMatch(/metadata .*NUL/);
    expect((await claim({ x: '\ud800' })).error?.message).toMatch(/metadata .*unpaired .*surrogate/);
    expect((await claim({ '\u0000': 1 })).error?.message).toMatch(/metadata .*NUL/);
    expect((await claim({ '\udfff': 1 })).error?.message).toMatch(/metadata .*unpaired .*surrogate/);
  });

  test('accepts what PostgreSQL stores: surrogate pairs (emoji), and the six characters \\u0000 as text', async () => {
    const metadata = { emoji: '\ud83c\udf9f', '\ud83d\ude00': ['\ud83d\ude00'], escaped: '\\u0000', backslash: '\\' };
    const r = await claim(metadata);
    expect(r.error).toBeNull();
    const { rows } = await server.sql.query('SELECT metadata FROM allocations WHERE id = $1', [r.allocation!.id]);
    expect(rows[0].metadata).toEqual(metadata);
  });
});

test('a valid surrogate pair is accepted in every text field', async () => {
  const emoji = '\ud83c\udf9f';
  expect((await server.claim(partner.apiKey, { campaignId: openId, holder: `h${emoji}` })).error).toBeNull();
  const p = await server.gql(ADMIN_KEY, 'mutation($n: String!) { createPartner(input: { name: $n }) { partner { name } } }', { n: `P${emoji}` });
  expect(p.body.data!.createPartner.partner.name).toBe(`P${emoji}`);
  const campaign = await server.createCampaign({ name: `C${emoji}` });
  const l = await server.gql(ADMIN_KEY, 'mutation($id: ID!, $c: [String!]!) { loadTickets(campaignId: $id, codes: $c) { loaded } }', { id: campaign, c: [`T${emoji}`] });
  expect(l.body.data!.loadTickets.loaded).toBe(1);
  const g = await server.gql(ADMIN_KEY, 'mutation($id: ID!, $p: String) { generateTickets(campaignId: $id, count: 2, prefix: $p) { loaded } }', { id: campaign, p: emoji });
  expect(g.body.data!.generateTickets.loaded).toBe(2);
});

test('NUL written inline in the document (a GraphQL string escape) is refused the same way', async () => {
  const r = await server.gql(partner.apiKey, `mutation { claimTicket(input: { campaignId: "${openId}", holder: "a\\u0000b", metadata: { x: "\\u0000" } }) { allocation { id } error { code } } }`);
  expect(r.body.data!.claimTicket.error.code).toBe('INVALID_INPUT');
  const n = await server.gql(ADMIN_KEY, 'mutation { createPartner(input: { name: "a\\u0000b" }) { partner { id } } }');
  expect(n.body.errors![0]!.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'name' });
});

test('after every refusal, nothing was stored: no allocation, no partner, campaign or ticket with bad text', async () => {
  const q = async (sql: string) => (await server.sql.query(sql)).rows[0].n as number;
  // Only the emoji claims of the tests above allocated.
  expect(await q(`SELECT count(*)::int AS n FROM allocations WHERE holder NOT IN ('meta', 'h\u{1F39F}')`)).toBe(0);
  expect(await q(`SELECT count(*)::int AS n FROM partners WHERE name ~ '[\\x01-\\x08\\uFFFD]' OR name LIKE 'a%b'`)).toBe(0);
  expect(await q(`SELECT count(*)::int AS n FROM campaigns WHERE name ~ '\\uFFFD'`)).toBe(0);
  expect(await q(`SELECT count(*)::int AS n FROM tickets WHERE code ~ '\\uFFFD' OR code LIKE 'GOOD-%'`)).toBe(0);
});
