// Auth boundaries: who may call what. Every bad key gets the same 401; a partner is kept to its own
// allocations and away from the admin operations; a partner's key is stored only as its SHA-256.
import { createHash, randomBytes } from 'node:crypto';
import { allocationWithTicket } from './helpers/sql';
import { ADMIN_KEY, allocated, CLAIM, startTestServer, type ClaimPayload, type GraphQLResponse, type TestServer } from './helpers/testServer';

let server: TestServer;
let partnerA: { id: string; apiKey: string };
let partnerB: { id: string; apiKey: string };
let revoked: { id: string; apiKey: string };
let campaignId: string;

beforeAll(async () => {
  server = await startTestServer();
  partnerA = await server.createPartner('Partner A');
  partnerB = await server.createPartner('Partner B');
  revoked = await server.createPartner('Revoked partner');
  campaignId = await server.openCampaignWith(100);
});
afterAll(() => server.stop());

const RELEASE = `mutation($id: ID!) {
  releaseAllocation(allocationId: $id) { allocation { id status releasedAt partner { id } } error { code message } }
}`;
const ALLOCATION = 'query($id: ID!) { allocation(id: $id) { id holder partner { id } } }';
const CAMPAIGN_ALLOCATIONS = `query($id: ID!, $first: Int) {
  campaign(id: $id) { allocations(first: $first) { totalCount edges { node { id partner { id } } } } }
}`;

/** A POST with exactly these headers (the helper's gql always sends "Bearer <key>"). */
async function post(headers: Record<string, string>, query: string, variables?: Record<string, unknown>): Promise<GraphQLResponse> {
  const res = await fetch(server.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ query, variables }),
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as GraphQLResponse['body'] };
}

const allocationRow = (id: string) => allocationWithTicket(server.sql, id);

/** Counts and digests of every table: nothing a refused request could have touched may differ. */
async function snapshot(): Promise<Record<string, unknown>> {
  const { rows } = await server.sql.query(`
    SELECT
      (SELECT md5(coalesce(string_agg(concat_ws('|', campaign_id, id, code, status), ',' ORDER BY campaign_id, id), '')) FROM tickets) AS tickets,
      (SELECT md5(coalesce(string_agg(concat_ws('|', id, ticket_id, partner_id, status, released_at), ',' ORDER BY id), '')) FROM allocations) AS allocations,
      (SELECT md5(coalesce(string_agg(concat_ws('|', id, name, status, opened_at, closed_at), ',' ORDER BY id), '')) FROM campaigns) AS campaigns,
      (SELECT md5(coalesce(string_agg(concat_ws('|', id, name, key_hash, revoked_at), ',' ORDER BY id), '')) FROM partners) AS partners,
      (SELECT count(*)::int FROM tickets) AS ticket_count,
      (SELECT count(*)::int FROM allocations) AS allocation_count,
      (SELECT count(*)::int FROM campaigns) AS campaign_count,
      (SELECT count(*)::int FROM partners) AS partner_count`);
  return rows[0];
}

