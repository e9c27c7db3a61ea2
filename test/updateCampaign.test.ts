// updateCampaign changes what an operator may still change (issue 27, item 8): the hold cap, the
// low-stock threshold and the waitlist offer time of a DRAFT or OPEN campaign, and the release
// policy while it is DRAFT — fixed once it opens, as tickets already returned went where the old one
// said. Each change is checked against the others (an offer is a hold: never longer than the cap).
import { ADMIN_KEY, startTestServer, type TestServer } from './helpers/testServer';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.stop());

const UPDATE = `mutation($id: ID!, $input: UpdateCampaignInput!) {
  updateCampaign(id: $id, input: $input) { campaign { status releasePolicy maxHoldSeconds lowStockThreshold waitlistOfferSeconds } }
}`;
const codes = (errors: { extensions?: Record<string, unknown> }[] | undefined) => (errors ?? []).map((e) => e.extensions?.code);
const update = (id: string, input: Record<string, unknown>) => server.gql(ADMIN_KEY, UPDATE, { id, input });

test('a DRAFT campaign takes a new release policy with its offer time, hold cap and low-stock threshold; read back as set', async () => {
  const id = await server.createCampaign({ name: 'Draft' });
  const answer = await update(id, { releasePolicy: 'WAITLIST_FIRST', maxHoldSeconds: 1200, waitlistOfferSeconds: 600, lowStockThreshold: 5 });
  expect(answer.body.errors).toBeUndefined();
  expect(answer.body.data!.updateCampaign.campaign).toEqual({
    status: 'DRAFT',
    releasePolicy: 'WAITLIST_FIRST',
    maxHoldSeconds: 1200,
    lowStockThreshold: 5,
    waitlistOfferSeconds: 600,
  });
  // And back again, and null where null means none.
  const again = await update(id, { releasePolicy: 'VOID', maxHoldSeconds: null, lowStockThreshold: null });
  expect(again.body.data!.updateCampaign.campaign).toMatchObject({ releasePolicy: 'VOID', maxHoldSeconds: null, lowStockThreshold: null, waitlistOfferSeconds: 600 });
});

test('once open, the release policy is fixed (INVALID_TRANSITION, nothing changed), while the same policy, the hold cap and the threshold still change', async () => {
  const id = await server.openCampaignWith(5);
  const refused = await update(id, { releasePolicy: 'VOID', lowStockThreshold: 2 });
  expect(codes(refused.body.errors)).toEqual(['INVALID_TRANSITION']);
  expect(refused.body.errors![0]!.message).toMatch(/release policy is fixed once it opens/);
  const { rows } = await server.sql.query('SELECT release_policy::text AS policy, low_stock_threshold FROM campaigns WHERE id = $1', [id]);
  expect(rows[0]).toEqual({ policy: 'POOL', low_stock_threshold: null });
  const kept = await update(id, { releasePolicy: 'POOL', maxHoldSeconds: 60, waitlistOfferSeconds: 60, lowStockThreshold: 2 });
  expect(kept.body.errors).toBeUndefined();
  expect(kept.body.data!.updateCampaign.campaign).toMatchObject({ status: 'OPEN', releasePolicy: 'POOL', maxHoldSeconds: 60, lowStockThreshold: 2 });
});

test('a lowered hold cap applies to the next hold at once', async () => {
  const partner = await server.createPartner();
  const id = await server.openCampaignWith(5);
  expect((await server.hold(partner.apiKey, { campaignId: id, holder: 'a', ttlSeconds: 300 })).allocation).not.toBeNull();
  await update(id, { maxHoldSeconds: 120, waitlistOfferSeconds: 120 });
  expect((await server.hold(partner.apiKey, { campaignId: id, holder: 'b', ttlSeconds: 300 })).error?.code).toBe('INVALID_INPUT');
  expect((await server.hold(partner.apiKey, { campaignId: id, holder: 'c', ttlSeconds: 120 })).allocation).not.toBeNull();
});

test.each([
  ['a cap below the campaign offer time', { maxHoldSeconds: 60 }, 'maxHoldSeconds', /below the campaign's waitlistOfferSeconds \(900\)/],
  ['an offer time above the cap given with it', { maxHoldSeconds: 100, waitlistOfferSeconds: 101 }, 'waitlistOfferSeconds', /waitlistOfferSeconds/],
  ['a null release policy', { releasePolicy: null }, 'releasePolicy', /cannot be null/],
  ['a null offer time', { waitlistOfferSeconds: null }, 'waitlistOfferSeconds', /cannot be null/],
  ['a cap of 0', { maxHoldSeconds: 0 }, 'maxHoldSeconds', /maxHoldSeconds/],
  ['a threshold of 0', { lowStockThreshold: 0 }, 'lowStockThreshold', /lowStockThreshold/],
])('%s is BAD_USER_INPUT naming the field, and changes nothing', async (_label, input, field, message) => {
  const id = await server.createCampaign({ name: 'Checked' });
  const answer = await update(id, input);
  expect(codes(answer.body.errors)).toEqual(['BAD_USER_INPUT']);
  expect(answer.body.errors![0]!.extensions!.field).toBe(field);
  expect(answer.body.errors![0]!.message).toMatch(message);
  const { rows } = await server.sql.query('SELECT release_policy::text AS policy, max_hold_seconds, waitlist_offer_seconds, low_stock_threshold FROM campaigns WHERE id = $1', [id]);
  expect(rows[0]).toEqual({ policy: 'POOL', max_hold_seconds: null, waitlist_offer_seconds: 900, low_stock_threshold: null });
});

test('a BALLOT campaign cannot take WAITLIST_FIRST, as at its creation', async () => {
  const id = await server.createCampaign({ name: 'Ballot', mode: 'BALLOT' });
  const answer = await update(id, { releasePolicy: 'WAITLIST_FIRST' });
  expect(codes(answer.body.errors)).toEqual(['BAD_USER_INPUT']);
  expect(answer.body.errors![0]!.extensions!.field).toBe('releasePolicy');
});
