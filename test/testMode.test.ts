// @dialects postgresql citus
// Test mode (issue 31), first part: a partner's test key, test campaigns, and the wall between the
// two modes. A live key must not tell a test campaign (or its allocation, entry) from one that does
// not exist, nor a test key a live one — the whole answer compared, over HTTP and graphql-ws — and
// neither may change anything on the other side.
import { accessRules } from '../src/access';
import { isTestCampaignId, newTestCampaignId } from '../src/testMode';
import { NO_SUCH_ID, probeFor, schema, selectionOf, targetOf, type Target } from './helpers/probes';
import { ADMIN_KEY, allocated, startTestServer, type TestServer } from './helpers/testServer';
import { liveSnapshot as liveRows, REFUSAL_FLUSH_MS } from './helpers/liveRows';
import { startReceiver, verifiedWith } from './helpers/receiver';
import { until } from './helpers/time';
import { connectSocket, runOverSocket, type SocketClient } from './helpers/ws';

let server: TestServer;
const CREATE_PARTNER = 'mutation($name: String!) { createPartner(input: { name: $name }) { partner { id testKey { prefix createdAt lastUsedAt revokedAt } } apiKey testApiKey } }';

type Mode = 'live' | 'test';
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
  // No background sweeper: it announces live campaigns' stock (a sold-out one here has no tickets)
  // whenever it runs, a live event the live-row digests would see arrive mid-comparison.
  // advanceTestClock runs its sweep itself.
  server = await startTestServer({ config: { refusalFlushMs: REFUSAL_FLUSH_MS, holdSweepIntervalMs: 0 } });
  partner = await createPartner('Rehearsing, Inc.');
  for (const mode of ['live', 'test'] as const) {
    const key = partner[mode];
    const o = objects[mode];
    o.campaign = await campaignOf(mode, 5);
    const held = await server.hold(key, { campaignId: o.campaign });
    expect(held).toMatchObject({ allocation: { test: mode === 'test' }, error: null });
    o.allocation = allocated(held).id;
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
      const r = await server.claim(partner[mode], { campaignId: campaign, holder: 'c' });
      expect(r).toMatchObject({ allocation: { test: mode === 'test', campaign: { id: campaign, test: mode === 'test' } }, error: null });
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

// ----- webhooks --------------------------------------------------------------------------------------

describe('webhooks in test mode', () => {
  const CREATE = 'mutation($input: CreateWebhookInput!) { createWebhook(input: $input) { endpoint { id test partner { id } } secret } }';

  test('test endpoints get test campaigns\' events ("livemode": false), live endpoints live ones\' ("livemode": true), each signed', async () => {
    const recorder = await startReceiver();
    try {
      const p = await createPartner('Hooked');
      const make = async (key: string, path: string, input: Record<string, unknown> = {}) => {
        const r = await server.gql(key, CREATE, { input: { url: `${recorder.url}/${path}`, events: ['ALLOCATION_CREATED'], ...input } });
        expect(r.body.errors).toBeUndefined();
        return r.body.data!.createWebhook as { endpoint: { id: string; test: boolean }; secret: string };
      };
      const endpoints = {
        partnerLive: await make(p.live, 'partner-live'),
        partnerTest: await make(p.test, 'partner-test'),
        operatorLive: await make(ADMIN_KEY, 'operator-live'),
        operatorTest: await make(ADMIN_KEY, 'operator-test', { test: true }),
      };
      expect(Object.values(endpoints).map((e) => e.endpoint.test)).toEqual([false, true, false, true]);
      const claims: Record<Mode, string> = { live: '', test: '' };
      for (const mode of ['live', 'test'] as const) {
        const campaign = await campaignOf(mode, 2);
        claims[mode] = allocated(await server.claim(p[mode], { campaignId: campaign, holder: 'hook' })).id;
      }
      await until(() => recorder.received.length >= 4, { message: 'four deliveries' });
      const byPath = new Map<string, { livemode: boolean; allocation: string; signed: boolean }[]>();
      for (const r of recorder.received) {
        const body = JSON.parse(r.raw);
        const secret = endpoints[({ '/partner-live': 'partnerLive', '/partner-test': 'partnerTest', '/operator-live': 'operatorLive', '/operator-test': 'operatorTest' } as const)[r.path as '/partner-live']].secret;
        byPath.set(r.path, [...(byPath.get(r.path) ?? []), { livemode: body.livemode, allocation: body.data.allocation.id, signed: verifiedWith(secret, r) }]);
      }
      expect(Object.fromEntries(byPath)).toEqual({
        '/partner-live': [{ livemode: true, allocation: claims.live, signed: true }],
        '/operator-live': [{ livemode: true, allocation: claims.live, signed: true }],
        '/partner-test': [{ livemode: false, allocation: claims.test, signed: true }],
        '/operator-test': [{ livemode: false, allocation: claims.test, signed: true }],
      });
    } finally {
      await recorder.close();
    }
  });

  test('a partner key sees and touches only its mode\'s endpoints; the other mode\'s answer as missing ones', async () => {
    const p = await createPartner('Endpoints');
    const url = 'http://127.0.0.1:9/hook';
    const live = (await server.gql(p.live, CREATE, { input: { url, events: ['ALLOCATION_CREATED'] } })).body.data!.createWebhook.endpoint;
    const test = (await server.gql(p.test, CREATE, { input: { url, events: ['ALLOCATION_CREATED'] } })).body.data!.createWebhook.endpoint;
    expect([live.test, test.test]).toEqual([false, true]);
    for (const [key, own, others] of [
      [p.live, live.id, test.id],
      [p.test, test.id, live.id],
    ] as const) {
      const listed = await server.gql(key, '{ webhooks { id } }');
      expect(listed.body.data!.webhooks).toEqual([{ id: own }]);
      for (const query of ['query($id: ID!) { webhookDeliveries(endpointId: $id) { totalCount } }', 'mutation($id: ID!) { deleteWebhook(id: $id) }']) {
        const answer = async (id: string) => JSON.stringify((await server.gql(key, query, { id })).body).split(id).join('<id>');
        expect(await answer(others)).toBe(await answer(NO_SUCH_ID));
      }
    }
    // Both endpoints still there: the refused deletes changed nothing.
    const { rows } = await server.sql.query('SELECT count(*)::int AS n FROM webhook_endpoints WHERE id = ANY($1::uuid[]) AND deleted_at IS NULL', [[live.id, test.id]]);
    expect(rows[0].n).toBe(2);
    const wrong = await server.gql(p.live, CREATE, { input: { url, events: ['ALLOCATION_CREATED'], test: true } });
    expect(wrong.body.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
  });
});

// ----- the test clock --------------------------------------------------------------------------------

describe('advanceTestClock', () => {
  const ADVANCE = 'mutation($c: ID!, $s: Int!) { advanceTestClock(campaignId: $c, seconds: $s) { campaign { id testClock opensAt stats { available held allotted } } } }';

  test('drives a hold to HOLD_EXPIRED at once: its ticket is back in the pool when the call returns', async () => {
    const campaign = await campaignOf('test', 2);
    const hold = allocated(await server.hold(partner.test, { campaignId: campaign, holder: 'clock' }));
    const started = performance.now();
    const advanced = await server.gql(partner.test, ADVANCE, { c: campaign, s: 601 });
    expect(advanced.body.errors).toBeUndefined();
    expect(advanced.body.data!.advanceTestClock.campaign.stats).toEqual({ available: 2, held: 0, allotted: 0 });
    const confirmed = await server.gql(partner.test, 'mutation($a: ID!) { confirmHold(allocationId: $a) { allocation { status } error { code } } }', { a: hold.id });
    expect(confirmed.body.data!.confirmHold.error.code).toBe('HOLD_EXPIRED');
    const { rows } = await server.sql.query('SELECT status FROM allocations WHERE id = $1', [hold.id]);
    expect(rows[0].status).toBe('EXPIRED');
    // No waiting on the sweeper's interval: both answers came straight after the call.
    console.log(`advanceTestClock → HOLD_EXPIRED in ${Math.round(performance.now() - started)} ms of wall time`);
    const clock = new Date(advanced.body.data!.advanceTestClock.campaign.testClock).getTime();
    expect(clock - Date.now()).toBeGreaterThan(590_000);
  });

  test('drives an allotment to its lapse at once: its unused tickets go back to the pool', async () => {
    const campaign = await campaignOf('test', 5);
    const lapsesAt = new Date(Date.now() + 3_600_000).toISOString();
    const allotted = await server.gql(ADMIN_KEY, 'mutation($c: ID!, $p: ID!, $l: DateTime) { setPartnerAllotment(campaignId: $c, partnerId: $p, size: 3, lapsesAt: $l) { stats { available allotted } } }', {
      c: campaign,
      p: partner.id,
      l: lapsesAt,
    });
    expect(allotted.body.data!.setPartnerAllotment.stats).toEqual({ available: 2, allotted: 3 });
    const advanced = await server.gql(ADMIN_KEY, ADVANCE, { c: campaign, s: 3_601 });
    expect(advanced.body.data!.advanceTestClock.campaign.stats).toEqual({ available: 5, held: 0, allotted: 0 });
    const allotment = await server.gql(ADMIN_KEY, 'query($c: ID!) { campaign(id: $c) { allotments { remaining lapsedAt } } }', { c: campaign });
    expect(allotment.body.data!.campaign.allotments).toEqual([{ remaining: 0, lapsedAt: expect.any(String) }]);
  });

  test('opens the window: a claim before opensAt is CAMPAIGN_NOT_OPEN, after advancing past it it succeeds', async () => {
    const opensAt = new Date(Date.now() + 3_600_000);
    const campaign = await campaignOf('test', 2, { opensAt: opensAt.toISOString() });
    const claim = () => server.claim(partner.test, { campaignId: campaign, holder: 'early' });
    expect((await claim()).error?.code).toBe('CAMPAIGN_NOT_OPEN');
    const advanced = await server.gql(ADMIN_KEY, ADVANCE, { c: campaign, s: 3_600 });
    expect(new Date(advanced.body.data!.advanceTestClock.campaign.opensAt).getTime()).toBe(opensAt.getTime() - 3_600_000);
    expect((await claim()).error).toBeNull();
  });

  test('refuses a live campaign (LIVE_CAMPAIGN, nothing moved); a live key cannot tell a test campaign from a missing one', async () => {
    const live = await campaignOf('live', 1);
    const held = allocated(await server.hold(partner.live, { campaignId: live, holder: 'live' }));
    const before = (await server.sql.query('SELECT expires_at, (SELECT opens_at FROM campaigns WHERE id = $2) AS opens FROM allocations WHERE id = $1', [held.id, live])).rows[0];
    for (const key of [ADMIN_KEY, partner.live]) {
      const r = await server.gql(key, ADVANCE, { c: live, s: 600 });
      expect(r.body.errors?.map((e) => e.extensions?.code)).toEqual(['LIVE_CAMPAIGN']);
    }
    const after = (await server.sql.query('SELECT expires_at, (SELECT opens_at FROM campaigns WHERE id = $2) AS opens FROM allocations WHERE id = $1', [held.id, live])).rows[0];
    expect(after).toEqual(before);
    const answer = async (key: string, id: string) => JSON.stringify((await server.gql(key, ADVANCE, { c: id, s: 1 })).body).split(id).join('<id>');
    expect(await answer(partner.live, objects.test.campaign)).toBe(await answer(partner.live, NO_SUCH_TEST_ID));
    expect(await answer(partner.test, live)).toBe(await answer(partner.test, NO_SUCH_ID));
    expect(await answer(partner.test, NO_SUCH_TEST_ID)).toMatch(/NOT_FOUND/);
  });

  test('seconds must be 1 to 31,536,000', async () => {
    for (const s of [0, -5, 31_536_001]) {
      const r = await server.gql(ADMIN_KEY, ADVANCE, { c: objects.test.campaign, s });
      expect(r.body.errors?.[0]?.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'seconds' });
    }
  });
});

// ----- purgeTestData ---------------------------------------------------------------------------------

const liveSnapshot = () => liveRows(server.sql);

describe('purgeTestData', () => {
  test('deletes test campaigns made before `before` with all that is theirs, and touches no live row', async () => {
    const recorder = await startReceiver();
    try {
      const p = await createPartner('Purged');
      await server.gql(p.test, 'mutation($input: CreateWebhookInput!) { createWebhook(input: $input) { endpoint { id } } }', { input: { url: `${recorder.url}/t`, events: ['ALLOCATION_CREATED', 'HOLD_CREATED'] } });
      // A test campaign with a bit of everything: claims, a hold, an allotment, a quota, a waitlist, a ballot.
      const campaign = await campaignOf('test', 6, { releasePolicy: 'WAITLIST_FIRST' });
      await server.gql(ADMIN_KEY, 'mutation($c: ID!, $p: ID!) { setPartnerQuota(campaignId: $c, partnerId: $p, quota: 5) { campaign { id } } }', { c: campaign, p: p.id });
      await server.gql(ADMIN_KEY, 'mutation($c: ID!, $p: ID!) { setPartnerAllotment(campaignId: $c, partnerId: $p, size: 1) { id } }', { c: campaign, p: partner.id });
      for (const holder of ['a', 'b', 'c']) await server.claim(p.test, { campaignId: campaign, holder });
      await server.hold(p.test, { campaignId: campaign, holder: 'd' });
      const ballot = await campaignOf('test', 2, { mode: 'BALLOT' });
      await server.gql(p.test, 'mutation($c: ID!) { enterBallot(input: { campaignId: $c, holder: "e" }) { entry { id } } }', { c: ballot });
      await until(() => recorder.received.length >= 4, { message: 'the test endpoint\'s deliveries' });
      const sequence = (await server.sql.query("SELECT count(*)::int AS n FROM pg_class WHERE relkind = 'S' AND relname LIKE '%' || replace($1, '-', '') || '%'", [campaign])).rows[0].n;

      const before = await liveSnapshot();
      const testCampaigns = (await server.sql.query('SELECT count(*)::int AS n FROM campaigns WHERE test')).rows[0].n;
      const r = await server.gql(ADMIN_KEY, 'mutation($b: DateTime!) { purgeTestData(before: $b) { campaigns tickets allocations webhookDeliveries } }', { b: new Date(Date.now() + 1000).toISOString() });
      expect(r.body.errors).toBeUndefined();
      expect(r.body.data!.purgeTestData.campaigns).toBe(testCampaigns);
      expect(r.body.data!.purgeTestData.tickets).toBeGreaterThanOrEqual(8);
      expect(r.body.data!.purgeTestData.allocations).toBeGreaterThanOrEqual(4);
      expect(r.body.data!.purgeTestData.webhookDeliveries).toBeGreaterThanOrEqual(4);
      expect(await liveSnapshot()).toEqual(before);

      // Nothing of a test campaign is left anywhere: not a row, not its allocation sequence.
      const { rows: tables } = await server.sql.query<{ table_name: string }>(
        "SELECT table_name FROM information_schema.columns WHERE table_schema = current_schema() AND column_name = 'campaign_id'",
      );
      for (const { table_name: t } of tables) {
        expect([t, (await server.sql.query(`SELECT count(*)::int AS n FROM ${t} WHERE substring(campaign_id::text, 15, 1) = '8'`)).rows[0].n]).toEqual([t, 0]);
      }
      expect((await server.sql.query('SELECT count(*)::int AS n FROM campaigns WHERE test')).rows[0].n).toBe(0);
      if (sequence > 0) expect((await server.sql.query("SELECT count(*)::int AS n FROM pg_class WHERE relkind = 'S' AND relname LIKE '%' || replace($1, '-', '') || '%'", [campaign])).rows[0].n).toBe(0);
      expect((await server.gql(ADMIN_KEY, 'query($c: ID!) { campaign(id: $c) { id } }', { c: campaign })).body.data!.campaign).toBeNull();
      // The live side works on as before.
      const live = await campaignOf('live', 1);
      expect((await server.claim(partner.live, { campaignId: live, holder: 'after' })).error).toBeNull();
      // A test campaign made after `before` stays.
      const kept = await campaignOf('test', 1);
      const again = await server.gql(ADMIN_KEY, 'mutation($b: DateTime!) { purgeTestData(before: $b) { campaigns } }', { b: new Date(Date.now() - 60_000).toISOString() });
      expect(again.body.data!.purgeTestData.campaigns).toBe(0);
      expect((await server.gql(ADMIN_KEY, 'query($c: ID!) { campaign(id: $c) { test } }', { c: kept })).body.data!.campaign).toEqual({ test: true });
    } finally {
      await recorder.close();
    }
  });

  test('is for operators: a partner key, test or live, is FORBIDDEN', async () => {
    for (const key of [partner.test, partner.live]) {
      const r = await server.gql(key, 'mutation { purgeTestData(before: "2020-01-01T00:00:00Z") { campaigns } }');
      expect(r.body.errors?.map((e) => e.extensions?.code)).toEqual(['FORBIDDEN']);
    }
  });
});

// ----- createTestCopy --------------------------------------------------------------------------------

describe('createTestCopy', () => {
  const COPY = 'mutation($c: ID!, $n: Int) { createTestCopy(campaignId: $c, tickets: $n) { campaign { id name test status perHolderLimit maxHoldSeconds lowStockThreshold releasePolicy waitlistOfferSeconds opensAt closesAt stats { total available allotted } allotments { partner { id } size lapsesAt } } } }';

  test('copies the settings, quotas and live allotments, with synthetic codes as many as the original has; no live row changes', async () => {
    const closesAt = new Date(Date.now() + 86_400_000).toISOString();
    const lapsesAt = new Date(Date.now() + 3_600_000).toISOString();
    const original = await server.openCampaignWith(10, { name: 'Spring drop', perHolderLimit: 2, maxHoldSeconds: 900, lowStockThreshold: 3, releasePolicy: 'WAITLIST_FIRST', waitlistOfferSeconds: 300, closesAt });
    await server.gql(ADMIN_KEY, 'mutation($c: ID!, $p: ID!) { setPartnerQuota(campaignId: $c, partnerId: $p, quota: 4) { campaign { id } } }', { c: original, p: partner.id });
    await server.gql(ADMIN_KEY, 'mutation($c: ID!, $p: ID!, $l: DateTime) { setPartnerAllotment(campaignId: $c, partnerId: $p, size: 2, lapsesAt: $l) { id } }', { c: original, p: partner.id, l: lapsesAt });
    const before = await liveSnapshot();
    const r = await server.gql(ADMIN_KEY, COPY, { c: original });
    expect(r.body.errors).toBeUndefined();
    const copy = r.body.data!.createTestCopy.campaign;
    expect(copy).toEqual({
      id: expect.any(String),
      name: 'Spring drop (test copy)',
      test: true,
      status: 'OPEN',
      perHolderLimit: 2,
      maxHoldSeconds: 900,
      lowStockThreshold: 3,
      releasePolicy: 'WAITLIST_FIRST',
      waitlistOfferSeconds: 300,
      opensAt: null,
      closesAt,
      stats: { total: 10, available: 8, allotted: 2 },
      allotments: [{ partner: { id: partner.id }, size: 2, lapsesAt }],
    });
    expect(await liveSnapshot()).toEqual(before);
    const { rows: quotas } = await server.sql.query('SELECT partner_id::text, quota FROM partner_quotas WHERE campaign_id = $1', [copy.id]);
    expect(quotas).toEqual([{ partner_id: partner.id, quota: 4 }]);
    const { rows: codes } = await server.sql.query("SELECT count(*)::int AS n FROM tickets WHERE campaign_id = $1 AND code LIKE 'TEST-%'", [copy.id]);
    expect(codes[0].n).toBe(10);
    // The partner rehearses on it with its test key; its live key cannot see it.
    const claim = (key: string) => server.claim(key, { campaignId: copy.id, holder: 'copy' });
    expect(await claim(partner.test)).toMatchObject({ allocation: { test: true }, error: null });
    expect((await claim(partner.live)).error?.code).toBe('CAMPAIGN_NOT_FOUND');
  });

  test('tickets sets the count (0 and up, at least the allotments); a DRAFT is copied as a DRAFT; partners are FORBIDDEN', async () => {
    const draft = await server.createCampaign({ name: 'Draft' });
    const three = await server.gql(ADMIN_KEY, COPY, { c: draft, n: 3 });
    expect(three.body.data!.createTestCopy.campaign).toMatchObject({ status: 'DRAFT', test: true, stats: { total: 3 } });
    const empty = await server.gql(ADMIN_KEY, COPY, { c: draft });
    expect(empty.body.data!.createTestCopy.campaign.stats.total).toBe(0);
    const allotted = await campaignOf('live', 5);
    await server.gql(ADMIN_KEY, 'mutation($c: ID!, $p: ID!) { setPartnerAllotment(campaignId: $c, partnerId: $p, size: 4) { id } }', { c: allotted, p: partner.id });
    const campaigns = (await server.sql.query('SELECT count(*)::int AS n FROM campaigns')).rows[0].n;
    for (const n of [3, -1, 10_000_001]) {
      const r = await server.gql(ADMIN_KEY, COPY, { c: allotted, n });
      expect(r.body.errors?.[0]?.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'tickets' });
    }
    expect((await server.sql.query('SELECT count(*)::int AS n FROM campaigns')).rows[0].n).toBe(campaigns);
    for (const key of [partner.live, partner.test]) expect((await server.gql(key, COPY, { c: allotted })).body.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    expect((await server.gql(ADMIN_KEY, COPY, { c: NO_SUCH_ID })).body.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
  });
});

// ----- resetTestCampaign -----------------------------------------------------------------------------

describe('resetTestCampaign', () => {
  const RESET = 'mutation($c: ID!) { resetTestCampaign(id: $c) { campaign { status testClock stats { total allocated held available allotted void } } } }';
  const verify = async (c: string) => (await server.gql(ADMIN_KEY, 'query($c: ID!) { verifyCampaign(id: $c) { ok drifts { check subject expected found } } }', { c })).body.data!.verifyCampaign;

  test('returns a used, clock-moved, closed test campaign to its opening; every figure checks out; sequences keep rising', async () => {
    const campaign = await campaignOf('test', 6, { releasePolicy: 'VOID' });
    await server.gql(ADMIN_KEY, 'mutation($c: ID!, $p: ID!) { setPartnerQuota(campaignId: $c, partnerId: $p, quota: 3) { campaign { id } } }', { c: campaign, p: partner.id });
    await server.gql(ADMIN_KEY, 'mutation($c: ID!, $p: ID!) { setPartnerAllotment(campaignId: $c, partnerId: $p, size: 1) { id } }', { c: campaign, p: partner.id });
    const sequences: number[] = [];
    for (const holder of ['a', 'b']) {
      sequences.push(Number(allocated(await server.claim(partner.test, { campaignId: campaign, holder })).sequence));
    }
    const first = (await server.gql(partner.test, 'query($c: ID!) { campaign(id: $c) { allocations { edges { node { id } } } } }', { c: campaign })).body.data!.campaign.allocations.edges[0].node.id;
    await server.gql(partner.test, 'mutation($a: ID!) { releaseAllocation(allocationId: $a) { allocation { status } } }', { a: first }); // VOID: a ticket retired
    await server.hold(partner.test, { campaignId: campaign });
    await server.gql(ADMIN_KEY, 'mutation($c: ID!, $s: Int!) { advanceTestClock(campaignId: $c, seconds: $s) { campaign { id } } }', { c: campaign, s: 120 });
    await server.gql(ADMIN_KEY, 'mutation($c: ID!) { closeCampaign(id: $c) { campaign { status } } }', { c: campaign });

    const r = await server.gql(partner.test, RESET, { c: campaign });
    expect(r.body.errors).toBeUndefined();
    const reset = r.body.data!.resetTestCampaign.campaign;
    expect({ ...reset, testClock: undefined }).toEqual({ status: 'OPEN', testClock: undefined, stats: { total: 6, allocated: 0, held: 0, available: 5, allotted: 1, void: 0 } });
    expect(Math.abs(new Date(reset.testClock).getTime() - Date.now())).toBeLessThan(60_000);
    expect(await verify(campaign)).toEqual({ ok: true, drifts: [] });
    const { rows } = await server.sql.query('SELECT (SELECT count(*)::int FROM allocations WHERE campaign_id = $1) AS allocations, (SELECT live FROM partner_quotas WHERE campaign_id = $1) AS live, (SELECT quota FROM partner_quotas WHERE campaign_id = $1) AS quota', [campaign]);
    expect(rows[0]).toEqual({ allocations: 0, live: 0, quota: 3 });
    // It works on as a just-opened campaign, and the allocation numbers go on from where they were.
    const again = await server.claim(partner.test, { campaignId: campaign, holder: 'a' });
    expect(again.error).toBeNull();
    expect(Number(allocated(again).sequence)).toBeGreaterThan(Math.max(...sequences));
    expect(await verify(campaign)).toEqual({ ok: true, drifts: [] });
  });

  test('a drawn ballot gets a fresh seed and its entries go; holders may enter again', async () => {
    const campaign = await campaignOf('test', 3, { mode: 'BALLOT' });
    const BALLOT = 'query($c: ID!) { campaign(id: $c) { ballot { seedCommitment seed drawnAt entryCount } } }';
    await server.gql(partner.test, 'mutation($c: ID!) { enterBallot(input: { campaignId: $c, holder: "b" }) { entry { id } } }', { c: campaign });
    await server.gql(ADMIN_KEY, 'mutation($c: ID!) { drawBallot(campaignId: $c) { ballot { seed } } }', { c: campaign });
    const drawn = (await server.gql(ADMIN_KEY, BALLOT, { c: campaign })).body.data!.campaign.ballot;
    expect(drawn.seed).not.toBeNull();
    expect((await server.gql(ADMIN_KEY, RESET, { c: campaign })).body.errors).toBeUndefined();
    const fresh = (await server.gql(ADMIN_KEY, BALLOT, { c: campaign })).body.data!.campaign.ballot;
    expect(fresh).toEqual({ seedCommitment: expect.any(String), seed: null, drawnAt: null, entryCount: 0 });
    expect(fresh.seedCommitment).not.toBe(drawn.seedCommitment);
    const entered = await server.gql(partner.test, 'mutation($c: ID!) { enterBallot(input: { campaignId: $c, holder: "b" }) { entry { status } error { code } } }', { c: campaign });
    expect(entered.body.data!.enterBallot).toEqual({ entry: { status: 'ENTERED' }, error: null });
    expect(await verify(campaign)).toEqual({ ok: true, drifts: [] });
  });

  test('refuses a live campaign (LIVE_CAMPAIGN, nothing changes); a live key cannot tell a test campaign from a missing one', async () => {
    const live = await campaignOf('live', 2);
    await server.claim(partner.live, { campaignId: live, holder: 'x' });
    const before = await liveSnapshot();
    for (const key of [ADMIN_KEY, partner.live]) expect((await server.gql(key, RESET, { c: live })).body.errors?.map((e) => e.extensions?.code)).toEqual(['LIVE_CAMPAIGN']);
    expect(await liveSnapshot()).toEqual(before);
    const test = await campaignOf('test', 1);
    const answer = async (key: string, id: string) => JSON.stringify((await server.gql(key, RESET, { c: id })).body).split(id).join('<id>');
    expect(await answer(partner.live, test)).toBe(await answer(partner.live, NO_SUCH_TEST_ID));
    expect(await answer(partner.test, live)).toBe(await answer(partner.test, NO_SUCH_ID));
  });
});
