// What an operation costs comes from the values it runs with (src/cost.ts): a page size written
// literally, passed in a variable, given as a variable's default or left out costs the same, for the
// document limit and for the rate-limit charge, over HTTP and over graphql-ws. Findings 2 and 5 of
// the resource-control probe of 2026-12-02.
import { readFileSync } from 'node:fs';
import { buildSchema, parse, type OperationDefinitionNode } from 'graphql';
import { measureOperation, OBJECTS_PER_POINT } from '../src/cost';
import { SCHEMA_PATH } from '../src/server';
import { LIMITS } from '../src/validation';
import { ADMIN_KEY, startTestServer, type TestServer } from './helpers/testServer';
import { connectSocket, runOverSocket, socketErrors, type SocketClient } from './helpers/ws';

const schema = buildSchema(readFileSync(SCHEMA_PATH, 'utf8'));
const measure = (query: string, variables: Record<string, unknown> = {}) => {
  const document = parse(query);
  return measureOperation(schema, document, document.definitions.find((d) => d.kind === 'OperationDefinition') as OperationDefinitionNode, variables);
};
const codes = (errors: { extensions?: Record<string, unknown> }[] | undefined) => (errors ?? []).map((e) => e.extensions?.code);

/** The probe's query: a page of allocations, each with a page of its campaign's allocations. */
const NESTED = (args: string) =>
  `campaign(id: $c) { allocations${args} { edges { node { campaign { allocations${args} { edges { node { ticket { code } } } } } } } } }`;

/**
 * Query shapes with one page size given in one or more places (ARGS). Each becomes a document in
 * every form: a literal, a variable, a variable's default — and for the default page, the argument
 * left out, a variable left unset, and a null.
 */
const SHAPES: { name: string; body: string; variables: string[] }[] = [
  { name: 'one page of campaigns', body: '{ campaigns(ARGS) { edges { node { id name stats { total available } } } } }', variables: [] },
  { name: 'the nested allocations of the probe', body: `{ ${NESTED('(ARGS)')} }`, variables: ['$c: ID!'] },
  { name: 'partners and campaigns side by side', body: '{ partners(ARGS) { edges { node { id } } } campaigns(ARGS) { totalCount edges { node { id } } } }', variables: [] },
  {
    name: 'pages inside a fragment',
    body: '{ ...F } fragment F on Query { campaigns(ARGS) { edges { node { ballotEntries(ARGS) { edges { node { rank } } } } } } }',
    variables: [],
  },
  { name: 'webhook deliveries behind @include', body: '{ webhookDeliveries(endpointId: $e, ARGS) @include(if: true) { edges { node { id } } } }', variables: ['$e: ID!'] },
];

type Form = { query: string; variables: Record<string, unknown> };

function forms(shape: (typeof SHAPES)[number], size: number | undefined): Record<string, Form> {
  const write = (args: string, variable?: string): string => {
    const declared = [...shape.variables, ...(variable ? [variable] : [])];
    const body = shape.body.replace(/\(ARGS\)/g, args ? `(${args})` : '').replace(/, ARGS/g, args ? `, ${args}` : '');
    return `query${declared.length ? `(${declared.join(', ')})` : ''} ${body}`;
  };
  if (size === undefined) {
    return {
      literal: { query: write(`first: ${LIMITS.defaultPageSize}`), variables: {} },
      omitted: { query: write(''), variables: {} },
      unset: { query: write('first: $n', '$n: Int'), variables: {} },
      null: { query: write('first: $n', '$n: Int'), variables: { n: null } },
    };
  }
  return {
    literal: { query: write(`first: ${size}`), variables: {} },
    variable: { query: write('first: $n', '$n: Int'), variables: { n: size } },
    default: { query: write('first: $n', `$n: Int = ${size}`), variables: {} },
  };
}

