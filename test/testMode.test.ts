// Test mode (issue 31), first part: a partner's test key, test campaigns, and the wall between the
// two modes. A live key must not tell a test campaign (or its allocation, entry) from one that does
// not exist, nor a test key a live one — the whole answer compared, over HTTP and graphql-ws — and
// neither may change anything on the other side.
import { getNamedType, isEnumType, isInputObjectType, isObjectType, isScalarType, type GraphQLField, type GraphQLOutputType } from 'graphql';
import { accessRules } from '../src/access';
import { isTestCampaignId, newTestCampaignId } from '../src/testMode';
import { NO_SUCH_ID, probeFor, schema } from './helpers/probes';
import { ADMIN_KEY, startTestServer, type TestServer } from './helpers/testServer';
import { connectSocket, runOverSocket, type SocketClient } from './helpers/ws';

let server: TestServer;
const CREATE_PARTNER = 'mutation($name: String!) { createPartner(input: { name: $name }) { partner { id testKey { prefix createdAt lastUsedAt revokedAt } } apiKey testApiKey } }';

type Mode = 'live' | 'test';
type Target = 'campaign' | 'allocation' | 'waitlistEntry' | 'ballotEntry';
interface Keys {
  id: string;
  live: string;
  test: string;
}
let partner: Keys;
/** One object of each kind per mode, all the partner's own. */
const objects: Record<Mode, Record<Target, string>> = {
  live: { campaign: '', allocation: '', waitlistEntry: '', ballotEntry: '' },
  test: { campaign: '', allocation: '', waitlistEntry: '', ballotEntry: '' },
};
/** A test campaign's id that does not exist (version 8, as a test key's missing campaign would be). */
const NO_SUCH_TEST_ID = newTestCampaignId(Date.parse('2020-01-01T00:00:00Z'));
const sockets: SocketClient[] = [];

async function createPartner(name: string): Promise<Keys> {
  const r = await server.gql(ADMIN_KEY, CREATE_PARTNER, { name });
  expect(r.body.errors).toBeUndefined();
  const { partner: p, apiKey, testApiKey } = r.body.data!.createPartner;
  return { id: p.id, live: apiKey, test: testApiKey };
}

/** A campaign of the mode, OPEN, with `count` tickets. */
const campaignOf = (mode: Mode, count: number, input: Record<string, unknown> = {}) => server.openCampaignWith(count, { ...input, test: mode === 'test' });

beforeAll(async () => {
  server = await startTestServer();
  partner = await createPartner('Rehearsing, Inc.');
  for (const mode of ['live', 'test'] as const) {
    const key = partner[mode];
    const o = objects[mode];
    o.campaign = await campaignOf(mode, 5);
    const held = await server.gql(key, 'mutation($c: ID!) { holdTicket(input: { campaignId: $c, holder: "h", ttlSeconds: 600 }) { allocation { id test } error { code } } }', { c: o.campaign });
    expect(held.body.data!.holdTicket).toEqual({ allocation: { id: expect.any(String), test: mode === 'test' }, error: null });
    o.allocation = held.body.data!.holdTicket.allocation.id;
    const waitlisted = await campaignOf(mode, 0, { releasePolicy: 'WAITLIST_FIRST' });
    const joined = await server.gql(key, 'mutation($c: ID!) { joinWaitlist(input: { campaignId: $c, holder: "w" }) { entry { id test } error { code } } }', { c: waitlisted });
    expect(joined.body.data!.joinWaitlist).toEqual({ entry: { id: expect.any(String), test: mode === 'test' }, error: null });
    o.waitlistEntry = joined.body.data!.joinWaitlist.entry.id;
    const ballot = await campaignOf(mode, 5, { mode: 'BALLOT' });
    const entered = await server.gql(key, 'mutation($c: ID!) { enterBallot(input: { campaignId: $c, holder: "b" }) { entry { id test } error { code } } }', { c: ballot });
    expect(entered.body.data!.enterBallot).toEqual({ entry: { id: expect.any(String), test: mode === 'test' }, error: null });
    o.ballotEntry = entered.body.data!.enterBallot.entry.id;
  }
});
afterAll(async () => {
  await Promise.all(sockets.map((s) => s.dispose()));
  await server.stop();
});

