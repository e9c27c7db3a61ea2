// Listing allocations costs a constant number of statements, whatever the page size: DataLoader
// batches every per-allocation look-up (ticket, campaign, partner) into one statement per kind.
import { ADMIN_KEY, CLAIM, startTestServer, type TestServer } from './helpers/testServer';

let server: TestServer;
let campaignId: string;
beforeAll(async () => {
  // No sweeper and no webhook dispatcher: their statements would land in the counts.
  server = await startTestServer({ config: { holdSweepIntervalMs: 0, webhooks: { secretKey: undefined, allowPrivateNetworks: false, production: false } } });
  const partners = await Promise.all(['A', 'B', 'C', 'D', 'E'].map((name) => server.createPartner(name)));
  campaignId = await server.openCampaignWith(100);
  for (let i = 0; i < 100; i += 1) {
    await server.gql(partners[i % 5]!.apiKey, CLAIM, { input: { campaignId, holder: `h${i}` } });
  }
});
afterAll(() => server.stop());

const LIST = `query($id: ID!, $first: Int) {
  campaign(id: $id) {
    id name stats { total allocated }
    allocations(first: $first) {
      totalCount
      edges { node { id sequence holder ticket { id code status } partner { id name } campaign { id name status } } }
    }
  }
}`;

async function statementsFor(first: number): Promise<number> {
  const before = server.db.statements.count;
  const r = await server.gql(ADMIN_KEY, LIST, { id: campaignId, first });
  expect(r.body.errors).toBeUndefined();
  expect(r.body.data!.campaign.allocations.edges).toHaveLength(first);
  return server.db.statements.count - before;
}

test('listing 100 allocations with ticket, partner and campaign costs as many statements as listing 10', async () => {
  const ten = await statementsFor(10);
  const hundred = await statementsFor(100);
  expect(hundred).toBe(ten);
});

test('listing 100 allocations with their relations costs at most 6 statements', async () => {
  // campaign, stats, allocation page, count, tickets, partners
  expect(await statementsFor(100)).toBeLessThanOrEqual(6);
});
