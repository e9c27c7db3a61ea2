// Operator roles and scoped partner keys (issue 18), derived from the one declaration
// (@requires/@audited in schema.graphql, src/access.ts): every mutation and every admin field is
// tried with an OWNER, an OPERATOR and a VIEWER operator key, ADMIN_API_KEY, a scoped and an
// unscoped partner key, over the transport that serves it, and must be refused (FORBIDDEN, before
// it runs) exactly when the declaration says so. Then what a scoped key sees outside its campaigns
// is compared, field by field, with what it would see for a campaign that does not exist. The cases
// are generated from the schema, so a new operation cannot be left out.
import { accessRules, type OperatorRole } from '../src/access';
import { NO_SUCH_ID, probeFor, schema, selectionOf, targetOf, type Probe, type Target } from './helpers/probes';
import { ADMIN_KEY, startTestServer, type TestServer } from './helpers/testServer';
import { until } from './helpers/time';
import { connectSocket, runOverSocket, socketErrors, type SocketClient } from './helpers/ws';

const rules = new Map(accessRules(schema).map((rule) => [rule.field, rule]));
const mutationFields = Object.keys(schema.getMutationType()!.getFields()).map((f) => `Mutation.${f}`);
/** Every admin read the declaration names (Query, Campaign and Subscription fields). */
const readFields = [...rules.values()].filter((r) => !r.field.startsWith('Mutation.')).map((r) => r.field);
const RANK: Record<OperatorRole, number> = { VIEWER: 1, OPERATOR: 2, OWNER: 3 };

type Caller = 'OWNER key' | 'OPERATOR key' | 'VIEWER key' | 'ADMIN_API_KEY' | 'scoped partner key' | 'partner key';
const CALLERS: Caller[] = ['OWNER key', 'OPERATOR key', 'VIEWER key', 'ADMIN_API_KEY', 'scoped partner key', 'partner key'];
const ROLE_OF: Record<Caller, OperatorRole | null> = {
  'OWNER key': 'OWNER',
  'OPERATOR key': 'OPERATOR',
  'VIEWER key': 'VIEWER',
  ADMIN_API_KEY: 'OWNER',
  'scoped partner key': null,
  'partner key': null,
};

/** What the declaration says: a role field needs that role or above; a mutation open to partners is refused to a VIEWER only. */
function allowed(field: string, caller: Caller): boolean {
  const role = ROLE_OF[caller];
  const rule = rules.get(field);
  if (rule?.role) return role !== null && RANK[role] >= RANK[rule.role];
  if (field.startsWith('Mutation.')) return role !== 'VIEWER';
  return true;
}

let server: TestServer;
const keys = {} as Record<Caller, string>;
const operatorIds = {} as Record<'OWNER key' | 'OPERATOR key' | 'VIEWER key', string>;
let ids: Record<string, string>;
const sockets = new Map<Caller, SocketClient>();

const CREATE_KEY = 'mutation($input: CreateOperatorKeyInput!) { createOperatorKey(input: $input) { apiKey key { id name role createdAt lastUsedAt revokedAt } } }';
const SCOPE = 'mutation($p: ID!, $ids: [ID!]) { scopePartnerKey(partnerId: $p, campaignIds: $ids) { id campaignScope } }';

async function operatorKey(role: OperatorRole, name = `${role.toLowerCase()} key`): Promise<{ id: string; apiKey: string }> {
  const r = await server.gql(ADMIN_KEY, CREATE_KEY, { input: { name, role } });
  expect(r.body.errors).toBeUndefined();
  return { id: r.body.data!.createOperatorKey.key.id, apiKey: r.body.data!.createOperatorKey.apiKey };
}

