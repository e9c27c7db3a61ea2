// The bad-input catalogue: every mutation fed malformed, oversized, unknown or out-of-state input.
// Each case names the input, the code it must be answered with and where that code appears —
// claimTicket/releaseAllocation refuse in the payload's `error`, admin mutations and queries with a
// GraphQL error — and then checks, by SQL, that nothing in the database moved and that the server
// still serves a valid claim. No case may ever answer 500 or INTERNAL_SERVER_ERROR.
import { randomUUID } from 'node:crypto';
import { ADMIN_KEY, CLAIM, startTestServer, type ClaimPayload, type GraphQLResponse, type TestServer } from './helpers/testServer';

let server: TestServer;

/** Objects the cases point at, made once in beforeAll. */
interface Fixtures {
  partnerKey: string;
  /** OPEN, with plenty of tickets: every case ends with a probe claim here. */
  openId: string;
  draftId: string;
  closedId: string;
}
let fx: Fixtures;

beforeAll(async () => {
  server = await startTestServer();
  const partner = await server.createPartner('Catalogue partner');
  const openId = await server.openCampaignWith(200);
  const draftId = await server.createCampaign({ name: 'Draft' });
  await server.loadTickets(draftId, 3, 'D');
  const closedId = await server.openCampaignWith(3, { name: 'Closed' });
  const closed = await server.gql(ADMIN_KEY, CLOSE, { id: closedId });
  expect(closed.body.errors).toBeUndefined();
  fx = { partnerKey: partner.apiKey, openId, draftId, closedId };
});
afterAll(() => server.stop());

const CREATE_PARTNER = 'mutation($input: CreatePartnerInput!) { createPartner(input: $input) { partner { id } apiKey } }';
const CREATE_CAMPAIGN = 'mutation($input: CreateCampaignInput!) { createCampaign(input: $input) { campaign { id status } } }';
const LOAD = 'mutation($id: ID!, $codes: [String!]!) { loadTickets(campaignId: $id, codes: $codes) { loaded duplicates } }';
const GENERATE =
  'mutation($id: ID!, $count: Int!, $prefix: String) { generateTickets(campaignId: $id, count: $count, prefix: $prefix) { loaded duplicates } }';
const OPEN = 'mutation($id: ID!) { openCampaign(id: $id) { campaign { id status } } }';
const CLOSE = 'mutation($id: ID!) { closeCampaign(id: $id) { campaign { id status } } }';
const RELEASE = `mutation($id: ID!) {
  releaseAllocation(allocationId: $id) { allocation { id status } error { code message } }
}`;
const CAMPAIGNS = 'query($first: Int, $after: String) { campaigns(first: $first, after: $after) { totalCount edges { cursor } } }';
const CAMPAIGN_ALLOCATIONS = `query($id: ID!, $first: Int, $after: String) {
  campaign(id: $id) { id allocations(first: $first, after: $after) { totalCount edges { cursor } } }
}`;

const SQL_INJECTION = "' OR 1=1 --";
const long = (n: number, c = 'x') => c.repeat(n);
const ISO_2030 = '2030-06-01T12:00:00.000Z';
const ISO_2029 = '2029-06-01T12:00:00.000Z';

type Expected =
  /** An expected refusal of claimTicket/releaseAllocation: HTTP 200, payload `error { code }`, no GraphQL error. */
  | { in: 'payload'; mutation: 'claimTicket' | 'releaseAllocation'; code: string }
  /** A GraphQL error: `errors[0].extensions.code` (and `field` for BAD_USER_INPUT raised by our validation). */
  | { in: 'errors'; code: string; field?: string; status: number };

interface Case {
  name: string;
  /** Who sends it; payload cases default to the partner, error cases to the admin. */
  as?: 'admin' | 'partner';
  query: string;
  variables?: (f: Fixtures) => Record<string, unknown>;
  expected: Expected;
}

const claimRefused = (code: string): Expected => ({ in: 'payload', mutation: 'claimTicket', code });
const releaseRefused = (code: string): Expected => ({ in: 'payload', mutation: 'releaseAllocation', code });
const badInput = (field: string): Expected => ({ in: 'errors', code: 'BAD_USER_INPUT', field, status: 200 });
const adminError = (code: string): Expected => ({ in: 'errors', code, status: 200 });
/** Rejected by GraphQL itself (parse, validation or variable coercion) before any resolver runs. */
const requestError = (code: string): Expected => ({ in: 'errors', code, status: 400 });

