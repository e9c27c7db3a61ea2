// @dialects postgresql citus
// perHolderLimit: exact, also for many parallel claims by one holder.
import { assertPoolInvariants, startTestServer, type TestServer } from './helpers/testServer';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ database: { poolSize: 20 } });
});
afterAll(() => server.stop());

test('thirty parallel claims by one holder under a limit of 3 allocate exactly 3', async () => {
  const partner = await server.createPartner();
  const campaignId = await server.openCampaignWith(50, { perHolderLimit: 3 });
  const results = await Promise.all(Array.from({ length: 30 }, () => server.claim(partner.apiKey, { campaignId, holder: 'greedy' })));
  const codes = results.map((r) => r.allocation?.ticket.code ?? r.error!.code);
  expect(codes.filter((c) => c === 'HOLDER_LIMIT_REACHED')).toHaveLength(27);
  const { rows } = await server.sql.query(
    `SELECT count(*)::int AS n FROM allocations WHERE campaign_id = $1 AND holder = 'greedy' AND status IN ('ACTIVE', 'HELD')`,
    [campaignId],
  );
  expect(rows[0].n).toBe(3);
  await assertPoolInvariants(server.sql, campaignId);
});

test('the limit counts per partner: the same holder name at another partner has its own allowance', async () => {
  const a = await server.createPartner('A');
  const b = await server.createPartner('B');
  const campaignId = await server.openCampaignWith(10, { perHolderLimit: 1 });
  expect((await server.claim(a.apiKey, { campaignId, holder: 'same' })).allocation).not.toBeNull();
  expect((await server.claim(b.apiKey, { campaignId, holder: 'same' })).allocation).not.toBeNull();
  expect((await server.claim(a.apiKey, { campaignId, holder: 'same' })).error?.code).toBe('HOLDER_LIMIT_REACHED');
});

test('releasing an allocation frees a place under the limit', async () => {
  const partner = await server.createPartner();
  const campaignId = await server.openCampaignWith(10, { perHolderLimit: 1 });
  const first = (await server.claim(partner.apiKey, { campaignId, holder: 'returner' })).allocation!;
  expect((await server.claim(partner.apiKey, { campaignId, holder: 'returner' })).error?.code).toBe('HOLDER_LIMIT_REACHED');
  const released = await server.gql(partner.apiKey, 'mutation($id: ID!) { releaseAllocation(allocationId: $id) { allocation { status } error { code } } }', {
    id: first.id,
  });
  expect(released.body.data!.releaseAllocation.allocation.status).toBe('RELEASED');
  expect((await server.claim(partner.apiKey, { campaignId, holder: 'returner' })).allocation).not.toBeNull();
});

test('many holders racing under a limit each get at most their allowance and the pool is never over-allocated', async () => {
  const partner = await server.createPartner();
  const campaignId = await server.openCampaignWith(25, { perHolderLimit: 2 });
  await Promise.all(Array.from({ length: 120 }, (_, i) => server.claim(partner.apiKey, { campaignId, holder: `h${i % 20}` })));
  const { rows } = await server.sql.query(
    `SELECT holder, count(*)::int AS n FROM allocations WHERE campaign_id = $1 AND status = 'ACTIVE' GROUP BY holder`,
    [campaignId],
  );
  expect(Math.max(...rows.map((r) => r.n))).toBeLessThanOrEqual(2);
  const stats = await assertPoolInvariants(server.sql, campaignId);
  expect(stats.allocated).toBe(25); // demand (20 holders x 2 = 40) exceeds the pool: it must fill
});
