// Crafted cursors and dates (issue 26). Every connection field that takes `after` is fed cursors this
// server never issued — bad offsets and dates, years 0 and 10000, huge integers, non-uuid ids, wrong
// kinds, empty parts, NUL, non-base64 — and every DateTime argument of every query and mutation is
// fed dates outside 1970–9999. Each answers BAD_USER_INPUT naming the argument (never
// INTERNAL_SERVER_ERROR: PostgreSQL's 22008, 22009 or 22003 must not be where it is found), nothing
// changes, and the server keeps serving. The fields and arguments are found in the schema, so a new
// one cannot be left out; the cursors each connection issues still work, up to their extremes.
import { getNamedType, isInputObjectType, isObjectType } from 'graphql';
import { schema } from './helpers/probes';
import { ADMIN_KEY, CLAIM, startTestServer, type GraphQLResponse, type TestServer } from './helpers/testServer';
import { until } from './helpers/time';

let server: TestServer;
let partner: { id: string; apiKey: string };
/** Ids the probes point at, made once in beforeAll. */
const fx = {} as Record<'campaign' | 'waitlist' | 'ballot' | 'drawn' | 'draft' | 'endpoint' | 'probe', string>;

const must = async (key: string, query: string, variables: Record<string, unknown>) => {
  const res = await server.gql(key, query, variables);
  expect(res.body.errors).toBeUndefined();
  return res.body.data!;
};

beforeAll(async () => {
  server = await startTestServer({ config: { holdSweepIntervalMs: 100 } });
  partner = await server.createPartner('Crafter');
  await server.createPartner('Another');
  // An operator endpoint, so that the openings below leave deliveries to page through (its address
  // refuses connections: each stays PENDING, which is all a page needs).
  const hook = await must(ADMIN_KEY, 'mutation($input: CreateWebhookInput!) { createWebhook(input: $input) { endpoint { id } } }', {
    input: { url: 'http://127.0.0.1:9/hook', events: ['CAMPAIGN_OPENED'] },
  });
  fx.endpoint = hook.createWebhook.endpoint.id;
  fx.campaign = await server.openCampaignWith(10);
  for (const holder of ['a1', 'a2']) await must(partner.apiKey, CLAIM, { input: { campaignId: fx.campaign, holder } });
  fx.waitlist = await server.openCampaignWith(1, { releasePolicy: 'WAITLIST_FIRST' });
  await must(partner.apiKey, CLAIM, { input: { campaignId: fx.waitlist, holder: 'w0' } });
  for (const holder of ['w1', 'w2']) {
    const joined = await must(partner.apiKey, 'mutation($input: JoinWaitlistInput!) { joinWaitlist(input: $input) { entry { id } error { code } } }', {
      input: { campaignId: fx.waitlist, holder },
    });
    expect(joined.joinWaitlist.error).toBeNull();
  }
  for (const key of ['ballot', 'drawn'] as const) {
    fx[key] = await server.openCampaignWith(5, { mode: 'BALLOT' });
    for (const holder of ['b1', 'b2', 'b3']) {
      const entered = await must(partner.apiKey, 'mutation($input: EnterBallotInput!) { enterBallot(input: $input) { entry { id } error { code } } }', {
        input: { campaignId: fx[key], holder },
      });
      expect(entered.enterBallot.error).toBeNull();
    }
  }
  await must(ADMIN_KEY, 'mutation($id: ID!) { drawBallot(campaignId: $id) { ballot { drawnAt } } }', { id: fx.drawn });
  fx.draft = await server.createCampaign({ name: 'Draft' });
  fx.probe = await server.openCampaignWith(100, { name: 'Probe claims' });
  await server.loadTickets(fx.draft, 3);
  await until(
    async () => (await server.sql.query('SELECT count(*)::int AS n FROM webhook_deliveries WHERE endpoint_id = $1', [fx.endpoint])).rows[0].n >= 2,
    { message: 'two deliveries to page through' },
  );
});
afterAll(() => server.stop());

interface Page {
  edges: { cursor: string }[];
  pageInfo: { endCursor: string | null };
}

/** A connection as a probe: the field, the kind of cursor it issues, and a page of one after `after`. */
interface Connection {
  name: string;
  field: string;
  kind: string;
  page(after: string | null): Promise<GraphQLResponse>;
  pageOf(data: Record<string, any>): Page;
}

