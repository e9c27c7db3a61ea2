// Format characters (Unicode category Cf) are refused wherever control characters are: bidi
// overrides (U+202E), zero-width characters (U+200B) and the byte order mark (U+FEFF) are invisible,
// and holders compare exactly, so `alice` and `alice` + U+200B would be two holders that display
// alike in the console and the CSV export. Each refusal is the one a control character gets —
// INVALID_INPUT in the payload of a partner operation, BAD_USER_INPUT naming the field elsewhere —
// and nothing is stored. (Mutations are served over HTTP only: over graphql-ws any mutation is
// refused before its arguments are read, transports.test.ts.)
import * as validate from '../src/validation';
import { ADMIN_KEY, CLAIM, HOLD, startTestServer, type GraphQLResponse, type TestServer } from './helpers/testServer';

const FORMAT: [string, string][] = [
  ['U+202E (right-to-left override)', '\u202e'],
  ['U+200B (zero-width space)', '\u200b'],
  ['U+FEFF (byte order mark)', '\ufeff'],
];
/** The refusal every format character must match. */
const CONTROL = '\u0007';

let server: TestServer;
let partner: { id: string; apiKey: string };
let firstCome: string;
let waitlisted: string;
let ballot: string;

beforeAll(async () => {
  server = await startTestServer();
  partner = await server.createPartner('Format characters');
  firstCome = await server.openCampaignWith(5);
  waitlisted = await server.openCampaignWith(0, { releasePolicy: 'WAITLIST_FIRST' });
  ballot = await server.openCampaignWith(5, { mode: 'BALLOT' });
});
afterAll(() => server.stop());

/** A partner operation taking a holder, and where its answer's error code is. */
const HOLDER_OPERATIONS: [string, string, () => Record<string, unknown>][] = [
  ['claimTicket', CLAIM, () => ({ campaignId: firstCome })],
  ['holdTicket', HOLD, () => ({ campaignId: firstCome, ttlSeconds: 60 })],
  ['claimTickets', 'mutation($input: ClaimTicketsInput!) { claimTickets(input: $input) { allocations { id } error { code message } } }', () => ({ campaignId: firstCome, quantity: 2 })],
  ['joinWaitlist', 'mutation($input: JoinWaitlistInput!) { joinWaitlist(input: $input) { entry { id } error { code message } } }', () => ({ campaignId: waitlisted })],
  ['enterBallot', 'mutation($input: EnterBallotInput!) { enterBallot(input: $input) { entry { id } error { code message } } }', () => ({ campaignId: ballot })],
];

const stored = async () =>
  (
    await server.sql.query<{ n: number }>(
      `SELECT (SELECT count(*) FROM allocations) + (SELECT count(*) FROM waitlist_entries) + (SELECT count(*) FROM ballot_entries) AS n`,
    )
  ).rows[0]!.n;

const payloadError = (res: GraphQLResponse, operation: string) => (res.body.data?.[operation] as { error: { code: string; message: string } | null } | undefined)?.error;

describe.each(HOLDER_OPERATIONS)('%s', (operation, query, input) => {
  test.each(FORMAT)('a holder holding %s is refused as a control character is, and nothing is stored', async (_name, character) => {
    const before = await stored();
    const control = await server.gql(partner.apiKey, query, { input: { ...input(), holder: `alice${CONTROL}` } });
    const format = await server.gql(partner.apiKey, query, { input: { ...input(), holder: `alice${character}` } });
    expect(format.body.errors).toBeUndefined();
    expect(payloadError(format, operation)).toEqual(payloadError(control, operation));
    expect(payloadError(format, operation)).toEqual({ code: 'INVALID_INPUT', message: expect.stringMatching(/^holder must not contain control characters or format characters/) });
    expect(await stored()).toBe(before);
  });
});

test('the same holder without the format character is accepted', async () => {
  const res = await server.gql(partner.apiKey, HOLDER_OPERATIONS[0]![1], { input: { campaignId: firstCome, holder: 'alice' } });
  expect(payloadError(res, 'claimTicket')).toBeNull();
});

test.each([
  ['createPartner.input.name', ADMIN_KEY, 'mutation($v: String!) { createPartner(input: { name: $v }) { partner { id } } }', (v: string) => ({ v }), 'name'],
  ['createCampaign.input.name', ADMIN_KEY, 'mutation($v: String!) { createCampaign(input: { name: $v }) { campaign { id } } }', (v: string) => ({ v }), 'name'],
  ['loadTickets.codes', ADMIN_KEY, 'mutation($c: ID!, $v: String!) { loadTickets(campaignId: $c, codes: [$v]) { loaded } }', (v: string) => ({ c: firstCome, v }), 'codes'],
  ['generateTickets.prefix', ADMIN_KEY, 'mutation($c: ID!, $v: String) { generateTickets(campaignId: $c, count: 1, prefix: $v) { loaded } }', (v: string) => ({ c: firstCome, v }), 'prefix'],
  ['createWebhook.input.url', 'partner', 'mutation($v: String!) { createWebhook(input: { url: $v, events: [ALLOCATION_CREATED] }) { endpoint { id } } }', (v: string) => ({ v: `https://example.com/${v}` }), 'url'],
  ['Campaign.allocations(holder:)', ADMIN_KEY, 'query($c: ID!, $v: String) { campaign(id: $c) { allocations(holder: $v) { totalCount } } }', (v: string) => ({ c: firstCome, v }), 'holder'],
])('%s refuses a format character as it refuses a control character: BAD_USER_INPUT naming the field', async (_name, key, query, variables, field) => {
  const as = key === 'partner' ? partner.apiKey : key;
  const control = await server.gql(as, query, variables(`x${CONTROL}`));
  for (const [, character] of FORMAT) {
    const format = await server.gql(as, query, variables(`x${character}`));
    const code = (r: GraphQLResponse) => r.body.errors?.map((e) => [e.extensions?.code, e.extensions?.field]);
    expect(code(format)).toEqual([['BAD_USER_INPUT', field]]);
    expect(code(format)).toEqual(code(control));
  }
});

describe('validate.text', () => {
  test.each([
    ['the soft hyphen U+00AD', '\u00ad'],
    ['a bidi isolate U+2066', '\u2066'],
    ['the word joiner U+2060', '\u2060'],
    ['a tag character U+E0041 (outside the BMP)', '\u{e0041}'],
    ['DEL', '\u007f'],
    ['a C1 control U+0085', '\u0085'],
  ])('refuses %s', (_name, character) => {
    expect(() => validate.text('holder', `a${character}b`, 256)).toThrow(/must not contain control characters or format characters/);
  });

  test.each(['Zoë', 'Łódź', '日本語', 'عبد الله', '🎟️ 42', 'o’brien'])('accepts %s', (value) => {
    expect(validate.text('holder', value, 256)).toBe(value);
  });
});