describe('authentication', () => {
  let referenceMessage: string;

  beforeAll(async () => {
    await server.sql.query('UPDATE partners SET revoked_at = now() WHERE id = $1', [revoked.id]);
    const res = await post({}, CLAIM, { input: { campaignId, holder: 'anonymous' } });
    referenceMessage = res.body.errors![0]!.message;
  });

  const existingPrefixWrongSecret = () => `${partnerA.apiKey.slice(0, 'tsp_'.length + 12 + 1)}${randomBytes(32).toString('base64url')}`;
  const headerCases: { name: string; headers: () => Record<string, string> }[] = [
    { name: 'no Authorization header', headers: () => ({}) },
    { name: 'an empty Authorization header', headers: () => ({ authorization: '' }) },
    { name: 'the header "Basic x"', headers: () => ({ authorization: 'Basic x' }) },
    { name: 'the header "Bearer" without a key', headers: () => ({ authorization: 'Bearer' }) },
    { name: 'the admin key without the Bearer scheme', headers: () => ({ authorization: ADMIN_KEY }) },
    { name: 'the admin key with one character more', headers: () => ({ authorization: `Bearer ${ADMIN_KEY}x` }) },
    { name: 'a partner key sent with the Basic scheme', headers: () => ({ authorization: `Basic ${partnerA.apiKey}` }) },
    { name: 'two keys in one header', headers: () => ({ authorization: `Bearer ${partnerA.apiKey} ${partnerB.apiKey}` }) },
    {
      name: 'a forged partner key in the right shape',
      headers: () => ({ authorization: `Bearer tsp_${randomBytes(6).toString('hex')}_${randomBytes(32).toString('base64url')}` }),
    },
    { name: 'a key whose prefix exists but whose secret is wrong', headers: () => ({ authorization: `Bearer ${existingPrefixWrongSecret()}` }) },
    { name: 'a partner key with its last character changed', headers: () => ({ authorization: `Bearer ${partnerA.apiKey.slice(0, -1)}${partnerA.apiKey.endsWith('A') ? 'B' : 'A'}` }) },
    { name: 'the key of a revoked partner', headers: () => ({ authorization: `Bearer ${revoked.apiKey}` }) },
  ];

  test.each(headerCases)('a claim with $name is UNAUTHENTICATED with HTTP 401, the common message, and allocates nothing', async (c) => {
    const before = await snapshot();
    const res = await post(c.headers(), CLAIM, { input: { campaignId, holder: 'intruder' } });
    expect(res.status).toBe(401);
    expect(res.body.data ?? null).toBeNull();
    expect(res.body.errors).toHaveLength(1);
    expect(res.body.errors![0]!.extensions?.code).toBe('UNAUTHENTICATED');
    expect(res.body.errors![0]!.message).toBe(referenceMessage);
    expect(await snapshot()).toEqual(before);
  });

  test('a query without a key is UNAUTHENTICATED with HTTP 401 too', async () => {
    const res = await post({}, '{ campaigns { totalCount } }');
    expect(res.status).toBe(401);
    expect(res.body.errors![0]!.extensions?.code).toBe('UNAUTHENTICATED');
    expect(res.body.errors![0]!.message).toBe(referenceMessage);
  });

  test('the common UNAUTHENTICATED message says how to authenticate and reveals nothing about the key', () => {
    expect(referenceMessage).toMatch(/Authorization: Bearer/);
    expect(referenceMessage).not.toMatch(/revoked|prefix|secret|hash|unknown/i);
  });

  test('a partner key works until the partner is revoked, then answers UNAUTHENTICATED', async () => {
    const partner = await server.createPartner('Soon revoked');
    allocated(await server.claim(partner.apiKey, { campaignId, holder: 'before-revocation' }));
    await server.sql.query('UPDATE partners SET revoked_at = now() WHERE id = $1', [partner.id]);
    const res = await server.gql<ClaimPayload>(partner.apiKey, CLAIM, { input: { campaignId, holder: 'after-revocation' } });
    expect(res.status).toBe(401);
    expect(res.body.errors![0]!.extensions?.code).toBe('UNAUTHENTICATED');
    const { rows } = await server.sql.query('SELECT count(*)::int AS n FROM allocations WHERE partner_id = $1', [partner.id]);
    expect(rows[0].n).toBe(1);
  });
});

describe('admin operations', () => {
  let draftId: string;
  let openId: string;
  beforeAll(async () => {
    draftId = await server.createCampaign({ name: 'Draft for partners' });
    openId = await server.openCampaignWith(2, { name: 'Open for partners' });
  });

  const adminCalls: { mutation: string; query: string; variables: () => Record<string, unknown> }[] = [
    { mutation: 'createPartner', query: 'mutation { createPartner(input: { name: "Sneaky" }) { apiKey } }', variables: () => ({}) },
    { mutation: 'createCampaign', query: 'mutation { createCampaign(input: { name: "Sneaky" }) { campaign { id } } }', variables: () => ({}) },
    {
      mutation: 'loadTickets',
      query: 'mutation($id: ID!) { loadTickets(campaignId: $id, codes: ["SNEAK-1"]) { loaded } }',
      variables: () => ({ id: draftId }),
    },
    {
      mutation: 'generateTickets',
      query: 'mutation($id: ID!) { generateTickets(campaignId: $id, count: 10) { loaded } }',
      variables: () => ({ id: draftId }),
    },
    { mutation: 'openCampaign', query: 'mutation($id: ID!) { openCampaign(id: $id) { campaign { status } } }', variables: () => ({ id: draftId }) },
    { mutation: 'closeCampaign', query: 'mutation($id: ID!) { closeCampaign(id: $id) { campaign { status } } }', variables: () => ({ id: openId }) },
  ];

  test.each(adminCalls)('a partner calling $mutation is FORBIDDEN and nothing changes', async (c) => {
    const before = await snapshot();
    const res = await server.gql(partnerA.apiKey, c.query, c.variables());
    expect(res.body.errors).toHaveLength(1);
    expect(res.body.errors![0]!.extensions?.code).toBe('FORBIDDEN');
    expect(res.body.data ?? null).toBeNull();
    expect(await snapshot()).toEqual(before);
  });

  test('the campaigns a partner tried to open and close keep their status', async () => {
    await server.gql(partnerA.apiKey, 'mutation($id: ID!) { openCampaign(id: $id) { campaign { status } } }', { id: draftId });
    await server.gql(partnerA.apiKey, 'mutation($id: ID!) { closeCampaign(id: $id) { campaign { status } } }', { id: openId });
    const { rows } = await server.sql.query('SELECT id, status FROM campaigns WHERE id = ANY($1::uuid[])', [[draftId, openId]]);
    expect(Object.fromEntries(rows.map((r) => [r.id, r.status]))).toEqual({ [draftId]: 'DRAFT', [openId]: 'OPEN' });
  });
});