const claim = (input: (f: Fixtures) => Record<string, unknown>) => (f: Fixtures) => ({
  input: { campaignId: f.openId, holder: 'bad-input', ...input(f) },
});

const cases: Case[] = [
  // claimTicket: refusals in the payload.
  { name: 'claimTicket with an empty holder', query: CLAIM, variables: claim(() => ({ holder: '' })), expected: claimRefused('INVALID_INPUT') },
  { name: 'claimTicket with a whitespace-only holder', query: CLAIM, variables: claim(() => ({ holder: ' \t  ' })), expected: claimRefused('INVALID_INPUT') },
  { name: 'claimTicket with a 257-character holder', query: CLAIM, variables: claim(() => ({ holder: long(257) })), expected: claimRefused('INVALID_INPUT') },
  { name: 'claimTicket with a holder holding a control character', query: CLAIM, variables: claim(() => ({ holder: 'user\u0007' })), expected: claimRefused('INVALID_INPUT') },
  {
    name: 'claimTicket with metadata over 16 KB',
    query: CLAIM,
    variables: claim(() => ({ metadata: { blob: long(16 * 1024) } })),
    expected: claimRefused('INVALID_INPUT'),
  },
  { name: 'claimTicket with metadata holding a NUL character', query: CLAIM, variables: claim(() => ({ metadata: { note: 'a\u0000b' } })), expected: claimRefused('INVALID_INPUT') },
  { name: 'claimTicket with a 256-character idempotency key', query: CLAIM, variables: claim(() => ({ idempotencyKey: long(256, 'k') })), expected: claimRefused('INVALID_INPUT') },
  { name: 'claimTicket with an idempotency key holding a newline', query: CLAIM, variables: claim(() => ({ idempotencyKey: 'key\nnext' })), expected: claimRefused('INVALID_INPUT') },
  { name: 'claimTicket with an empty idempotency key', query: CLAIM, variables: claim(() => ({ idempotencyKey: '' })), expected: claimRefused('INVALID_INPUT') },
  { name: 'claimTicket with an idempotency key with a leading space', query: CLAIM, variables: claim(() => ({ idempotencyKey: ' key-1' })), expected: claimRefused('INVALID_INPUT') },
  { name: 'claimTicket with an idempotency key with a trailing space', query: CLAIM, variables: claim(() => ({ idempotencyKey: 'key-1 ' })), expected: claimRefused('INVALID_INPUT') },
  { name: 'claimTicket with a non-ASCII idempotency key', query: CLAIM, variables: claim(() => ({ idempotencyKey: 'clé-1' })), expected: claimRefused('INVALID_INPUT') },
  { name: 'claimTicket with the campaign id "nope"', query: CLAIM, variables: claim(() => ({ campaignId: 'nope' })), expected: claimRefused('CAMPAIGN_NOT_FOUND') },
  { name: 'claimTicket with an SQL-injection campaign id', query: CLAIM, variables: claim(() => ({ campaignId: SQL_INJECTION })), expected: claimRefused('CAMPAIGN_NOT_FOUND') },
  { name: 'claimTicket with an empty campaign id', query: CLAIM, variables: claim(() => ({ campaignId: '' })), expected: claimRefused('CAMPAIGN_NOT_FOUND') },
  { name: 'claimTicket with an unknown campaign UUID', query: CLAIM, variables: claim(() => ({ campaignId: randomUUID() })), expected: claimRefused('CAMPAIGN_NOT_FOUND') },
  { name: 'claimTicket on a DRAFT campaign', query: CLAIM, variables: claim((f) => ({ campaignId: f.draftId })), expected: claimRefused('CAMPAIGN_NOT_OPEN') },
  { name: 'claimTicket on a CLOSED campaign', query: CLAIM, variables: claim((f) => ({ campaignId: f.closedId })), expected: claimRefused('CAMPAIGN_NOT_OPEN') },
  {
    name: 'claimTicket by the admin with an empty holder',
    as: 'admin',
    query: CLAIM,
    variables: claim(() => ({ holder: '' })),
    expected: claimRefused('INVALID_INPUT'),
  },

  // releaseAllocation: refusals in the payload.
  { name: 'releaseAllocation of the allocation id "nope"', query: RELEASE, variables: () => ({ id: 'nope' }), expected: releaseRefused('ALLOCATION_NOT_FOUND') },
  { name: 'releaseAllocation of an SQL-injection allocation id', query: RELEASE, variables: () => ({ id: SQL_INJECTION }), expected: releaseRefused('ALLOCATION_NOT_FOUND') },
  { name: 'releaseAllocation of an empty allocation id', query: RELEASE, variables: () => ({ id: '' }), expected: releaseRefused('ALLOCATION_NOT_FOUND') },
  { name: 'releaseAllocation of an unknown allocation UUID', query: RELEASE, variables: () => ({ id: randomUUID() }), expected: releaseRefused('ALLOCATION_NOT_FOUND') },
  {
    name: 'releaseAllocation by the admin of an unknown allocation UUID',
    as: 'admin',
    query: RELEASE,
    variables: () => ({ id: randomUUID() }),
    expected: releaseRefused('ALLOCATION_NOT_FOUND'),
  },
  {
    name: 'releaseAllocation of a campaign id instead of an allocation id',
    query: RELEASE,
    variables: (f) => ({ id: f.openId }),
    expected: releaseRefused('ALLOCATION_NOT_FOUND'),
  },

  // createPartner.
  { name: 'createPartner with an empty name', query: CREATE_PARTNER, variables: () => ({ input: { name: '' } }), expected: badInput('name') },
  { name: 'createPartner with a whitespace-only name', query: CREATE_PARTNER, variables: () => ({ input: { name: '   ' } }), expected: badInput('name') },
  { name: 'createPartner with a 201-character name', query: CREATE_PARTNER, variables: () => ({ input: { name: long(201) } }), expected: badInput('name') },
  { name: 'createPartner with a name holding a newline', query: CREATE_PARTNER, variables: () => ({ input: { name: 'Acme\nEvil' } }), expected: badInput('name') },

  // createCampaign.
  { name: 'createCampaign with an empty name', query: CREATE_CAMPAIGN, variables: () => ({ input: { name: '' } }), expected: badInput('name') },
  { name: 'createCampaign with a 201-character name', query: CREATE_CAMPAIGN, variables: () => ({ input: { name: long(201) } }), expected: badInput('name') },
  { name: 'createCampaign with perHolderLimit 0', query: CREATE_CAMPAIGN, variables: () => ({ input: { name: 'C', perHolderLimit: 0 } }), expected: badInput('perHolderLimit') },
  { name: 'createCampaign with perHolderLimit -3', query: CREATE_CAMPAIGN, variables: () => ({ input: { name: 'C', perHolderLimit: -3 } }), expected: badInput('perHolderLimit') },
  {
    name: 'createCampaign with perHolderLimit 1,000,001',
    query: CREATE_CAMPAIGN,
    variables: () => ({ input: { name: 'C', perHolderLimit: 1_000_001 } }),
    expected: badInput('perHolderLimit'),
  },
  {
    name: 'createCampaign with closesAt before opensAt',
    query: CREATE_CAMPAIGN,
    variables: () => ({ input: { name: 'C', opensAt: ISO_2030, closesAt: ISO_2029 } }),
    expected: badInput('closesAt'),
  },
  {
    name: 'createCampaign with closesAt equal to opensAt',
    query: CREATE_CAMPAIGN,
    variables: () => ({ input: { name: 'C', opensAt: ISO_2030, closesAt: ISO_2030 } }),
    expected: badInput('closesAt'),
  },
  {
    name: 'createCampaign with an opensAt that is not a date',
    query: CREATE_CAMPAIGN,
    variables: () => ({ input: { name: 'C', opensAt: 'next tuesday' } }),
    expected: requestError('BAD_USER_INPUT'),
  },

  // loadTickets.
  { name: 'loadTickets with 0 codes', query: LOAD, variables: (f) => ({ id: f.draftId, codes: [] }), expected: badInput('codes') },
  {
    name: 'loadTickets with 10,001 codes',
    query: LOAD,
    variables: (f) => ({ id: f.draftId, codes: Array.from({ length: 10_001 }, (_, i) => `BULK-${i}`) }),
    expected: badInput('codes'),
  },
  { name: 'loadTickets with an empty code', query: LOAD, variables: (f) => ({ id: f.draftId, codes: ['OK-1', ''] }), expected: badInput('codes') },
  { name: 'loadTickets with a 129-character code', query: LOAD, variables: (f) => ({ id: f.draftId, codes: ['OK-1', long(129, 'C')] }), expected: badInput('codes') },
  { name: 'loadTickets with a code holding a control character', query: LOAD, variables: (f) => ({ id: f.draftId, codes: ['OK-1', 'BAD\u0001'] }), expected: badInput('codes') },
  { name: 'loadTickets with a code holding a NUL character', query: LOAD, variables: (f) => ({ id: f.draftId, codes: ['BAD\u0000CODE'] }), expected: badInput('codes') },
  { name: 'loadTickets with a code with a leading space', query: LOAD, variables: (f) => ({ id: f.draftId, codes: [' PADDED'] }), expected: badInput('codes') },
  { name: 'loadTickets into the campaign id "nope"', query: LOAD, variables: () => ({ id: 'nope', codes: ['X-1'] }), expected: adminError('NOT_FOUND') },
  { name: 'loadTickets into an SQL-injection campaign id', query: LOAD, variables: () => ({ id: SQL_INJECTION, codes: ['X-1'] }), expected: adminError('NOT_FOUND') },
  { name: 'loadTickets into an unknown campaign UUID', query: LOAD, variables: () => ({ id: randomUUID(), codes: ['X-1'] }), expected: adminError('NOT_FOUND') },
  { name: 'loadTickets into a CLOSED campaign', query: LOAD, variables: (f) => ({ id: f.closedId, codes: ['LATE-1'] }), expected: adminError('CAMPAIGN_CLOSED') },

  // generateTickets.
  { name: 'generateTickets with count 0', query: GENERATE, variables: (f) => ({ id: f.draftId, count: 0 }), expected: badInput('count') },
  { name: 'generateTickets with count -1', query: GENERATE, variables: (f) => ({ id: f.draftId, count: -1 }), expected: badInput('count') },
  { name: 'generateTickets with count 1,000,001', query: GENERATE, variables: (f) => ({ id: f.draftId, count: 1_000_001 }), expected: badInput('count') },
  { name: 'generateTickets with a 65-character prefix', query: GENERATE, variables: (f) => ({ id: f.draftId, count: 1, prefix: long(65, 'P') }), expected: badInput('prefix') },
  { name: 'generateTickets with a prefix holding a tab', query: GENERATE, variables: (f) => ({ id: f.draftId, count: 1, prefix: 'P\t' }), expected: badInput('prefix') },
  { name: 'generateTickets into the campaign id "nope"', query: GENERATE, variables: () => ({ id: 'nope', count: 1 }), expected: adminError('NOT_FOUND') },
  { name: 'generateTickets into an unknown campaign UUID', query: GENERATE, variables: () => ({ id: randomUUID(), count: 1 }), expected: adminError('NOT_FOUND') },
  { name: 'generateTickets into a CLOSED campaign', query: GENERATE, variables: (f) => ({ id: f.closedId, count: 5 }), expected: adminError('CAMPAIGN_CLOSED') },

  // openCampaign / closeCampaign.
  { name: 'openCampaign of a CLOSED campaign', query: OPEN, variables: (f) => ({ id: f.closedId }), expected: adminError('INVALID_TRANSITION') },
  { name: 'openCampaign of the campaign id "nope"', query: OPEN, variables: () => ({ id: 'nope' }), expected: adminError('NOT_FOUND') },
  { name: 'openCampaign of an SQL-injection campaign id', query: OPEN, variables: () => ({ id: SQL_INJECTION }), expected: adminError('NOT_FOUND') },
  { name: 'openCampaign of an unknown campaign UUID', query: OPEN, variables: () => ({ id: randomUUID() }), expected: adminError('NOT_FOUND') },
  { name: 'closeCampaign of the campaign id "nope"', query: CLOSE, variables: () => ({ id: 'nope' }), expected: adminError('NOT_FOUND') },
  { name: 'closeCampaign of an SQL-injection campaign id', query: CLOSE, variables: () => ({ id: SQL_INJECTION }), expected: adminError('NOT_FOUND') },
  { name: 'closeCampaign of an unknown campaign UUID', query: CLOSE, variables: () => ({ id: randomUUID() }), expected: adminError('NOT_FOUND') },

  // GraphQL-level type errors: refused before any resolver runs.
  {
    name: 'generateTickets with the literal count "ten"',
    query: 'mutation($id: ID!) { generateTickets(campaignId: $id, count: "ten") { loaded } }',
    variables: (f) => ({ id: f.draftId }),
    expected: requestError('GRAPHQL_VALIDATION_FAILED'),
  },
  { name: 'generateTickets with the variable count "ten"', query: GENERATE, variables: (f) => ({ id: f.draftId, count: 'ten' }), expected: requestError('BAD_USER_INPUT') },
  {
    name: 'generateTickets with a count beyond a 32-bit Int',
    query: GENERATE,
    variables: (f) => ({ id: f.draftId, count: 2 ** 31 }),
    expected: requestError('BAD_USER_INPUT'),
  },
  { name: 'generateTickets with a fractional count', query: GENERATE, variables: (f) => ({ id: f.draftId, count: 1.5 }), expected: requestError('BAD_USER_INPUT') },
  { name: 'loadTickets with codes null', query: LOAD, variables: (f) => ({ id: f.draftId, codes: null }), expected: requestError('BAD_USER_INPUT') },
  { name: 'loadTickets with a null among the codes', query: LOAD, variables: (f) => ({ id: f.draftId, codes: ['A-1', null] }), expected: requestError('BAD_USER_INPUT') },
  {
    name: 'claimTicket without the required holder',
    query: 'mutation($id: ID!) { claimTicket(input: { campaignId: $id }) { error { code } } }',
    variables: (f) => ({ id: f.openId }),
    expected: requestError('GRAPHQL_VALIDATION_FAILED'),
  },
  {
    name: 'claimTicket with an input field the schema does not have',
    query: CLAIM,
    variables: claim(() => ({ quantity: 1000 })),
    expected: requestError('BAD_USER_INPUT'),
  },
  {
    name: 'createCampaign with perHolderLimit "many"',
    query: CREATE_CAMPAIGN,
    variables: () => ({ input: { name: 'C', perHolderLimit: 'many' } }),
    expected: requestError('BAD_USER_INPUT'),
  },
  {
    name: 'openCampaign with the id given as an object',
    query: OPEN,
    variables: () => ({ id: { $ne: null } }),
    expected: requestError('BAD_USER_INPUT'),
  },
  { name: 'a mutation the schema does not have', query: 'mutation { deleteEverything }', expected: requestError('GRAPHQL_VALIDATION_FAILED') },
  { name: 'a document that does not parse', query: 'mutation { claimTicket(input: {', expected: requestError('GRAPHQL_PARSE_FAILED') },

  // Queries with bad paging arguments.
  { name: 'campaigns with first 101', query: CAMPAIGNS, variables: () => ({ first: 101 }), expected: badInput('first') },
  { name: 'campaigns with first -1', query: CAMPAIGNS, variables: () => ({ first: -1 }), expected: badInput('first') },
  { name: 'campaigns after a cursor it never returned', query: CAMPAIGNS, variables: () => ({ after: 'not-a-cursor' }), expected: badInput('after') },
  {
    name: 'campaign.allocations after a cursor it never returned',
    query: CAMPAIGN_ALLOCATIONS,
    variables: (f) => ({ id: f.openId, after: 'bm90LWEtY3Vyc29y' }),
    expected: badInput('after'),
  },
  { name: 'campaign.allocations with first 101', query: CAMPAIGN_ALLOCATIONS, variables: (f) => ({ id: f.openId, first: 101 }), expected: badInput('first') },
];