describe('a page size costs the same however it is given', () => {
  for (const shape of SHAPES) {
    for (const size of [undefined, 1, 7, 50, 100]) {
      test(`${shape.name}, ${size === undefined ? 'the default page' : `first ${size}`}: the same cost and charge in every form`, () => {
        const measured = Object.entries(forms(shape, size)).map(([form, { query, variables }]) => [form, measure(query, variables)] as const);
        const [, reference] = measured[0]!;
        for (const [form, m] of measured) expect({ form, ...m }).toEqual({ form, ...reference });
        expect(reference.cost).toBeGreaterThan(0);
      });
    }
  }

  test('a page beyond the largest costs the largest page (execution refuses it anyway)', () => {
    expect(measure(`query { campaigns(first: 100000) { edges { node { id } } } }`)).toEqual(measure(`query { campaigns(first: ${LIMITS.pageSize}) { edges { node { id } } } }`));
    expect(measure('query($n: Int) { campaigns(first: $n) { edges { node { id } } } }', { n: 2 ** 31 - 1 })).toEqual(measure(`query { campaigns(first: ${LIMITS.pageSize}) { edges { node { id } } } }`));
  });

  test('a fragment costs what the same fields cost written inline', () => {
    const inline = measure('query($n: Int) { campaigns(first: $n) { edges { node { id stats { total } } } } }', { n: 30 });
    const spread = measure('query($n: Int) { ...F } fragment F on Query { campaigns(first: $n) { edges { node { ...G } } } } fragment G on Campaign { id stats { total } }', { n: 30 });
    const inlineFragment = measure('query($n: Int) { ... on Query { campaigns(first: $n) { edges { node { ... on Campaign { id stats { total } } } } } } }', { n: 30 });
    expect(spread).toEqual(inline);
    expect(inlineFragment).toEqual(inline);
  });

  test('the charge is the root fields plus a point per ten objects the pages may return', () => {
    expect(measure('{ __typename }').points).toBe(1);
    expect(measure('query { campaigns { edges { node { id } } } }').points).toBe(1 + LIMITS.defaultPageSize / OBJECTS_PER_POINT);
    // The probe's query at 100 a page: 100 outer objects, each with 100 inner ones.
    expect(measure(`query($c: ID!, $n: Int) { ${NESTED('(first: $n)')} }`, { c: 'x', n: 100 }).points).toBe(1 + (100 * (1 + 100)) / OBJECTS_PER_POINT);
    // A claim is charged what it always was.
    expect(measure('mutation($i: ClaimTicketInput!) { claimTicket(input: $i) { allocation { id } } }').points).toBe(5);
  });

  test('@skip and @include read the coerced variables: a default counts, an omitted nullable one does not throw', () => {
    expect(measure('query($s: Boolean = false) { viewer @skip(if: $s) { role } }')).toEqual(measure('query { viewer { role } }'));
    expect(measure('query($s: Boolean = true) { viewer @skip(if: $s) { role } campaigns { totalCount } }')).toEqual(measure('query { campaigns { totalCount } }'));
    // Null where a Boolean! is read: execution refuses it; measuring does not throw.
    expect(() => measure('query($s: Boolean = false) { viewer @skip(if: $s) { role } }', { s: null })).not.toThrow();
    // Variables that do not coerce: the operation will not run.
    expect(measure('query($n: Int) { campaigns(first: $n) { totalCount } }', { n: 'many' }).points).toBe(1);
  });
});

