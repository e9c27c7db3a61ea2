// closeCampaign is linearizable: once it has returned, no further claim commits — and it is not
// starved by a storm of claims (docs/CORRECTNESS.md §4).
import { assertPoolInvariants, ADMIN_KEY, CLAIM, startTestServer, type ClaimPayload, type TestServer } from './helpers/testServer';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ database: { poolSize: 12 } });
});
afterAll(() => server.stop());

const CLOSE = 'mutation($id: ID!) { closeCampaign(id: $id) { campaign { status stats { total allocated held available } } } }';
const count = async (campaignId: string) =>
  (await server.sql.query(`SELECT count(*)::int AS n FROM allocations WHERE campaign_id = $1`, [campaignId])).rows[0].n as number;

test('no claim commits after closeCampaign has returned, and close goes through in the middle of a storm', async () => {
  const partners = await Promise.all([server.createPartner('P1'), server.createPartner('P2'), server.createPartner('P3')]);
  const campaignId = await server.openCampaignWith(5000);
  let closeReturned = false;
  const answeredAfterClose: string[] = [];

  const storm = Array.from({ length: 600 }, (_, i) =>
    server.gql<ClaimPayload>(partners[i % 3]!.apiKey, CLAIM, { input: { campaignId, holder: `h${i}` } }).then((r) => {
      if (closeReturned) answeredAfterClose.push(r.body.data!.claimTicket.error?.code ?? 'ALLOCATED');
      return r;
    }),
  );
  await new Promise((resolve) => setTimeout(resolve, 150));
  const closed = await server.gql(ADMIN_KEY, CLOSE, { id: campaignId });
  const atClose = await count(campaignId);
  closeReturned = true;
  expect(closed.body.data!.closeCampaign.campaign.status).toBe('CLOSED');

  const results = await Promise.all(storm);
  expect(await count(campaignId)).toBe(atClose);
  // The close was not starved: part of the storm was still waiting and got refused.
  expect(answeredAfterClose.filter((c) => c === 'CAMPAIGN_NOT_OPEN').length).toBeGreaterThan(0);
  const granted = results.filter((r) => r.body.data!.claimTicket.allocation).length;
  const refused = results.filter((r) => r.body.data!.claimTicket.error?.code === 'CAMPAIGN_NOT_OPEN').length;
  expect(granted).toBe(atClose);
  expect(granted + refused).toBe(600);
  // The stats closeCampaign answered are the final ones.
  expect(closed.body.data!.closeCampaign.campaign.stats.allocated).toBe(atClose);
  await assertPoolInvariants(server.sql, campaignId);
});

test('a claim that arrives after close is refused with CAMPAIGN_NOT_OPEN', async () => {
  const partner = await server.createPartner();
  const campaignId = await server.openCampaignWith(3);
  await server.gql(ADMIN_KEY, CLOSE, { id: campaignId });
  const r = await server.gql<ClaimPayload>(partner.apiKey, CLAIM, { input: { campaignId, holder: 'late' } });
  expect(r.body.data!.claimTicket).toMatchObject({ allocation: null, error: { code: 'CAMPAIGN_NOT_OPEN' } });
  expect(await count(campaignId)).toBe(0);
});

test('close waits for a claim already in flight and that claim commits before close returns', async () => {
  const partner = await server.createPartner();
  const campaignId = await server.openCampaignWith(3);
  // A claim in flight holds the gate shared; simulate a slow one by holding it from SQL.
  const inFlight = await server.sql.connect();
  try {
    await inFlight.query('BEGIN');
    await inFlight.query(`SELECT * FROM tessera_claim_gate($1, $2, 'slow', NULL, 1, 1)`, [campaignId, partner.id]);
    let closeDone = false;
    const close = server.gql(ADMIN_KEY, CLOSE, { id: campaignId }).then((r) => {
      closeDone = true;
      return r;
    });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(closeDone).toBe(false);
    await inFlight.query('COMMIT');
    expect((await close).body.data!.closeCampaign.campaign.status).toBe('CLOSED');
  } finally {
    inFlight.release();
  }
});