/** Everything a bad request could have touched, by SQL: counts by status plus a digest of every row. */
async function snapshot(): Promise<Record<string, unknown>> {
  const { rows } = await server.sql.query(`
    SELECT
      (SELECT coalesce(json_object_agg(status, n), '{}') FROM (SELECT status, count(*)::int AS n FROM tickets GROUP BY status) s) AS tickets_by_status,
      (SELECT coalesce(json_object_agg(status, n), '{}') FROM (SELECT status, count(*)::int AS n FROM allocations GROUP BY status) s) AS allocations_by_status,
      (SELECT coalesce(json_object_agg(status, n), '{}') FROM (SELECT status, count(*)::int AS n FROM campaigns GROUP BY status) s) AS campaigns_by_status,
      (SELECT count(*)::int FROM partners) AS partners,
      (SELECT md5(coalesce(string_agg(concat_ws('|', campaign_id, id, code, status), ',' ORDER BY campaign_id, id), '')) FROM tickets) AS tickets_digest,
      (SELECT md5(coalesce(string_agg(concat_ws('|', id, ticket_id, status, released_at), ',' ORDER BY id), '')) FROM allocations) AS allocations_digest,
      (SELECT md5(coalesce(string_agg(concat_ws('|', id, name, status, opens_at, closes_at, per_holder_limit, opened_at, closed_at), ',' ORDER BY id), '')) FROM campaigns) AS campaigns_digest,
      (SELECT md5(coalesce(string_agg(concat_ws('|', id, name, key_hash, revoked_at), ',' ORDER BY id), '')) FROM partners) AS partners_digest`);
  return rows[0];
}

