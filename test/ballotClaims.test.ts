// @dialects postgresql citus
// Claims on a BALLOT campaign (issue 27): claimTicket, claimTickets and holdTicket keep the contract's
// code, CAMPAIGN_NOT_OPEN, but say why — the campaign gives its tickets by ballot: enterBallot —
// instead of "draft, closed, or outside its window", which is not true of an open ballot. Whether the
// claim goes alone, in a group statement or through the single statement, and whatever the
// campaign's status; a FIRST_COME campaign that is not open keeps the old message.
import { ADMIN_KEY, startTestServer, type TestServer } from './helpers/testServer';

const CLAIM_MANY = 'mutation($input: ClaimTicketsInput!) { claimTickets(input: $input) { allocations { id } error { code message } } }';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.stop());

type Refusal = { code: string; message: string } | null;
async function attempts(key: string, campaignId: string): Promise<Refusal[]> {
  const claim = await server.claim(key, { campaignId, holder: 'c' });
  const hold = await server.hold(key, { campaignId, ttlSeconds: 60 });
  const many = await server.gql(key, CLAIM_MANY, { input: { campaignId, holder: 'm', quantity: 2 } });
  // Concurrent claims: some share group statements, whose refusals come from the first look.
  const burst = await Promise.all(Array.from({ length: 12 }, (_, i) => server.claim(key, { campaignId, holder: `b${i}` })));
  return [claim.error, hold.error, many.body.data!.claimTickets.error, ...burst.map((b) => b.error)];
}

test('an open BALLOT campaign answers every claim and hold CAMPAIGN_NOT_OPEN, saying to enter the ballot, and allocates nothing', async () => {
  const partner = await server.createPartner('ballot');
  const campaignId = await server.openCampaignWith(5, { mode: 'BALLOT' });
  for (const error of await attempts(partner.apiKey, campaignId)) {
    expect(error).toEqual({ code: 'CAMPAIGN_NOT_OPEN', message: expect.stringContaining('enterBallot') });
    expect(error!.message).not.toMatch(/draft|closed|window/i);
  }
  // The admin key's claims too.
  expect((await server.claim(ADMIN_KEY, { campaignId, holder: 'admin' })).error?.message).toContain('enterBallot');
  const { rows } = await server.sql.query('SELECT count(*)::int AS n FROM allocations WHERE campaign_id = $1', [campaignId]);
  expect(rows[0].n).toBe(0);
});

test('a BALLOT campaign that is a draft or closed says the same: it never takes claims; a FIRST_COME draft keeps the draft/closed/window message', async () => {
  const partner = await server.createPartner('others');
  const draftBallot = await server.createCampaign({ mode: 'BALLOT' });
  await server.loadTickets(draftBallot, 2);
  const closedBallot = await server.openCampaignWith(2, { mode: 'BALLOT' });
  await server.gql(ADMIN_KEY, 'mutation($id: ID!) { closeCampaign(id: $id) { campaign { id } } }', { id: closedBallot });
  for (const campaignId of [draftBallot, closedBallot]) {
    const { error } = await server.claim(partner.apiKey, { campaignId, holder: 'x' });
    expect(error).toEqual({ code: 'CAMPAIGN_NOT_OPEN', message: expect.stringContaining('enterBallot') });
  }
  const draft = await server.createCampaign();
  await server.loadTickets(draft, 2);
  const refused = (await server.claim(partner.apiKey, { campaignId: draft, holder: 'x' })).error!;
  expect(refused.code).toBe('CAMPAIGN_NOT_OPEN');
  expect(refused.message).toMatch(/draft, closed, or outside/);
  expect(refused.message).not.toContain('enterBallot');
});
