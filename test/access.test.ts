// Who may call what, derived from the one declaration (@requires and @audited in schema.graphql):
// every field that needs a role is tried with a partner key (FORBIDDEN, before anything runs) and
// with the admin key (not FORBIDDEN), over the transport that serves it; every @audited one with
// both keys (let through, and recorded with its actor); every audited one leaves its row. The cases
// are generated from the schema, so a new field cannot be left out.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import {
  buildSchema,
  getNamedType,
  isEnumType,
  isInputObjectType,
  isListType,
  isNonNullType,
  isObjectType,
  isScalarType,
  type GraphQLArgument,
  type GraphQLInputType,
  type GraphQLSchema,
} from 'graphql';
import { accessRules, type AccessRule } from '../src/access';
import { ADMIN_KEY, startTestServer, type TestServer } from './helpers/testServer';
import { connectSocket, runOverSocket, socketErrors } from './helpers/ws';

const schema = buildSchema(readFileSync(path.resolve(__dirname, '../schema.graphql'), 'utf8'));
const rules = accessRules(schema);
/** @requires(role: …) fields, and @audited ones (any caller with a key). */
const roleRules = rules.filter((r) => r.role !== null);
const openRules = rules.filter((r) => r.role === null);

/** The mutations a partner key may call (each checks ownership itself). Anything else needs a role. */
const PARTNER_MUTATIONS = ['claimTicket', 'claimTickets', 'confirmHold', 'enterBallot', 'extendHold', 'holdTicket', 'joinWaitlist', 'leaveWaitlist', 'releaseAllocation', 'withdrawBallotEntry'];

const NO_SUCH_ID = '00000000-0000-0000-0000-0000000000aa';

/** A value of `type` that passes GraphQL's own checks (the resolver may still refuse it). */
function sample(type: GraphQLInputType, ids: Record<string, string>, name = ''): unknown {
  if (isNonNullType(type)) return sample(type.ofType, ids, name);
  if (isListType(type)) return [sample(type.ofType, ids, name)];
  if (isEnumType(type)) return type.getValues()[0]!.value;
  if (isInputObjectType(type)) {
    return Object.fromEntries(Object.values(type.getFields()).filter((f) => isNonNullType(f.type)).map((f) => [f.name, sample(f.type, ids, f.name)]));
  }
  if (isScalarType(type)) {
    switch (type.name) {
      case 'ID':
        return ids[name] ?? NO_SUCH_ID;
      case 'Int':
        return 1;
      case 'Boolean':
        return true;
      case 'DateTime':
        return '2030-01-01T00:00:00Z';
      case 'JSON':
        return {};
      default:
        return 'x';
    }
  }
  throw new Error(`no sample for ${String(type)}`);
}

/** The field's required arguments as variables, and their declarations. */
function argumentsOf(args: readonly GraphQLArgument[], ids: Record<string, string>, prefix: string) {
  const required = args.filter((a) => isNonNullType(a.type));
  return {
    declarations: required.map((a) => `$${prefix}${a.name}: ${String(a.type)}`),
    call: required.length ? `(${required.map((a) => `${a.name}: $${prefix}${a.name}`).join(', ')})` : '',
    variables: Object.fromEntries(required.map((a) => [`${prefix}${a.name}`, sample(a.type, ids, a.name)])),
  };
}

/** A document that reaches `rule.field`: at the root, or through Query.campaign for Campaign fields. */
function documentFor(s: GraphQLSchema, rule: AccessRule, ids: Record<string, string>): { query: string; variables: Record<string, unknown>; transport: 'http' | 'ws' } {
  const [typeName, fieldName] = rule.field.split('.') as [string, string];
  const type = s.getType(typeName);
  if (!isObjectType(type)) throw new Error(`${typeName} is not an object type`);
  const field = type.getFields()[fieldName]!;
  const selection = isObjectType(getNamedType(field.type)) ? ' { __typename }' : '';
  const own = argumentsOf(field.args, ids, 'a_');
  const root = { Query: 'query', Mutation: 'mutation', Subscription: 'subscription' }[typeName];
  if (root) {
    const declarations = own.declarations.length ? `(${own.declarations.join(', ')})` : '';
    return { query: `${root} Probe${declarations} { ${fieldName}${own.call}${selection} }`, variables: own.variables, transport: root === 'subscription' ? 'ws' : 'http' };
  }
  if (typeName === 'Campaign') {
    const declarations = ['$campaign: ID!', ...own.declarations].join(', ');
    return { query: `query Probe(${declarations}) { campaign(id: $campaign) { ${fieldName}${own.call}${selection} } }`, variables: { campaign: ids.campaignId, ...own.variables }, transport: 'http' };
  }
  throw new Error(`add a path to ${rule.field} in test/access.test.ts`);
}