const PAGE = 'edges { cursor } pageInfo { endCursor }';
const campaignField = (name: string, field: string, kind: string, campaign: () => string, args = ''): Connection => ({
  name,
  field: `Campaign.${field}`,
  kind,
  page: (after) => server.gql(ADMIN_KEY, `query($id: ID!, $after: String) { campaign(id: $id) { ${field}(first: 1, after: $after${args}) { ${PAGE} } } }`, { id: campaign(), after }),
  pageOf: (data) => data.campaign[field],
});
const queryField = (field: string, kind: string, args = '', variables: () => Record<string, unknown> = () => ({}), declarations = ''): Connection => ({
  name: `Query.${field}`,
  field: `Query.${field}`,
  kind,
  page: (after) => server.gql(ADMIN_KEY, `query($after: String${declarations}) { ${field}(first: 1, after: $after${args}) { ${PAGE} } }`, { after, ...variables() }),
  pageOf: (data) => data[field],
});

const CONNECTIONS: Connection[] = [
  queryField('campaigns', 'campaign'),
  queryField('partners', 'partner'),
  queryField('auditLog', 'audit'),
  queryField('webhookDeliveries', 'delivery', ', endpointId: $endpoint', () => ({ endpoint: fx.endpoint }), ', $endpoint: ID!'),
  campaignField('Campaign.allocations', 'allocations', 'seq', () => fx.campaign),
  campaignField('Campaign.waitlist', 'waitlist', 'seq', () => fx.waitlist),
  campaignField('Campaign.ballotEntries before the draw', 'ballotEntries', 'ballot-seq', () => fx.ballot),
  campaignField('Campaign.ballotEntries after the draw', 'ballotEntries', 'ballot-rank', () => fx.drawn),
];

const b64 = (text: string) => Buffer.from(text, 'utf8').toString('base64url');
const UUID = '3f1c1a2e-8b7d-4c1e-9f00-0123456789ab';
const TIMESTAMP = '2024-01-01 00:00:00.123456+00';
const INTEGER_KINDS = ['seq', 'audit', 'ballot-seq', 'ballot-rank'];
const PAIR_KINDS = ['campaign', 'delivery'];
const KINDS = [...INTEGER_KINDS, 'partner', ...PAIR_KINDS];

/** No integer cursor takes these: not digits, or beyond the column (bigint; rank is an integer). */
const BAD_INTEGERS = ['', '-1', '+1', '1.5', '1e3', ' 1', '1 ', '0x10', '１', '1\u0000', '\u00001', '99999999999999999999', '9223372036854775808', '9'.repeat(60)];
const OVERFLOW: Record<string, string[]> = {
  seq: ['9007199254740993', '9223372036854775807'],
  'ballot-seq': ['9007199254740993', '9223372036854775807'],
  'ballot-rank': ['2147483648', '4294967296', '999999999999999'],
  audit: ['9223372036854775808', '18446744073709551616'],
};
const BAD_IDS = ['', 'not-a-uuid', UUID.slice(0, -1), `${UUID}0`, UUID.replace('3', 'g'), `${UUID}\u0000`, `\u0000${UUID}`, `{${UUID}}`, UUID.replace(/-/g, ''), ` ${UUID}`, `${UUID}'--`];
const BAD_TIMESTAMPS = [
  '',
  // offsets PostgreSQL refuses (22009), or that it never prints
  '2024-01-01 00:00:00+15:99',
  '2024-01-01 00:00:00+15:60',
  '2024-01-01 00:00:00+16',
  '2024-01-01 00:00:00-99',
  '2024-01-01 00:00:00+1',
  '2024-01-01 00:00:00+01:00:00',
  '2024-01-01 00:00:00',
  '2024-01-01 00:00:00Z',
  // days and times that do not exist (22008)
  '2024-02-30 00:00:00+00',
  '2023-02-29 00:00:00+00',
  '2024-13-01 00:00:00+00',
  '2024-00-10 00:00:00+00',
  '2024-01-00 00:00:00+00',
  '2024-01-32 00:00:00+00',
  '2024-01-01 24:00:00+00',
  '2024-01-01 23:60:00+00',
  '2024-01-01 23:59:60+00',
  '2024-01-01 00:00:00.1234567+00',
  // years outside 1970–9999
  '0000-01-01 00:00:00+00',
  '0001-01-01 00:00:00+00',
  '1969-12-31 23:59:59.999999+00',
  '10000-01-01 00:00:00+00',
  '99999-12-31 00:00:00+00',
  '2024-01-01 00:00:00+00 BC',
  // words PostgreSQL would take
  'infinity',
  '-infinity',
  'epoch',
  'now',
  'allballs',
  '2024-01-01T00:00:00Z',
  `2024-01-01 00:00:00+00\u0000`,
];