describe('test keys and test campaigns', () => {
  test('createPartner issues a live key and a test key, each shown once; the partner shows the test key by its prefix only', async () => {
    const r = await server.gql(ADMIN_KEY, CREATE_PARTNER, { name: 'Keys' });
    const { partner: p, apiKey, testApiKey } = r.body.data!.createPartner;
    expect(apiKey).toMatch(/^tsp_[0-9a-f]{12}_[A-Za-z0-9_-]{43}$/);
    expect(testApiKey).toMatch(/^tsp_test_[0-9a-f]{12}_[A-Za-z0-9_-]{43}$/);
    expect(p.testKey).toEqual({ prefix: testApiKey.slice(0, 'tsp_test_'.length + 12), createdAt: expect.any(String), lastUsedAt: null, revokedAt: null });
    // Only hashes are stored.
    const { rows } = await server.sql.query('SELECT key_hash FROM partner_test_keys WHERE partner_id = $1', [p.id]);
    expect(rows[0].key_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(JSON.stringify(rows)).not.toContain(testApiKey.slice(-43));
  });

  test('createCampaign(input: { test: true }) makes a test campaign: test in the API and in its row, and a version 8 id', async () => {
    const id = await server.createCampaign({ test: true });
    const live = await server.createCampaign({});
    expect(isTestCampaignId(id)).toBe(true);
    expect(id[14]).toBe('8');
    expect(isTestCampaignId(live)).toBe(false);
    const r = await server.gql(ADMIN_KEY, 'query($t: ID!, $l: ID!) { t: campaign(id: $t) { test } l: campaign(id: $l) { test } }', { t: id, l: live });
    expect(r.body.data).toEqual({ t: { test: true }, l: { test: false } });
    const { rows } = await server.sql.query('SELECT id::text, test FROM campaigns WHERE id = ANY($1::uuid[]) ORDER BY test', [[id, live]]);
    expect(rows).toEqual([{ id: live, test: false }, { id, test: true }]);
    // The row cannot say otherwise than its id.
    await expect(server.sql.query('UPDATE campaigns SET test = false WHERE id = $1', [id])).rejects.toThrow(/campaigns_test_id/);
    const given = await server.gql(ADMIN_KEY, 'mutation { createCampaign(input: { name: "x", test: false }) { campaign { test } } }');
    expect(given.body.data!.createCampaign.campaign.test).toBe(false);
  });

  test('a test key claims from a test campaign as a live key does from a live one', async () => {
    for (const mode of ['live', 'test'] as const) {
      const campaign = await campaignOf(mode, 3);
      const r = await server.gql(partner[mode], 'mutation($c: ID!) { claimTicket(input: { campaignId: $c, holder: "c" }) { allocation { test campaign { id test } } error { code } } }', { c: campaign });
      expect(r.body.data!.claimTicket).toEqual({ allocation: { test: mode === 'test', campaign: { id: campaign, test: mode === 'test' } }, error: null });
    }
  });

  test('using the test key changes no live row: its last use is written beside the partner, not on it', async () => {
    const p = await createPartner('Last use');
    const before = (await server.sql.query('SELECT to_jsonb(p) AS row FROM partners p WHERE id = $1', [p.id])).rows[0].row;
    expect((await server.gql(p.test, '{ campaigns { totalCount } }')).body.errors).toBeUndefined();
    const { rows } = await server.sql.query('SELECT last_used_at FROM partner_test_keys WHERE partner_id = $1', [p.id]);
    expect(rows[0].last_used_at).not.toBeNull();
    expect((await server.sql.query('SELECT to_jsonb(p) AS row FROM partners p WHERE id = $1', [p.id])).rows[0].row).toEqual(before);
  });

  test('rotateApiKey(test: true) and revokeApiKey(test: true) act on the test key only', async () => {
    const p = await createPartner('Rotating');
    const campaigns = '{ campaigns { totalCount } }';
    const rotated = await server.gql(ADMIN_KEY, 'mutation($p: ID!) { rotateApiKey(partnerId: $p, test: true) { apiKey testApiKey partner { testKey { prefix revokedAt } } } }', { p: p.id });
    const { apiKey, testApiKey, partner: after } = rotated.body.data!.rotateApiKey;
    expect(apiKey).toMatch(/^tsp_test_/);
    expect(testApiKey).toBe(apiKey);
    expect(after.testKey).toEqual({ prefix: apiKey.slice(0, 21), revokedAt: null });
    expect((await server.gql(p.test, campaigns)).body.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
    expect((await server.gql(apiKey, campaigns)).body.errors).toBeUndefined();
    expect((await server.gql(p.live, campaigns)).body.errors).toBeUndefined();

    const revoked = await server.gql(ADMIN_KEY, 'mutation($p: ID!) { revokeApiKey(partnerId: $p, test: true) { partner { revokedAt testKey { revokedAt } } } }', { p: p.id });
    expect(revoked.body.data!.revokeApiKey.partner).toEqual({ revokedAt: null, testKey: { revokedAt: expect.any(String) } });
    expect((await server.gql(apiKey, campaigns)).body.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
    expect((await server.gql(p.live, campaigns)).body.errors).toBeUndefined();

    // The live key's rotation leaves the test key as it is (revoked here), and says no test key.
    const live = await server.gql(ADMIN_KEY, 'mutation($p: ID!) { rotateApiKey(partnerId: $p) { apiKey testApiKey } }', { p: p.id });
    expect(live.body.data!.rotateApiKey).toEqual({ apiKey: expect.stringMatching(/^tsp_[0-9a-f]{12}_/), testApiKey: null });
    expect((await server.gql(apiKey, campaigns)).body.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
  });

  test('a test key in an operator key\'s form, or a live key with test_ grafted in, is UNAUTHENTICATED as any unknown key', async () => {
    const secret = partner.test.slice(-43);
    const prefix = partner.test.slice('tsp_test_'.length, 'tsp_test_'.length + 12);
    const unknown = (await server.gql(`tsp_000000000000_${secret}`, '{ campaigns { totalCount } }')).body;
    for (const key of [`tso_test_${prefix}_${secret}`, `tsp_test_${partner.live.slice(4)}`]) {
      expect((await server.gql(key, '{ campaigns { totalCount } }')).body).toEqual(unknown);
    }
  });
});

// ----- the wall between the modes ------------------------------------------------------------------

const partnerMutations = Object.keys(schema.getMutationType()!.getFields()).filter((f) => !accessRules(schema).some((r) => r.field === `Mutation.${f}`));
function targetOf(field: string): Target | null {
  const definition = schema.getMutationType()!.getFields()[field]!;
  const names = definition.args.flatMap((a) => {
    const named = getNamedType(a.type);
    return isInputObjectType(named) ? Object.keys(named.getFields()) : [a.name];
  });
  if (names.includes('campaignId')) return 'campaign';
  if (names.includes('allocationId')) return 'allocation';
  if (names.includes('entryId')) return /Ballot/.test(field) ? 'ballotEntry' : 'waitlistEntry';
  return null;
}

/** Every leaf of a type, two levels down (fields without required arguments), for a whole-answer comparison. */
function selectionOf(type: GraphQLOutputType, depth = 2): string {
  const named = getNamedType(type);
  if (isScalarType(named) || isEnumType(named)) return '';
  if (!isObjectType(named) || depth === 0) return '{ __typename }';
  const fields = Object.values(named.getFields()).filter((f: GraphQLField<unknown, unknown>) => f.args.every((a) => !String(a.type).endsWith('!')));
  return `{ __typename ${fields.map((f) => `${f.name} ${selectionOf(f.type, depth - 1)}`).join(' ')} }`;
}

const socketFor = (() => {
  const byKey = new Map<string, SocketClient>();
  return (key: string) => {
    let socket = byKey.get(key);
    if (!socket) {
      byKey.set(key, (socket = connectSocket(server.url, key)));
      sockets.push(socket);
    }
    return socket;
  };
})();

/** The whole answer to `field` on `id` with `key`, over `transport`, with the id itself replaced. */
async function answerTo(transport: 'http' | 'ws', key: string, field: string, id: string): Promise<string> {
  const definition = schema.getMutationType()!.getFields()[field]!;
  const target = targetOf(field)!;
  const name = target === 'campaign' ? 'campaignId' : target === 'allocation' ? 'allocationId' : 'entryId';
  const probe = probeFor(`Mutation.${field}`, { [name]: id });
  const query = probe.query.replace(/ \{ __typename \} \}$/, ` ${selectionOf(definition.type)} }`);
  const answer =
    transport === 'http'
      ? (({ status, body }) => ({ status, body }))(await server.gql(key, query, probe.variables))
      : await runOverSocket(socketFor(key), { query, variables: probe.variables });
  return JSON.stringify(answer).split(id).join('<id>');
}

/** What the partner's objects look like in the database: counts and every allocation's status. */
const rowsNow = async () =>
  (
    await server.sql.query(
      `SELECT (SELECT count(*) FROM allocations) AS allocations, (SELECT count(*) FROM waitlist_entries) AS waitlist, (SELECT count(*) FROM ballot_entries) AS ballot,
              (SELECT string_agg(id::text || status::text || coalesce(expires_at::text, ''), ',' ORDER BY id) FROM allocations) AS statuses,
              (SELECT string_agg(id::text || status::text, ',' ORDER BY id) FROM waitlist_entries) AS entries,
              (SELECT string_agg(id::text || status::text, ',' ORDER BY id) FROM ballot_entries) AS ballots`,
    )
  ).rows[0];

const other = (mode: Mode): Mode => (mode === 'live' ? 'test' : 'live');

describe.each([
  ['http', 'live'],
  ['http', 'test'],
  ['ws', 'live'],
  ['ws', 'test'],
] as const)('over %s, a %s key', (transport, mode) => {
  test('every partner operation names a campaign, an allocation or an entry', () => {
    expect(partnerMutations.filter((f) => !['createWebhook', 'deleteWebhook', 'redeliverWebhook'].includes(f)).filter((f) => targetOf(f) === null)).toEqual([]);
  });

  test.each(partnerMutations.filter((f) => targetOf(f) !== null).map((f) => [f] as const))(
    '%s on the other mode\'s object answers exactly as on one that does not exist, and changes nothing',
    async (field) => {
      const key = partner[mode];
      const target = targetOf(field)!;
      const before = await rowsNow();
      const missing = await answerTo(transport, key, field, NO_SUCH_ID);
      // graphql-ws serves subscriptions only: a mutation sent there is refused whatever it names.
      expect(missing).toMatch(transport === 'http' ? /NOT_FOUND/ : /BAD_REQUEST/);
      expect(await answerTo(transport, key, field, objects[other(mode)][target])).toBe(missing);
      if (target === 'campaign') expect(await answerTo(transport, key, field, NO_SUCH_TEST_ID)).toBe(missing);
      expect(await rowsNow()).toEqual(before);
    },
  );

  test('campaignStats of the other mode\'s campaign answers exactly as for one that does not exist', async () => {
    const subscribe = async (id: string) => {
      const query = 'subscription($c: ID!) { campaignStats(id: $c) { total available } }';
      const answer = transport === 'ws' ? await runOverSocket(socketFor(partner[mode]), { query, variables: { c: id } }) : (({ status, body }) => ({ status, body }))(await server.gql(partner[mode], query, { c: id }));
      return JSON.stringify(answer).split(id).join('<id>');
    };
    const missing = await subscribe(NO_SUCH_ID);
    expect(await subscribe(objects[other(mode)].campaign)).toBe(missing);
    expect(await subscribe(NO_SUCH_TEST_ID)).toBe(missing);
  });

  test('reads of the other mode\'s objects are null, and campaigns lists its own mode\'s only', async () => {
    if (transport === 'ws') return; // queries are served over HTTP only (the subscription above is the socket's)
    const o = objects[other(mode)];
    const query =
      'query($c: ID!, $a: ID!, $w: ID!, $b: ID!) { campaign(id: $c) { id } allocation(id: $a) { id } waitlistEntry(id: $w) { id } ballotEntry(id: $b) { id } campaigns(first: 100) { totalCount edges { node { test } } } }';
    const variables = { c: o.campaign, a: o.allocation, w: o.waitlistEntry, b: o.ballotEntry };
    const answer = (await server.gql(partner[mode], query, variables)).body;
    expect(answer.errors).toBeUndefined();
    const data = answer.data as { campaigns: { totalCount: number; edges: { node: { test: boolean } }[] } } & Record<string, unknown>;
    expect({ ...data, campaigns: undefined }).toEqual({ campaign: null, allocation: null, waitlistEntry: null, ballotEntry: null, campaigns: undefined });
    expect(data.campaigns.totalCount).toBe(data.campaigns.edges.length);
    expect(data.campaigns.edges.every(({ node }) => node.test === (mode === 'test'))).toBe(true);
    const own = (await server.sql.query('SELECT count(*)::int AS n FROM campaigns WHERE test = $1', [mode === 'test'])).rows[0].n;
    expect(data.campaigns.totalCount).toBe(own);
  });

  test('its own mode\'s objects it reads as before', async () => {
    const o = objects[mode];
    const r = await server.gql(partner[mode], 'query($c: ID!, $a: ID!, $w: ID!, $b: ID!) { campaign(id: $c) { id test } allocation(id: $a) { id test } waitlistEntry(id: $w) { id test } ballotEntry(id: $b) { id test } }', {
      c: o.campaign,
      a: o.allocation,
      w: o.waitlistEntry,
      b: o.ballotEntry,
    });
    const test = mode === 'test';
    expect(r.body.data).toEqual({ campaign: { id: o.campaign, test }, allocation: { id: o.allocation, test }, waitlistEntry: { id: o.waitlistEntry, test }, ballotEntry: { id: o.ballotEntry, test } });
  });
});

describe('operators see both modes', () => {
  test('campaigns lists both, or one mode with test: true / false; campaign(id) reads either', async () => {
    const list = async (test: boolean | null) =>
      (await server.gql(ADMIN_KEY, 'query($t: Boolean) { campaigns(first: 100, test: $t) { totalCount edges { node { id test } } } }', { t: test })).body.data!.campaigns;
    const all = await list(null);
    const tests = await list(true);
    const lives = await list(false);
    expect(tests.totalCount + lives.totalCount).toBe(all.totalCount);
    expect(tests.edges.every((e: { node: { test: boolean } }) => e.node.test)).toBe(true);
    expect(lives.edges.every((e: { node: { test: boolean } }) => !e.node.test)).toBe(true);
    expect(tests.edges.map((e: { node: { id: string } }) => e.node.id)).toContain(objects.test.campaign);
    const read = await server.gql(ADMIN_KEY, 'query($t: ID!, $l: ID!) { t: campaign(id: $t) { test } l: campaign(id: $l) { test } }', { t: objects.test.campaign, l: objects.live.campaign });
    expect(read.body.data).toEqual({ t: { test: true }, l: { test: false } });
  });

  test('an operator subscribes to a test campaign\'s stats over graphql-ws as to a live one\'s', async () => {
    for (const id of [objects.test.campaign, objects.live.campaign]) {
      const outcome = await runOverSocket(socketFor(ADMIN_KEY), { query: 'subscription($c: ID!) { campaignStats(id: $c) { total held } }', variables: { c: id } });
      expect(outcome.error).toBeUndefined();
      expect(outcome.results[0]).toEqual({ data: { campaignStats: { total: 5, held: 1 } } });
    }
  });
});