let server: TestServer;
let partnerKey: string;
let partnerId: string;
let ids: Record<string, string>;
beforeAll(async () => {
  server = await startTestServer();
  const partner = await server.createPartner('Matrix');
  partnerKey = partner.apiKey;
  partnerId = partner.id;
  // The admin's calls act on another partner: revoking or rotating the matrix partner's key would
  // turn its later refusals into UNAUTHENTICATED.
  const victim = await server.createPartner('Acted upon');
  const campaignId = await server.openCampaignWith(3);
  ids = { campaignId, id: campaignId, partnerId: victim.id };
});
afterAll(() => server.stop());

test('every mutation is declared (@requires or @audited) or is one of the partner operations', () => {
  const mutations = Object.keys(schema.getMutationType()!.getFields()).sort();
  const protectedOnes = rules.filter((r) => r.field.startsWith('Mutation.')).map((r) => r.field.slice('Mutation.'.length));
  expect(mutations.filter((m) => !protectedOnes.includes(m))).toEqual(PARTNER_MUTATIONS);
  expect(rules.filter((r) => r.audited).map((r) => r.field.slice('Mutation.'.length)).sort()).toEqual(protectedOnes.sort());
});

test('the declaration covers the admin reads and the live figures', () => {
  expect(rules.map((r) => r.field)).toEqual(expect.arrayContaining(['Query.partners', 'Query.auditLog', 'Campaign.timeline', 'Campaign.partnerStats', 'Subscription.campaignStats']));
});

async function run(key: string, probe: ReturnType<typeof documentFor>) {
  if (probe.transport === 'http') return (await server.gql(key, probe.query, probe.variables)).body.errors ?? [];
  const socket = connectSocket(server.url, key);
  try {
    return socketErrors(await runOverSocket(socket, { query: probe.query, variables: probe.variables }));
  } finally {
    await socket.dispose();
  }
}

describe.each(roleRules.map((rule) => [rule.field, rule] as const))('%s', (_field, rule) => {
  test(`a partner key is refused (FORBIDDEN) before it runs${rule.audited ? ', and the refusal is audited without arguments' : ''}`, async () => {
    const probe = documentFor(schema, rule, ids);
    const errors = await run(partnerKey, probe);
    expect(errors.map((e) => e.extensions?.code)).toEqual(['FORBIDDEN']);
    if (rule.audited) {
      const { rows } = await server.sql.query(`SELECT arguments, outcome FROM audit_log WHERE operation = $1 AND actor LIKE 'partner:%' ORDER BY id DESC LIMIT 1`, [
        rule.field.slice('Mutation.'.length),
      ]);
      expect(rows[0]).toEqual({ arguments: {}, outcome: 'FORBIDDEN' });
    }
  });

  test(`the admin key (OWNER) is let through${rule.audited ? ', and the call is audited' : ''}`, async () => {
    const probe = documentFor(schema, rule, ids);
    const before = rule.audited ? (await server.sql.query(`SELECT count(*)::int AS n FROM audit_log WHERE operation = $1 AND actor = 'admin'`, [rule.field.slice(9)])).rows[0].n : 0;
    const errors = await run(ADMIN_KEY, probe);
    expect(errors.map((e) => e.extensions?.code)).not.toContain('FORBIDDEN');
    if (rule.audited) {
      const { rows } = await server.sql.query(`SELECT count(*)::int AS n FROM audit_log WHERE operation = $1 AND actor = 'admin'`, [rule.field.slice(9)]);
      expect(rows[0].n).toBe(before + 1);
    }
  });
});

test('the @audited fields are the webhook mutations, each audited', () => {
  expect(openRules).toEqual(['createWebhook', 'deleteWebhook', 'redeliverWebhook'].map((m) => ({ field: `Mutation.${m}`, role: null, audited: true })));
});

describe.each(openRules.map((rule) => [rule.field, rule] as const))('%s (@audited)', (_field, rule) => {
  const operation = rule.field.slice('Mutation.'.length);
  test.each([
    ['a partner key', () => partnerKey, () => `partner:${partnerId}`],
    ['the admin key', () => ADMIN_KEY, () => 'admin'],
  ])('%s is let through, and the call is audited with its actor and arguments', async (_who, key, actor) => {
    const probe = documentFor(schema, rule, ids);
    const before = (await server.sql.query(`SELECT coalesce(max(id), 0) AS id FROM audit_log`)).rows[0].id;
    const errors = await run(key(), probe);
    expect(errors.map((e) => e.extensions?.code)).not.toContain('FORBIDDEN');
    const { rows } = await server.sql.query(`SELECT actor, arguments FROM audit_log WHERE operation = $1 AND id > $2`, [operation, before]);
    expect(rows).toHaveLength(1);
    expect(rows[0].actor).toBe(actor());
    expect(rows[0].arguments).not.toEqual({});
  });
});