let probes = 0;
/** The server still serves: a valid claim on the open campaign allocates a ticket. */
async function expectServerStillServes(): Promise<void> {
  probes += 1;
  const res = await server.gql<ClaimPayload>(fx.partnerKey, CLAIM, { input: { campaignId: fx.openId, holder: `probe-${probes}` } });
  expect(res.status).toBe(200);
  expect(res.body.errors).toBeUndefined();
  expect(res.body.data!.claimTicket.error).toBeNull();
  expect(res.body.data!.claimTicket.allocation!.status).toBe('ACTIVE');
}

function expectAnswer(res: GraphQLResponse, expected: Expected): void {
  expect(res.status).not.toBe(500);
  expect(JSON.stringify(res.body)).not.toContain('INTERNAL_SERVER_ERROR');
  if (expected.in === 'payload') {
    expect(res.status).toBe(200);
    expect(res.body.errors).toBeUndefined();
    const payload = res.body.data![expected.mutation];
    expect(payload.allocation).toBeNull();
    expect(payload.error.code).toBe(expected.code);
    expect(typeof payload.error.message).toBe('string');
    return;
  }
  expect(res.status).toBe(expected.status);
  expect(res.body.errors?.length).toBeGreaterThan(0);
  const [error] = res.body.errors!;
  expect(error!.extensions?.code).toBe(expected.code);
  expect(error!.message).toEqual(expect.any(String));
  expect(error!.extensions?.stacktrace).toBeUndefined();
  if (expected.field !== undefined) expect(error!.extensions?.field).toBe(expected.field);
  // Nothing was answered: no data, or only nulls at the top level.
  expect(Object.values(res.body.data ?? {}).every((value) => value === null)).toBe(true);
}