beforeAll(async () => {
  server = await startTestServer();
  for (const role of ['OWNER', 'OPERATOR', 'VIEWER'] as const) {
    const key = await operatorKey(role);
    keys[`${role} key`] = key.apiKey;
    operatorIds[`${role} key`] = key.id;
  }
  keys.ADMIN_API_KEY = ADMIN_KEY;
  keys['partner key'] = (await server.createPartner('unscoped')).apiKey;
  const scoped = await server.createPartner('scoped');
  keys['scoped partner key'] = scoped.apiKey;
  // The calls act on another partner: revoking or rotating a caller's own key would turn its later
  // refusals into UNAUTHENTICATED.
  const victim = await server.createPartner('Acted upon');
  const campaignId = await server.openCampaignWith(50);
  ids = { campaignId, id: campaignId, partnerId: victim.id };
  await server.gql(ADMIN_KEY, SCOPE, { p: scoped.id, ids: [campaignId] });
});
afterAll(async () => {
  await Promise.all([...sockets.values()].map((s) => s.dispose()));
  await server.stop();
});

async function run(caller: Caller, probe: Probe) {
  if (probe.transport === 'http') return (await server.gql(keys[caller], probe.query, probe.variables)).body.errors ?? [];
  let socket = sockets.get(caller);
  if (!socket) sockets.set(caller, (socket = connectSocket(server.url, keys[caller])));
  return socketErrors(await runOverSocket(socket, { query: probe.query, variables: probe.variables }));
}

test('the matrix covers every mutation, the admin reads and the new operations', () => {
  expect(mutationFields.length).toBeGreaterThanOrEqual(29);
  expect(readFields).toEqual(expect.arrayContaining(['Query.operatorKeys', 'Query.partners', 'Query.auditLog', 'Campaign.timeline', 'Subscription.campaignStats']));
  expect(rules.get('Mutation.createOperatorKey')?.role).toBe('OWNER');
  expect(rules.get('Mutation.revokeOperatorKey')?.role).toBe('OWNER');
  expect(rules.get('Query.operatorKeys')?.role).toBe('OWNER');
  expect(rules.get('Mutation.scopePartnerKey')?.role).toBe('OPERATOR');
});

describe.each([...mutationFields, ...readFields].map((field) => [field] as const))('%s', (field) => {
  test.each(CALLERS.map((caller) => [caller, allowed(field, caller)] as const))('%s: allowed = %s', async (caller, isAllowed) => {
    const errors = await run(caller, probeFor(field, ids));
    const codes = errors.map((e) => e.extensions?.code);
    if (isAllowed) expect(codes).not.toContain('FORBIDDEN');
    else expect(codes).toEqual(['FORBIDDEN']);
  });
});