describe("partners and each other's allocations", () => {
  test("a partner reading another partner's allocation is FORBIDDEN", async () => {
    const id = allocated(await server.claim(partnerB.apiKey, { campaignId, holder: 'b-private' })).id;
    const res = await server.gql(partnerA.apiKey, ALLOCATION, { id });
    expect(res.body.errors).toHaveLength(1);
    expect(res.body.errors![0]!.extensions?.code).toBe('FORBIDDEN');
    expect(res.body.data?.allocation ?? null).toBeNull();
    expect(JSON.stringify(res.body)).not.toContain('b-private');
  });

  test('a partner reads its own allocation and the admin reads anyone’s', async () => {
    const id = allocated(await server.claim(partnerB.apiKey, { campaignId, holder: 'b-own' })).id;
    for (const key of [partnerB.apiKey, ADMIN_KEY]) {
      const res = await server.gql(key, ALLOCATION, { id });
      expect(res.body.errors).toBeUndefined();
      expect(res.body.data!.allocation).toEqual({ id, holder: 'b-own', partner: { id: partnerB.id } });
    }
  });

  test('campaign.allocations lists only the calling partner’s allocations, with a matching totalCount, while the admin sees all', async () => {
    const campaign = await server.openCampaignWith(10, { name: 'Shared' });
    const mine = [allocated(await server.claim(partnerA.apiKey, { campaignId: campaign, holder: 'a1' })).id, allocated(await server.claim(partnerA.apiKey, { campaignId: campaign, holder: 'a2' })).id, allocated(await server.claim(partnerA.apiKey, { campaignId: campaign, holder: 'a3' })).id];
    const theirs = [allocated(await server.claim(partnerB.apiKey, { campaignId: campaign, holder: 'b1' })).id, allocated(await server.claim(partnerB.apiKey, { campaignId: campaign, holder: 'b2' })).id];

    const list = async (key: string) => {
      const res = await server.gql(key, CAMPAIGN_ALLOCATIONS, { id: campaign, first: 100 });
      expect(res.body.errors).toBeUndefined();
      const connection = res.body.data!.campaign.allocations;
      return { totalCount: connection.totalCount as number, nodes: connection.edges.map((e: any) => e.node) as { id: string; partner: { id: string } }[] };
    };
    const a = await list(partnerA.apiKey);
    expect(a.totalCount).toBe(3);
    expect(a.nodes.map((n) => n.id)).toEqual(mine);
    expect(a.nodes.every((n) => n.partner.id === partnerA.id)).toBe(true);

    const b = await list(partnerB.apiKey);
    expect(b.totalCount).toBe(2);
    expect(b.nodes.map((n) => n.id)).toEqual(theirs);

    const admin = await list(ADMIN_KEY);
    expect(admin.totalCount).toBe(5);
    expect(new Set(admin.nodes.map((n) => n.id))).toEqual(new Set([...mine, ...theirs]));
  });

  test("partner A releasing partner B's allocation gets ALLOCATION_NOT_FOUND and the allocation stays ACTIVE", async () => {
    const id = allocated(await server.claim(partnerB.apiKey, { campaignId, holder: 'b-keep' })).id;
    const res = await server.gql(partnerA.apiKey, RELEASE, { id });
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data!.releaseAllocation).toEqual({
      allocation: null,
      error: { code: 'ALLOCATION_NOT_FOUND', message: expect.any(String) },
    });
    expect(await allocationRow(id)).toEqual({ status: 'ACTIVE', ticket_status: 'ALLOCATED' });
  });

  test("partner A's refusal for B's allocation is the same as for an allocation that does not exist", async () => {
    const id = allocated(await server.claim(partnerB.apiKey, { campaignId, holder: 'b-probe' })).id;
    const foreign = await server.gql(partnerA.apiKey, RELEASE, { id });
    const unknown = await server.gql(partnerA.apiKey, RELEASE, { id: '00000000-0000-4000-8000-000000000000' });
    expect(foreign.body).toEqual(unknown.body);
  });

  test('a partner releases its own allocation', async () => {
    const id = allocated(await server.claim(partnerA.apiKey, { campaignId, holder: 'a-release' })).id;
    const res = await server.gql(partnerA.apiKey, RELEASE, { id });
    expect(res.body.data!.releaseAllocation.error).toBeNull();
    expect(res.body.data!.releaseAllocation.allocation).toMatchObject({ id, status: 'RELEASED' });
    expect(await allocationRow(id)).toEqual({ status: 'RELEASED', ticket_status: 'AVAILABLE' });
  });

  test("the admin releases any partner's allocation", async () => {
    const id = allocated(await server.claim(partnerB.apiKey, { campaignId, holder: 'b-admin-release' })).id;
    const res = await server.gql(ADMIN_KEY, RELEASE, { id });
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data!.releaseAllocation.error).toBeNull();
    expect(res.body.data!.releaseAllocation.allocation).toMatchObject({ id, status: 'RELEASED', partner: { id: partnerB.id } });
    expect(res.body.data!.releaseAllocation.allocation.releasedAt).toEqual(expect.any(String));
    expect(await allocationRow(id)).toEqual({ status: 'RELEASED', ticket_status: 'AVAILABLE' });
  });
});

