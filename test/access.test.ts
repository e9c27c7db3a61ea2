// Who may call what, derived from the one declaration (@requires and @audited in schema.graphql):
// every field that needs a role is tried with a partner key (FORBIDDEN, before anything runs) and
// with the admin key (not FORBIDDEN), over the transport that serves it; every @audited one with
// both keys (let through, and recorded with its actor — a partner's only when it declares
// partners: true); every audited one leaves its row. The cases are generated from the schema, so a
// new field cannot be left out.
import { accessRules } from '../src/access';
import { probeFor, schema } from './helpers/probes';
import { ADMIN_KEY, startTestServer, type TestServer } from './helpers/testServer';
import { connectSocket, runOverSocket, socketErrors } from './helpers/ws';

const rules = accessRules(schema);
/** @requires(role: …) fields, and @audited ones (any caller with a key). */
const roleRules = rules.filter((r) => r.role !== null);
const openRules = rules.filter((r) => r.role === null);

/** The mutations a partner key may call (each checks ownership itself). Anything else needs a role. */
const PARTNER_MUTATIONS = ['claimTicket', 'claimTickets', 'confirmHold', 'enterBallot', 'extendHold', 'holdTicket', 'joinWaitlist', 'leaveWaitlist', 'withdrawBallotEntry'];

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

async function run(key: string, probe: ReturnType<typeof probeFor>) {
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
    const probe = probeFor(rule.field, ids);
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
    const probe = probeFor(rule.field, ids);
    const before = rule.audited ? (await server.sql.query(`SELECT count(*)::int AS n FROM audit_log WHERE operation = $1 AND actor = 'admin'`, [rule.field.slice(9)])).rows[0].n : 0;
    const errors = await run(ADMIN_KEY, probe);
    expect(errors.map((e) => e.extensions?.code)).not.toContain('FORBIDDEN');
    if (rule.audited) {
      const { rows } = await server.sql.query(`SELECT count(*)::int AS n FROM audit_log WHERE operation = $1 AND actor = 'admin'`, [rule.field.slice(9)]);
      expect(rows[0].n).toBe(before + 1);
    }
  });
});

test("the @audited fields are the webhook mutations and the rehearsal controls, each audited, and releaseAllocation, audited for operators' calls only", () => {
  expect(openRules).toEqual([
    { field: 'Mutation.advanceTestClock', role: null, audited: true, auditsPartners: true },
    { field: 'Mutation.resetTestCampaign', role: null, audited: true, auditsPartners: true },
    { field: 'Mutation.releaseAllocation', role: null, audited: true, auditsPartners: false },
    ...['createWebhook', 'deleteWebhook', 'redeliverWebhook'].map((m) => ({ field: `Mutation.${m}`, role: null, audited: true, auditsPartners: true })),
  ]);
  expect(roleRules.every((r) => r.auditsPartners)).toBe(true);
});

describe.each(openRules.map((rule) => [rule.field, rule] as const))('%s (@audited)', (_field, rule) => {
  const operation = rule.field.slice('Mutation.'.length);
  test.each([
    ['a partner key', rule.auditsPartners, () => partnerKey, () => `partner:${partnerId}`],
    ['the admin key', true, () => ADMIN_KEY, () => 'admin'],
  ])('%s is let through; audited with its actor and arguments: %s', async (_who, audited, key, actor) => {
    const probe = probeFor(rule.field, ids);
    const before = (await server.sql.query(`SELECT coalesce(max(id), 0) AS id FROM audit_log`)).rows[0].id;
    const errors = await run(key(), probe);
    expect(errors.map((e) => e.extensions?.code)).not.toContain('FORBIDDEN');
    const { rows } = await server.sql.query(`SELECT actor, arguments FROM audit_log WHERE operation = $1 AND id > $2`, [operation, before]);
    expect(rows).toHaveLength(audited ? 1 : 0);
    if (!audited) return;
    expect(rows[0].actor).toBe(actor());
    expect(rows[0].arguments).not.toEqual({});
  });
});