/** Cursors of `kind` that are not cursors: right kind, wrong value. */
function craftedOf(kind: string): string[] {
  if (INTEGER_KINDS.includes(kind)) return [...BAD_INTEGERS, ...(OVERFLOW[kind] ?? [])].map((v) => b64(`${kind}:${v}`));
  if (kind === 'partner') return BAD_IDS.map((v) => b64(`${kind}:${v}`));
  return [
    ...BAD_TIMESTAMPS.map((t) => `${t}|${UUID}`),
    ...BAD_IDS.map((id) => `${TIMESTAMP}|${id}`),
    '|',
    '||',
    TIMESTAMP,
    `${TIMESTAMP}|`,
    `|${UUID}`,
    `${TIMESTAMP}|${UUID}|`,
    `${TIMESTAMP}|${UUID}|${UUID}`,
    `${UUID}|${TIMESTAMP}`,
  ].map((v) => b64(`${kind}:${v}`));
}

/** A well-formed cursor of each kind: refused by every connection of another kind. */
const WELL_FORMED: Record<string, string> = {
  seq: b64('seq:1'),
  audit: b64('audit:1'),
  'ballot-seq': b64('ballot-seq:1'),
  'ballot-rank': b64('ballot-rank:1'),
  partner: b64(`partner:${UUID}`),
  campaign: b64(`campaign:${TIMESTAMP}|${UUID}`),
  delivery: b64(`delivery:${TIMESTAMP}|${UUID}`),
};

/** The extremes of each kind that are still cursors: answered with a page, not an error. */
const EXTREMES: Record<string, string[]> = {
  seq: ['0', '999999999999999', '000000000000001'],
  'ballot-seq': ['0', '999999999999999'],
  'ballot-rank': ['0', '2147483647'],
  audit: ['0', '9223372036854775807'],
  partner: ['00000000-0000-0000-0000-000000000000', 'ffffffff-ffff-ffff-ffff-ffffffffffff', UUID.toUpperCase()],
  campaign: ['1970-01-01 00:00:00+15:59', '9999-12-31 23:59:59.999999-15:59', '2024-02-29 12:30:00.5+05:45', '2024-01-01 00:00:00-03'].map((t) => `${t}|${UUID}`),
  delivery: ['1970-01-01 00:00:00+15:59', '9999-12-31 23:59:59.999999-15:59', '2024-02-29 12:30:00.5+05:45', '2024-01-01 00:00:00-03'].map((t) => `${t}|${UUID}`),
};

/** Not base64url at all, or no kind this server issues. */
const NOT_CURSORS = [
  '!!!!',
  'a b',
  'Zm9v=',
  `${WELL_FORMED.seq}==`,
  `${WELL_FORMED.seq}.`,
  'ab/cd+ef',
  '%00',
  '\u0000',
  `${WELL_FORMED.seq}\u0000`,
  'é',
  '🎫',
  'x'.repeat(201),
  b64(`seq:${'1'.repeat(200)}`),
  '-',
  '____',
  b64(':1'),
  b64('unknown:1'),
  b64('SEQ:1'),
  b64(' seq:1'),
  b64('seq\u0000:1'),
  b64('seq'),
  Buffer.from([0xff, 0xfe, 0x00, 0x73]).toString('base64url'),
];

function craftedFor(connection: Connection): string[] {
  const wrongKinds = Object.entries(WELL_FORMED).filter(([kind]) => kind !== connection.kind).map(([, cursor]) => cursor);
  return [...new Set([...KINDS.flatMap(craftedOf), ...wrongKinds, ...NOT_CURSORS])];
}

/** The answer in a line, for a failure message. */
const shown = (res: GraphQLResponse) => `${res.status} ${JSON.stringify(res.body.errors?.map((e) => e.extensions) ?? res.body.data)}`;