describe('API key storage', () => {
  let partnerId: string;
  let apiKey: string;
  beforeAll(async () => {
    const res = await server.gql(ADMIN_KEY, 'mutation { createPartner(input: { name: "Stored" }) { partner { id } apiKey } }');
    partnerId = res.body.data!.createPartner.partner.id;
    apiKey = res.body.data!.createPartner.apiKey;
  });

  test('createPartner returns a key of the form tsp_<12 hex>_<43 base64url characters>', () => {
    expect(apiKey).toMatch(/^tsp_[0-9a-f]{12}_[A-Za-z0-9_-]{43}$/);
  });

  test('the API key is not stored in clear in any column of the partners table', async () => {
    const secret = apiKey.slice('tsp_'.length + 13);
    const { rows } = await server.sql.query('SELECT row_to_json(p)::text AS row FROM partners p');
    expect(rows.length).toBeGreaterThan(1);
    for (const { row } of rows) {
      expect(row).not.toContain(apiKey);
      expect(row).not.toContain(secret);
    }
    // The key is nowhere else in the database either.
    const anywhere = await server.sql.query(
      `SELECT (SELECT count(*) FROM campaigns c WHERE row_to_json(c)::text LIKE '%' || $1 || '%')
            + (SELECT count(*) FROM allocations a WHERE row_to_json(a)::text LIKE '%' || $1 || '%')
            + (SELECT count(*) FROM tickets t WHERE row_to_json(t)::text LIKE '%' || $1 || '%') AS n`,
      [secret],
    );
    expect(Number(anywhere.rows[0].n)).toBe(0);
  });

  test('only the SHA-256 hex of the API key is stored, beside its 12-hex prefix', async () => {
    const { rows } = await server.sql.query('SELECT key_hash, key_prefix FROM partners WHERE id = $1', [partnerId]);
    expect(rows[0].key_hash).toBe(createHash('sha256').update(apiKey).digest('hex'));
    expect(rows[0].key_prefix).toBe(apiKey.slice('tsp_'.length, 'tsp_'.length + 12));
  });

  test('the issued key authenticates as its partner', async () => {
    const res = await server.gql<ClaimPayload>(apiKey, CLAIM, { input: { campaignId, holder: 'stored-key' } });
    expect(res.body.data!.claimTicket.allocation!.partner.id).toBe(partnerId);
  });
});