test('the catalogue holds at least 30 cases and covers every mutation', () => {
  expect(cases.length).toBeGreaterThanOrEqual(30);
  for (const mutation of ['createPartner', 'createCampaign', 'loadTickets', 'generateTickets', 'openCampaign', 'closeCampaign', 'claimTicket', 'releaseAllocation']) {
    expect(cases.filter((c) => c.query.includes(`${mutation}(`)).length).toBeGreaterThanOrEqual(2);
  }
});

test.each(cases)('$name is refused as expected, changes nothing and leaves the server serving', async (c) => {
  const before = await snapshot();
  const key = (c.as ?? (c.expected.in === 'payload' ? 'partner' : 'admin')) === 'admin' ? ADMIN_KEY : fx.partnerKey;

  const res = await server.gql(key, c.query, c.variables?.(fx));

  expectAnswer(res, c.expected);
  expect(await snapshot()).toEqual(before);
  await expectServerStillServes();
});

// The limits themselves are allowed: the catalogue's cases fail by one, not by a wide margin.
describe('inputs exactly at the limits', () => {
  test('a claim with a 256-character holder, a 255-character idempotency key and 16 KB of metadata is accepted', async () => {
    // {"b":"..."} is 8 bytes around the string.
    const metadata = { b: long(16 * 1024 - 8) };
    expect(Buffer.byteLength(JSON.stringify(metadata))).toBe(16 * 1024);
    const res = await server.gql<ClaimPayload>(fx.partnerKey, CLAIM, {
      input: { campaignId: fx.openId, holder: long(256, 'h'), idempotencyKey: long(255, 'k'), metadata },
    });
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data!.claimTicket.error).toBeNull();
    expect(res.body.data!.claimTicket.allocation!.holder).toHaveLength(256);
  });

  test('a holder of 256 characters outside the BMP is accepted (characters are code points)', async () => {
    const holder = long(256, '🎫');
    const res = await server.gql<ClaimPayload>(fx.partnerKey, CLAIM, { input: { campaignId: fx.openId, holder } });
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data!.claimTicket.error).toBeNull();
    expect(res.body.data!.claimTicket.allocation!.holder).toBe(holder);
  });

  test('loadTickets accepts 10,000 codes and a 128-character code in one call', async () => {
    const campaignId = await server.createCampaign({ name: 'Limits' });
    const codes = [...Array.from({ length: 9_999 }, (_, i) => `L-${i}`), long(128, 'C')];
    const res = await server.gql(ADMIN_KEY, LOAD, { id: campaignId, codes });
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data!.loadTickets).toEqual({ loaded: 10_000, duplicates: 0 });
  });

  test('a 64-character prefix and a 200-character campaign name are accepted', async () => {
    const created = await server.gql(ADMIN_KEY, CREATE_CAMPAIGN, { input: { name: long(200, 'N'), perHolderLimit: 1_000_000 } });
    expect(created.body.errors).toBeUndefined();
    const campaignId = created.body.data!.createCampaign.campaign.id as string;
    const res = await server.gql(ADMIN_KEY, GENERATE, { id: campaignId, count: 2, prefix: long(64, 'P') });
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data!.generateTickets.loaded).toBe(2);
  });

  // Product bug: codes are documented as "1 to 128 characters" and the database CHECKs char_length (code
  // points), as holders and names are validated; codes are measured in UTF-16 units instead.
  test('a code of 128 characters outside the BMP is accepted (characters are code points)', async () => {
    const campaignId = await server.createCampaign({ name: 'Astral codes' });
    const res = await server.gql(ADMIN_KEY, LOAD, { id: campaignId, codes: [long(128, '🎫')] });
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data!.loadTickets).toEqual({ loaded: 1, duplicates: 0 });
  });
});