describe('over both transports', () => {
  let server: TestServer;
  const sockets: SocketClient[] = [];
  const socket = (key: string) => {
    const s = connectSocket(server.url, key);
    sockets.push(s);
    return s;
  };
  beforeAll(async () => {
    server = await startTestServer({ config: { env: 'production' } });
  });
  afterEach(async () => {
    await Promise.all(sockets.splice(0).map((s) => s.dispose()));
  });
  afterAll(() => server.stop());

  const probe = (args: string, variables: string) => `query(${variables}) { ${NESTED(args)} }`;

  test("the probe's nested pages are refused with the same cost whether the size is a literal, a variable or the default", async () => {
    const partner = await server.createPartner();
    const campaignId = await server.openCampaignWith(3);
    const attempts = [
      { query: probe('(first: 100)', '$c: ID!'), variables: { c: campaignId } },
      { query: probe('(first: $n)', '$c: ID!, $n: Int'), variables: { c: campaignId, n: 100 } },
      { query: probe('(first: $n)', '$c: ID!, $n: Int = 100'), variables: { c: campaignId } },
    ];
    const costs: unknown[] = [];
    for (const attempt of attempts) {
      for (const key of [partner.apiKey, ADMIN_KEY]) {
        const overHttp = await server.gql(key, attempt.query, attempt.variables);
        expect(overHttp.status).toBe(400);
        expect(codes(overHttp.body.errors)).toEqual(['GRAPHQL_VALIDATION_FAILED']);
        expect(overHttp.body.data).toBeUndefined();
        costs.push(overHttp.body.errors![0]!.extensions!.cost);
        const overSocket = socketErrors(await runOverSocket(socket(key), attempt));
        expect(codes(overSocket)).toEqual(['GRAPHQL_VALIDATION_FAILED']);
        costs.push(overSocket[0]!.extensions!.cost);
      }
    }
    expect(new Set(costs).size).toBe(1);
    expect(costs[0]).toBeGreaterThan(20_000);
    // Left out, the default page of 20 within a page of 20 is over the limit too (it was charged as a page of one).
    const omitted = await server.gql(partner.apiKey, probe('', '$c: ID!'), { c: campaignId });
    expect(codes(omitted.body.errors)).toEqual(['GRAPHQL_VALIDATION_FAILED']);
  });

  test('the rate-limit charge follows the page size, however it is given', async () => {
    // 1 point a second and a burst of 5: one operation of at most 5 points fits. A page of 40 is 1 + 4 points.
    const answers: Record<string, number[]> = {};
    const queries: Record<string, { query: string; variables?: Record<string, unknown> }> = {
      literal: { query: 'query { campaigns(first: 40) { edges { node { id } } } }' },
      variable: { query: 'query($n: Int) { campaigns(first: $n) { edges { node { id } } } }', variables: { n: 40 } },
      default: { query: 'query($n: Int = 40) { campaigns(first: $n) { edges { node { id } } } }' },
    };
    for (const [form, { query, variables }] of Object.entries(queries)) {
      const partner = await server.createPartner(`charged ${form}`);
      await server.gql(ADMIN_KEY, 'mutation($p: ID!) { setPartnerRateLimit(partnerId: $p, pointsPerSecond: 1) { partner { id } } }', { p: partner.id });
      answers[form] = [];
      for (let i = 0; i < 3; i += 1) answers[form].push((await server.gql(partner.apiKey, query, variables)).status);
    }
    expect(answers).toEqual({ literal: [200, 429, 429], variable: [200, 429, 429], default: [200, 429, 429] });
  });

  test('@skip with a defaulted variable: answered, not a 500, for a partner and for the admin, on both transports', async () => {
    const partner = await server.createPartner();
    const campaignId = await server.openCampaignWith(2);
    for (const key of [partner.apiKey, ADMIN_KEY]) {
      const overHttp = await server.gql(key, 'query($s: Boolean = false) { viewer @skip(if: $s) { role } }');
      expect(overHttp.status).toBe(200);
      expect(overHttp.body.errors).toBeUndefined();
      expect(overHttp.body.data).toHaveProperty('viewer');
      const skipped = await server.gql(key, 'query($s: Boolean = true) { viewer @skip(if: $s) { role } }');
      expect(skipped.status).toBe(200);
      expect(skipped.body.data).toEqual({});
    }
    // A subscription's root field cannot be skipped (graphql-js 16 threw on it: a 500 on both
    // transports); below the root, a defaulted condition is read like any other.
    const rootSkipped = 'subscription($id: ID!, $on: Boolean = true) { campaignStats(id: $id) @include(if: $on) { total } }';
    const overSocket = socketErrors(await runOverSocket(socket(ADMIN_KEY), { query: rootSkipped, variables: { id: campaignId } }));
    expect(codes(overSocket)).toEqual(['GRAPHQL_VALIDATION_FAILED']);
    expect(overSocket[0]!.message).toMatch(/must not use @skip or @include on its root field/);
    const overHttp = await server.gql(ADMIN_KEY, rootSkipped, { id: campaignId });
    expect(overHttp.status).toBe(400);
    expect(codes(overHttp.body.errors)).toEqual(['GRAPHQL_VALIDATION_FAILED']);
    const live = await runOverSocket(socket(ADMIN_KEY), {
      query: 'subscription($id: ID!, $more: Boolean = false) { campaignStats(id: $id) { total held @include(if: $more) } }',
      variables: { id: campaignId },
    });
    expect(socketErrors(live)).toEqual([]);
    expect(live.results[0]!.data).toEqual({ campaignStats: { total: 2 } });
  });
});