async function expectServerStillServes() {
  const res = await server.gql(partner.apiKey, CLAIM, { input: { campaignId: fx.probe, holder: 'still-serving' } });
  expect(res.status).toBe(200);
  expect(res.body.data!.claimTicket.allocation).not.toBeNull();
}

test('every connection field that takes `after` is probed', () => {
  const withAfter: string[] = [];
  for (const type of Object.values(schema.getTypeMap())) {
    if (!isObjectType(type) || type.name.startsWith('__')) continue;
    for (const field of Object.values(type.getFields())) if (field.args.some((a) => a.name === 'after')) withAfter.push(`${type.name}.${field.name}`);
  }
  expect([...new Set(CONNECTIONS.map((c) => c.field))].sort()).toEqual(withAfter.sort());
});

describe.each(CONNECTIONS.map((c) => [c.name, c] as const))('%s', (_name, connection) => {
  test('the cursors it issues page on, and its extremes answer a page', async () => {
    const first = await connection.page(null);
    expect(first.body.errors).toBeUndefined();
    const { edges, pageInfo } = connection.pageOf(first.body.data!);
    expect(edges).toHaveLength(1);
    expect(pageInfo.endCursor).toBe(edges[0]!.cursor);
    const second = await connection.page(pageInfo.endCursor);
    expect(second.body.errors).toBeUndefined();
    expect(connection.pageOf(second.body.data!).edges[0]?.cursor).not.toBe(edges[0]!.cursor);
    for (const value of EXTREMES[connection.kind]!) {
      const res = await connection.page(b64(`${connection.kind}:${value}`));
      expect([value, shown(res)]).toEqual([value, expect.stringMatching(/^200 \{/)]);
    }
  });

  test('every crafted cursor answers BAD_USER_INPUT naming `after`, and the server keeps serving', async () => {
    const crafted = craftedFor(connection);
    expect(crafted.length).toBeGreaterThan(150);
    const wrong: string[] = [];
    for (let i = 0; i < crafted.length; i += 10) {
      await Promise.all(
        crafted.slice(i, i + 10).map(async (cursor) => {
          const res = await connection.page(cursor);
          const error = res.body.errors?.[0]?.extensions;
          if (res.status !== 200 || res.body.errors?.length !== 1 || error?.code !== 'BAD_USER_INPUT' || error.field !== 'after') {
            wrong.push(`${JSON.stringify(Buffer.from(cursor, 'base64url').toString('utf8'))} (${JSON.stringify(cursor.slice(0, 40))}): ${shown(res)}`);
          }
        }),
      );
    }
    expect(wrong).toEqual([]);
    await expectServerStillServes();
  });
});

// ---------------------------------------------------------------------------------------------------
// DateTime arguments

/** Every argument (or input field of an argument) of type DateTime, as `Type.field(argument[.field])`. */
function dateArguments(): string[] {
  const found: string[] = [];
  for (const type of Object.values(schema.getTypeMap())) {
    if (!isObjectType(type) || type.name.startsWith('__')) continue;
    for (const field of Object.values(type.getFields())) {
      for (const arg of field.args) {
        const named = getNamedType(arg.type);
        if (named.name === 'DateTime') found.push(`${type.name}.${field.name}(${arg.name})`);
        if (isInputObjectType(named)) {
          for (const inner of Object.values(named.getFields())) if (getNamedType(inner.type).name === 'DateTime') found.push(`${type.name}.${field.name}(${arg.name}.${inner.name})`);
        }
      }
    }
  }
  return found.sort();
}

const AUDIT_LOG = 'query($since: DateTime, $until: DateTime) { auditLog(first: 1, since: $since, until: $until) { totalCount } }';
const CREATE = 'mutation($input: CreateCampaignInput!) { createCampaign(input: $input) { campaign { id } } }';
const UPDATE = 'mutation($id: ID!, $input: UpdateCampaignInput!) { updateCampaign(id: $id, input: $input) { campaign { id } } }';
const ALLOT = 'mutation($c: ID!, $p: ID!, $at: DateTime) { setPartnerAllotment(campaignId: $c, partnerId: $p, size: 0, lapsesAt: $at) { id } }';

/** How each DateTime argument is sent: the argument's name, and the request carrying `value` in it. */
const DATE_ARGUMENTS: Record<string, { field: string; send(value: string): Promise<GraphQLResponse> }> = {
  'Query.auditLog(since)': { field: 'since', send: (v) => server.gql(ADMIN_KEY, AUDIT_LOG, { since: v }) },
  'Query.auditLog(until)': { field: 'until', send: (v) => server.gql(ADMIN_KEY, AUDIT_LOG, { until: v }) },
  'Mutation.createCampaign(input.opensAt)': { field: 'opensAt', send: (v) => server.gql(ADMIN_KEY, CREATE, { input: { name: 'Dated', opensAt: v } }) },
  'Mutation.createCampaign(input.closesAt)': { field: 'closesAt', send: (v) => server.gql(ADMIN_KEY, CREATE, { input: { name: 'Dated', closesAt: v } }) },
  'Mutation.createCampaign(input.entriesCloseAt)': {
    field: 'entriesCloseAt',
    send: (v) => server.gql(ADMIN_KEY, CREATE, { input: { name: 'Dated', mode: 'BALLOT', entriesCloseAt: v } }),
  },
  'Mutation.updateCampaign(input.opensAt)': { field: 'opensAt', send: (v) => server.gql(ADMIN_KEY, UPDATE, { id: fx.draft, input: { opensAt: v } }) },
  'Mutation.updateCampaign(input.closesAt)': { field: 'closesAt', send: (v) => server.gql(ADMIN_KEY, UPDATE, { id: fx.draft, input: { closesAt: v } }) },
  'Mutation.setPartnerAllotment(lapsesAt)': { field: 'lapsesAt', send: (v) => server.gql(ADMIN_KEY, ALLOT, { c: fx.draft, p: partner.id, at: v }) },
  'Mutation.purgeTestData(before)': { field: 'before', send: (v) => server.gql(ADMIN_KEY, 'mutation($b: DateTime!) { purgeTestData(before: $b) { campaigns } }', { b: v }) },
};

/** Dates the DateTime scalar takes that are outside 1970–9999 once in UTC. */
const OUT_OF_RANGE = [
  '0000-01-01T00:00:00Z',
  '0000-12-31T23:59:59.999+00:00',
  '0001-01-01T00:00:00Z',
  '1000-06-15T12:00:00Z',
  '1969-12-31T23:59:59.999Z',
  '1970-01-01T00:30:00+01:00',
  '9999-12-31T23:59:59-23:59',
  '9999-12-31T23:00:00-01:00',
];
/** The edges of the range: answered without INTERNAL_SERVER_ERROR (accepted, or refused for another reason). */
const EDGES = ['1970-01-01T00:00:00Z', '1970-01-01T01:00:00+01:00', '9999-12-31T23:59:59.999Z', '9999-12-31T23:59:59+00:00'];

test('every DateTime argument of every query and mutation is probed', () => {
  expect(Object.keys(DATE_ARGUMENTS).sort()).toEqual(dateArguments());
});

async function snapshot() {
  const { rows } = await server.sql.query(
    `SELECT (SELECT count(*)::int FROM campaigns) AS campaigns,
            (SELECT count(*)::int FROM allotments) AS allotments,
            (SELECT concat_ws(' ', opens_at, closes_at) FROM campaigns WHERE id = $1) AS draft_window`,
    [fx.draft],
  );
  return rows[0];
}

describe.each(Object.entries(DATE_ARGUMENTS))('%s', (_name, argument) => {
  test.each(OUT_OF_RANGE)('%s answers BAD_USER_INPUT naming the argument, and nothing changes', async (value) => {
    const before = await snapshot();
    const res = await argument.send(value);
    expect(res.status).toBe(200);
    expect(res.body.errors?.map((e) => e.extensions)).toEqual([expect.objectContaining({ code: 'BAD_USER_INPUT', field: argument.field })]);
    expect(res.body.errors![0]!.message).toBe(`${argument.field} must be a date between 1970 and 9999.`);
    expect(await snapshot()).toEqual(before);
  });

  test('the edges of the range are not an internal error, and the server keeps serving', async () => {
    for (const value of EDGES) {
      const res = await argument.send(value);
      expect([value, res.status]).toEqual([value, 200]);
      expect([value, JSON.stringify(res.body)]).toEqual([value, expect.not.stringContaining('INTERNAL_SERVER_ERROR')]);
    }
    await expectServerStillServes();
  });
});