// Inputs the catalogue found answered with INTERNAL_SERVER_ERROR: product bugs, kept failing until fixed.
describe('bad input that must not reach the error mask', () => {
  /** The request body as text: a client-side JSON.stringify of deep metadata overflows Jest's stack. */
  async function postClaimWithRawMetadata(metadataJson: string, holder: string): Promise<GraphQLResponse<ClaimPayload>> {
    const body = `{"query":${JSON.stringify(CLAIM)},"variables":{"input":{"campaignId":"${fx.openId}","holder":"${holder}","metadata":${metadataJson}}}}`;
    const res = await fetch(server.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${fx.partnerKey}` },
      body,
    });
    return { status: res.status, headers: res.headers, body: (await res.json()) as GraphQLResponse<ClaimPayload>['body'] };
  }

  // validation.metadata() runs JSON.stringify on the value inside the resolver's deep call stack:
  // 5,000 nested arrays (10 KB, within the 16 KB limit) overflow it with a RangeError.
  test('claimTicket with 10 KB of metadata nested 5,000 deep is granted or refused with INVALID_INPUT, not an internal error', async () => {
    const depth = 5_000;
    const before = await snapshot();
    const res = await postClaimWithRawMetadata(`${'['.repeat(depth)}1${']'.repeat(depth)}`, 'deep-metadata');
    expect(res.status).toBe(200);
    expect(res.body.errors).toBeUndefined();
    const payload = res.body.data!.claimTicket;
    if (payload.error) {
      expect(payload.error.code).toBe('INVALID_INPUT');
      expect(await snapshot()).toEqual(before);
    } else {
      expect(payload.allocation!.status).toBe('ACTIVE');
    }
    await expectServerStillServes();
  });

  // A JavaScript Date accepts year 0 but PostgreSQL's timestamptz does not (22008): the create fails.
  test('createCampaign with opensAt in year 0000 is refused with BAD_USER_INPUT on opensAt (or accepted), not an internal error', async () => {
    const before = await snapshot();
    const res = await server.gql(ADMIN_KEY, CREATE_CAMPAIGN, { input: { name: 'Year zero', opensAt: '0000-01-01T00:00:00Z' } });
    expect(JSON.stringify(res.body)).not.toContain('INTERNAL_SERVER_ERROR');
    if (res.body.errors) {
      expect(res.body.errors[0]!.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'opensAt' });
      expect(await snapshot()).toEqual(before);
    } else {
      expect(res.body.data!.createCampaign.campaign.status).toBe('DRAFT');
    }
    await expectServerStillServes();
  });
});