describe('operator keys', () => {
  test('a VIEWER is refused every mutation before anything runs, whatever the arguments, and each refusal is audited with its key', async () => {
    const before = (await server.sql.query('SELECT coalesce(max(id), 0) AS id FROM audit_log')).rows[0].id;
    const campaigns = (await server.sql.query('SELECT count(*)::int AS n FROM campaigns')).rows[0].n;
    // Arguments that would fail validation: the role is checked first.
    const r = await server.gql(keys['VIEWER key'], 'mutation { createCampaign(input: { name: "" }) { campaign { id } } }');
    expect(r.body.errors?.map((e) => e.extensions?.code)).toEqual(['FORBIDDEN']);
    const claim = await server.gql(keys['VIEWER key'], 'mutation($c: ID!) { claimTicket(input: { campaignId: $c, holder: "v" }) { allocation { id } error { code } } }', { c: ids.campaignId });
    expect(claim.body.errors?.map((e) => e.extensions?.code)).toEqual(['FORBIDDEN']);
    expect((await server.sql.query('SELECT count(*)::int AS n FROM campaigns')).rows[0].n).toBe(campaigns);
    const { rows } = await server.sql.query('SELECT actor, operator_id, operation, arguments, outcome FROM audit_log WHERE id > $1 ORDER BY id', [before]);
    expect(rows).toEqual([
      { actor: `operator:${operatorIds['VIEWER key']}`, operator_id: operatorIds['VIEWER key'], operation: 'createCampaign', arguments: {}, outcome: 'FORBIDDEN' },
      { actor: `operator:${operatorIds['VIEWER key']}`, operator_id: operatorIds['VIEWER key'], operation: 'claimTicket', arguments: {}, outcome: 'FORBIDDEN' },
    ]);
  });

  test('the audit log names the operator key that acted, and can be filtered', async () => {
    const name = `by operator ${Date.now()}`;
    const made = await server.gql(keys['OPERATOR key'], 'mutation($n: String!) { createCampaign(input: { name: $n }) { campaign { id } } }', { n: name });
    expect(made.body.errors).toBeUndefined();
    await server.gql(ADMIN_KEY, 'mutation { createCampaign(input: { name: "by admin" }) { campaign { id } } }');
    const log = await server.gql(
      keys['VIEWER key'],
      `query($actor: String) { auditLog(first: 5, operation: "createCampaign", actor: $actor) { totalCount edges { node { actor operation outcome arguments operator { id name role } partner { id } } } } }`,
      { actor: `operator:${operatorIds['OPERATOR key']}` },
    );
    expect(log.body.errors).toBeUndefined();
    const nodes = log.body.data!.auditLog.edges.map((e: { node: unknown }) => e.node);
    expect(nodes[0]).toEqual({
      actor: `operator:${operatorIds['OPERATOR key']}`,
      operation: 'createCampaign',
      outcome: 'OK',
      arguments: { input: { name } },
      operator: { id: operatorIds['OPERATOR key'], name: 'operator key', role: 'OPERATOR' },
      partner: null,
    });
    expect(nodes.every((n: { actor: string }) => n.actor === `operator:${operatorIds['OPERATOR key']}`)).toBe(true);
    const admins = await server.gql(ADMIN_KEY, '{ auditLog(first: 1, actor: "admin", operation: "createCampaign") { edges { node { actor operator { id } } } } }');
    expect(admins.body.data!.auditLog.edges[0].node).toEqual({ actor: 'admin', operator: null });
    const refused = await server.gql(ADMIN_KEY, '{ auditLog(first: 50, outcome: "FORBIDDEN") { edges { node { outcome } } } }');
    expect(refused.body.data!.auditLog.edges.length).toBeGreaterThan(0);
    expect(refused.body.data!.auditLog.edges.every((e: { node: { outcome: string } }) => e.node.outcome === 'FORBIDDEN')).toBe(true);
  });

  test("an OPERATOR key releasing a partner's allocation leaves an audit row naming the key, the allocation and the outcome; the partner's own release leaves none", async () => {
    const owner = await server.createPartner('released');
    const campaignId = await server.openCampaignWith(3);
    const CLAIM_ONE = 'mutation($c: ID!, $h: String!) { claimTicket(input: { campaignId: $c, holder: $h }) { allocation { id } } }';
    const RELEASE = 'mutation($id: ID!) { releaseAllocation(allocationId: $id) { allocation { id status } error { code } } }';
    const [first, second] = await Promise.all(['r1', 'r2'].map(async (h) => (await server.gql(owner.apiKey, CLAIM_ONE, { c: campaignId, h })).body.data!.claimTicket.allocation.id as string));
    const before = (await server.sql.query('SELECT coalesce(max(id), 0) AS id FROM audit_log')).rows[0].id;

    const byOperator = await server.gql(keys['OPERATOR key'], RELEASE, { id: first });
    expect(byOperator.body.data!.releaseAllocation).toEqual({ allocation: { id: first, status: 'RELEASED' }, error: null });
    const byPartner = await server.gql(owner.apiKey, RELEASE, { id: second });
    expect(byPartner.body.data!.releaseAllocation).toEqual({ allocation: { id: second, status: 'RELEASED' }, error: null });
    // An expected refusal comes back in the payload; the row records its code.
    const unknown = await server.gql(keys['OPERATOR key'], RELEASE, { id: NO_SUCH_ID });
    expect(unknown.body.data!.releaseAllocation.error).toEqual({ code: 'ALLOCATION_NOT_FOUND' });

    const { rows } = await server.sql.query('SELECT actor, operator_id, operation, arguments, outcome, request_id FROM audit_log WHERE id > $1 ORDER BY id', [before]);
    const operator = operatorIds['OPERATOR key'];
    expect(rows).toEqual([
      { actor: `operator:${operator}`, operator_id: operator, operation: 'releaseAllocation', arguments: { allocationId: first }, outcome: 'OK', request_id: byOperator.headers.get('x-request-id') },
      { actor: `operator:${operator}`, operator_id: operator, operation: 'releaseAllocation', arguments: { allocationId: NO_SUCH_ID }, outcome: 'ALLOCATION_NOT_FOUND', request_id: unknown.headers.get('x-request-id') },
    ]);
    // Operators find it in the audit log by the operation, with the key that acted.
    const log = await server.gql(keys['VIEWER key'], '{ auditLog(first: 1, operation: "releaseAllocation", outcome: "OK") { edges { node { actor arguments operator { id role } } } } }');
    expect(log.body.data!.auditLog.edges[0].node).toEqual({ actor: `operator:${operator}`, arguments: { allocationId: first }, operator: { id: operator, role: 'OPERATOR' } });
  });

  test('viewer says who is calling, for every kind of key', async () => {
    const q = '{ viewer { role operator { id role } partner { name } } }';
    expect((await server.gql(ADMIN_KEY, q)).body.data!.viewer).toEqual({ role: 'OWNER', operator: null, partner: null });
    expect((await server.gql(keys['OPERATOR key'], q)).body.data!.viewer).toEqual({ role: 'OPERATOR', operator: { id: operatorIds['OPERATOR key'], role: 'OPERATOR' }, partner: null });
    expect((await server.gql(keys['VIEWER key'], q)).body.data!.viewer).toEqual({ role: 'VIEWER', operator: { id: operatorIds['VIEWER key'], role: 'VIEWER' }, partner: null });
    expect((await server.gql(keys['partner key'], q)).body.data!.viewer).toEqual({ role: null, operator: null, partner: { name: 'unscoped' } });
  });

  test('an OPERATOR manages partner keys (shown once) but not operator keys; an OWNER key issues and lists them, never showing a key again', async () => {
    const operator = keys['OPERATOR key'];
    const created = await server.gql(operator, 'mutation { createPartner(input: { name: "by operator" }) { apiKey partner { id } } }');
    expect(created.body.data!.createPartner.apiKey).toMatch(/^tsp_/);
    const rotated = await server.gql(operator, 'mutation($p: ID!) { rotateApiKey(partnerId: $p) { apiKey } }', { p: created.body.data!.createPartner.partner.id });
    expect(rotated.body.data!.rotateApiKey.apiKey).toMatch(/^tsp_/);
    expect((await server.gql(operator, CREATE_KEY, { input: { name: 'no', role: 'VIEWER' } })).body.errors?.map((e) => e.extensions?.code)).toEqual(['FORBIDDEN']);

    const owner = keys['OWNER key'];
    const issued = await server.gql(owner, CREATE_KEY, { input: { name: 'issued by an owner key', role: 'VIEWER' } });
    expect(issued.body.data!.createOperatorKey.apiKey).toMatch(/^tso_[0-9a-f]{12}_[A-Za-z0-9_-]{43}$/);
    const listed = JSON.stringify((await server.gql(owner, '{ operatorKeys { id name role createdAt lastUsedAt revokedAt } }')).body);
    expect(listed).toContain('issued by an owner key');
    expect(listed).not.toContain(issued.body.data!.createOperatorKey.apiKey);
    const { rows } = await server.sql.query('SELECT key_hash FROM operator_keys WHERE id = $1', [issued.body.data!.createOperatorKey.key.id]);
    expect(rows[0].key_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(rows[0].key_hash).not.toContain(issued.body.data!.createOperatorKey.apiKey);
  });

  test.each([
    ['an empty name', { name: '', role: 'VIEWER' }, 'BAD_USER_INPUT'],
    ['a name of 201 characters', { name: 'n'.repeat(201), role: 'VIEWER' }, 'BAD_USER_INPUT'],
    ['an unknown role', { name: 'x', role: 'ROOT' }, 'BAD_USER_INPUT'],
  ])('createOperatorKey with %s is refused with a clear code and creates nothing', async (_what, input, code) => {
    const before = (await server.sql.query('SELECT count(*)::int AS n FROM operator_keys')).rows[0].n;
    const r = await server.gql(ADMIN_KEY, CREATE_KEY, { input });
    expect(r.body.errors?.[0]?.extensions?.code).toBe(code);
    expect((await server.sql.query('SELECT count(*)::int AS n FROM operator_keys')).rows[0].n).toBe(before);
  });

  test('a revoked operator key is UNAUTHENTICATED exactly as an unknown key, its open socket is closed, and revoking again keeps the first time', async () => {
    const key = await operatorKey('VIEWER', 'to revoke');
    expect((await server.gql(key.apiKey, '{ viewer { role } }')).body.data!.viewer.role).toBe('VIEWER');
    const socket = connectSocket(server.url, key.apiKey);
    const campaignId = ids.campaignId;
    const live = runOverSocket(socket, { query: 'subscription($id: ID!) { campaignStats(id: $id) { total } }', variables: { id: campaignId } }, 1000, 15_000);
    const revoke = 'mutation($id: ID!) { revokeOperatorKey(id: $id) { id revokedAt } }';
    const first = (await server.gql(keys['OWNER key'], revoke, { id: key.id })).body.data!.revokeOperatorKey.revokedAt;
    const revoked = await server.gql(key.apiKey, '{ viewer { role } }');
    const unknown = await server.gql(key.apiKey.replace(/_[^_]+$/, `_${'A'.repeat(43)}`), '{ viewer { role } }');
    expect(revoked.status).toBe(401);
    expect(revoked.body.errors?.map((e) => [e.extensions?.code, e.message])).toEqual(unknown.body.errors?.map((e) => [e.extensions?.code, e.message]));
    await until(() => socket.closed() !== undefined, { message: 'the socket of the revoked key to close', timeoutMs: 10_000 });
    await live;
    await socket.dispose();
    expect((await server.gql(ADMIN_KEY, revoke, { id: key.id })).body.data!.revokeOperatorKey.revokedAt).toBe(first);
    expect((await server.gql(ADMIN_KEY, revoke, { id: NO_SUCH_ID })).body.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
    expect((await server.gql(ADMIN_KEY, revoke, { id: 'not-a-uuid' })).body.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
  });

  test('a VIEWER reads what an OWNER reads except operatorKeys, and partners never show a key', async () => {
    const viewer = keys['VIEWER key'];
    const partners = await server.gql(viewer, '{ partners(first: 100) { totalCount edges { node { id name lastUsedAt revokedAt campaignScope } } } }');
    expect(partners.body.errors).toBeUndefined();
    expect(JSON.stringify(partners.body)).not.toMatch(/tsp_/);
    const stats = await server.gql(viewer, 'query($id: ID!) { campaign(id: $id) { stats { total } timeline(bucket: MINUTE) { allocated } partnerStats { allocated } allocations(first: 1) { totalCount } } }', { id: ids.campaignId });
    expect(stats.body.errors).toBeUndefined();
    expect(stats.body.data!.campaign.stats.total).toBeGreaterThanOrEqual(50);
  });
});

// ----- scoped partner keys -----------------------------------------------------------------------

/** The partner operations (no role): each names a campaign, an allocation or an entry. */
const partnerMutations = mutationFields.filter((f) => !rules.has(f)).map((f) => f.slice('Mutation.'.length));
describe('a scoped partner key', () => {
  let partner: { id: string; apiKey: string };
  let inside: string;
  const outside: Record<Target, string> = { campaign: '', allocation: '', waitlistEntry: '', ballotEntry: '' };
  const q = (query: string, variables?: Record<string, unknown>) => server.gql(partner.apiKey, query, variables);

  beforeAll(async () => {
    partner = await server.createPartner('scope probe');
    inside = await server.openCampaignWith(5);
    // Before the scope, the partner holds a ticket in `outside`, waits on a sold-out waitlist and
    // enters a ballot: its own earlier objects elsewhere, which the scope must hide.
    outside.campaign = await server.openCampaignWith(5);
    const held = await q('mutation($c: ID!) { holdTicket(input: { campaignId: $c, holder: "h", ttlSeconds: 600 }) { allocation { id } } }', { c: outside.campaign });
    outside.allocation = held.body.data!.holdTicket.allocation.id;
    const waitlisted = await server.openCampaignWith(0, { releasePolicy: 'WAITLIST_FIRST' });
    const joined = await q('mutation($c: ID!) { joinWaitlist(input: { campaignId: $c, holder: "w" }) { entry { id } error { code } } }', { c: waitlisted });
    expect(joined.body.data!.joinWaitlist.error).toBeNull();
    outside.waitlistEntry = joined.body.data!.joinWaitlist.entry.id;
    const ballot = await server.openCampaignWith(5, { mode: 'BALLOT' });
    const entered = await q('mutation($c: ID!) { enterBallot(input: { campaignId: $c, holder: "b" }) { entry { id } error { code } } }', { c: ballot });
    expect(entered.body.data!.enterBallot.error).toBeNull();
    outside.ballotEntry = entered.body.data!.enterBallot.entry.id;
    const scoped = await server.gql(ADMIN_KEY, SCOPE, { p: partner.id, ids: [inside] });
    expect(scoped.body.data!.scopePartnerKey.campaignScope).toEqual([inside]);
  });

  test('every partner operation names a campaign, an allocation or an entry', () => {
    expect(partnerMutations.filter((f) => !['createWebhook', 'deleteWebhook', 'redeliverWebhook'].includes(f)).map((f) => [f, targetOf(f)]).filter(([, t]) => t === null)).toEqual([]);
  });

  /** The answer, with the id it was asked about replaced: the comparison must not see which id it was. */
  const answerTo = async (field: string, id: string) => {
    const definition = schema.getMutationType()!.getFields()[field]!;
    const target = targetOf(field)!;
    const key = target === 'campaign' ? 'campaignId' : target === 'allocation' ? 'allocationId' : 'entryId';
    const probe = probeFor(`Mutation.${field}`, { [key]: id });
    const query = probe.query.replace(/ \{ __typename \} \}$/, ` ${selectionOf(definition.type)} }`);
    const r = await q(query, probe.variables);
    return JSON.stringify({ status: r.status, body: r.body }).split(id).join('<id>');
  };

  describe.each(partnerMutations.filter((f) => targetOf(f) !== null).map((f) => [f] as const))('%s', (field) => {
    test('outside its campaigns answers exactly as for one that does not exist, and changes nothing', async () => {
      const target = targetOf(field)!;
      const before = (await server.sql.query('SELECT (SELECT count(*) FROM allocations) + (SELECT count(*) FROM waitlist_entries) + (SELECT count(*) FROM ballot_entries) AS n, (SELECT string_agg(status::text, \',\' ORDER BY id) FROM allocations) AS s')).rows[0];
      const missing = await answerTo(field, NO_SUCH_ID);
      expect(await answerTo(field, outside[target])).toBe(missing);
      expect(missing).toMatch(/NOT_FOUND/);
      const after = (await server.sql.query('SELECT (SELECT count(*) FROM allocations) + (SELECT count(*) FROM waitlist_entries) + (SELECT count(*) FROM ballot_entries) AS n, (SELECT string_agg(status::text, \',\' ORDER BY id) FROM allocations) AS s')).rows[0];
      expect(after).toEqual(before);
    });
  });

  test('reads outside its campaigns are null, and campaigns lists only its scope', async () => {
    const read = await q(
      'query($c: ID!, $a: ID!, $w: ID!, $b: ID!) { campaign(id: $c) { id } allocation(id: $a) { id } waitlistEntry(id: $w) { id } ballotEntry(id: $b) { id } campaigns(first: 100) { totalCount edges { node { id } } } }',
      { c: outside.campaign, a: outside.allocation, w: outside.waitlistEntry, b: outside.ballotEntry },
    );
    expect(read.body.errors).toBeUndefined();
    expect(read.body.data).toEqual({ campaign: null, allocation: null, waitlistEntry: null, ballotEntry: null, campaigns: { totalCount: 1, edges: [{ node: { id: inside } }] } });
  });

  test('inside its scope it claims as before', async () => {
    const r = await q('mutation($c: ID!) { claimTicket(input: { campaignId: $c, holder: "in" }) { allocation { id } error { code } } }', { c: inside });
    expect(r.body.data!.claimTicket.error).toBeNull();
  });

  test('the scope survives key rotation, [] means no campaign, and null restores every campaign', async () => {
    const rotated = await server.gql(ADMIN_KEY, 'mutation($p: ID!) { rotateApiKey(partnerId: $p) { apiKey } }', { p: partner.id });
    partner = { ...partner, apiKey: rotated.body.data!.rotateApiKey.apiKey };
    expect((await q('query($c: ID!) { campaign(id: $c) { id } }', { c: outside.campaign })).body.data!.campaign).toBeNull();

    await server.gql(ADMIN_KEY, SCOPE, { p: partner.id, ids: [] });
    const none = await q('mutation($c: ID!) { claimTicket(input: { campaignId: $c, holder: "none" }) { error { code } } }', { c: inside });
    expect(none.body.data!.claimTicket.error.code).toBe('CAMPAIGN_NOT_FOUND');
    expect((await q('{ campaigns { totalCount edges { node { id } } } }')).body.data!.campaigns).toEqual({ totalCount: 0, edges: [] });

    const restored = await server.gql(ADMIN_KEY, SCOPE, { p: partner.id, ids: null });
    expect(restored.body.data!.scopePartnerKey.campaignScope).toBeNull();
    expect((await q('query($a: ID!) { allocation(id: $a) { id } }', { a: outside.allocation })).body.data!.allocation).toEqual({ id: outside.allocation });
    await server.gql(ADMIN_KEY, SCOPE, { p: partner.id, ids: [inside] });
  });

  test.each([
    ['an id that does not exist', () => [NO_SUCH_ID], 'CAMPAIGN_NOT_FOUND'],
    ['an id that is not a UUID', () => ['nope'], 'CAMPAIGN_NOT_FOUND'],
    ['1,001 campaigns', () => Array.from({ length: 1001 }, (_, i) => `00000000-0000-0000-0000-${String(i).padStart(12, '0')}`), 'BAD_USER_INPUT'],
  ])('scopePartnerKey with %s is refused and leaves the scope as it was', async (_what, campaignIds, code) => {
    const r = await server.gql(ADMIN_KEY, SCOPE, { p: partner.id, ids: campaignIds() });
    expect(r.body.errors?.[0]?.extensions?.code).toBe(code);
    if (code === 'CAMPAIGN_NOT_FOUND') expect(r.body.errors?.[0]?.extensions?.campaignId).toBe(campaignIds()[0]);
    const { rows } = await server.sql.query('SELECT scoped, campaign_scope::text[] AS scope FROM partners WHERE id = $1', [partner.id]);
    expect(rows[0]).toEqual({ scoped: true, scope: [inside] });
  });

  test('scopePartnerKey of an unknown partner is NOT_FOUND', async () => {
    expect((await server.gql(ADMIN_KEY, SCOPE, { p: NO_SUCH_ID, ids: [] })).body.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
  });
});
