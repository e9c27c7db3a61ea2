// @dialects postgresql citus
// Group claims: concurrent claimTicket requests served by shared statements.
// (Every race test in this suite runs with group claims on; these tests check the batching itself.)
import { createDatabase } from '../src/db/client';
import { ClaimBatcher } from '../src/claim/batcher';
import { dialectOf } from '../src/db/dialect';
import { citusNodes } from './helpers/citus';
import { ADMIN_KEY, assertPoolInvariants, startTestServer, TEST_DATABASE_CONFIG, type TestServer } from './helpers/testServer';

// On one PostgreSQL groups mix campaigns; on Citus (npm run test:citus) each group is of one
// campaign, whose node runs it (docs/SCALING.md, "How groups map to shards").
const onCitus = citusNodes() !== null;

let server: TestServer;
beforeAll(async () => {
  // A pool of 2: one claim statement in flight at a time (half the pool), so overlapping claims group.
  server = await startTestServer({ database: { poolSize: 2 }, config: { claimBatchMax: 32 } });
});
afterAll(() => server.stop());

async function batchesServed(): Promise<number> {
  const text = await (await fetch(server.url.replace('/graphql', '/metrics'))).text();
  return Number(/tessera_claim_batch_size_count (\d+)/.exec(text)?.[1] ?? 0);
}

test('a burst of claims is served by group statements, each allocation with its own holder and metadata', async () => {
  const partner = await server.createPartner();
  const campaignId = await server.openCampaignWith(300);
  const before = await batchesServed();
  const results = await Promise.all(
    Array.from({ length: 200 }, (_, i) => server.claim(partner.apiKey, { campaignId, holder: `g-${i}`, metadata: { i }, idempotencyKey: `group-${i}` })),
  );
  expect(await batchesServed()).toBeGreaterThan(before);
  results.forEach((r, i) => {
    const allocation = r.allocation!;
    expect(allocation).toMatchObject({ holder: `g-${i}`, metadata: { i }, idempotencyKey: `group-${i}` });
  });
  const { rows } = await server.sql.query('SELECT holder, metadata, idempotency_key FROM allocations WHERE campaign_id = $1', [campaignId]);
  expect(rows).toHaveLength(200);
  for (const row of rows) expect(row.metadata).toEqual({ i: Number(row.holder.slice(2)) });
  await assertPoolInvariants(server.sql, campaignId);
});

test('requests with one key in one burst get one allocation, never a second ticket', async () => {
  const partner = await server.createPartner();
  const campaignId = await server.openCampaignWith(100);
  const results = await Promise.all(
    Array.from({ length: 60 }, (_, i) => server.claim(partner.apiKey, { campaignId, holder: `k-${i % 3}`, idempotencyKey: `shared-${i % 3}` })),
  );
  expect(results.filter((r) => !r.allocation).map((r) => r.error)).toEqual([]);
  const byKey = new Map<string, Set<string>>();
  results.forEach((r, i) => {
    const key = `shared-${i % 3}`;
    byKey.set(key, (byKey.get(key) ?? new Set()).add(r.allocation!.id));
  });
  for (const ids of byKey.values()) expect(ids.size).toBe(1);
  const { rows } = await server.sql.query('SELECT count(*)::int AS n FROM allocations WHERE campaign_id = $1', [campaignId]);
  expect(rows[0].n).toBe(3);
});

test('requests with one key waiting for one campaign follow the first one: one statement answers them all', async () => {
  const partner = await server.createPartner();
  const campaignId = await server.openCampaignWith(10);
  // A database of the batcher's own, so that its statement count is only the batcher's.
  const db = createDatabase({ ...TEST_DATABASE_CONFIG, url: server.databaseUrl, dialect: dialectOf(onCitus ? 'citus' : 'postgresql') });
  try {
    const batcher = new ClaimBatcher(db, { maxBatch: 32, maxInFlight: 1, maxWaitMs: 60_000, maxWaiting: 0 });
    const request = { campaignId, partnerId: partner.id, holder: 'burst', metadata: null, idempotencyKey: 'burst', requestHash: 'same' };
    await db.prisma.$queryRaw`SELECT 1`; // connected: the count below is the claims' alone
    const before = db.statements.count;
    // The first goes alone at once; the other 29 wait for it, then one of them goes and 28 follow it.
    const answers = await Promise.all(Array.from({ length: 30 }, () => batcher.submit(request)));
    const statements = db.statements.count - before;
    expect(answers[0]).toMatchObject({ kind: 'CLAIMED' });
    const id = (answers[0] as { allocation: { id: string } }).allocation.id;
    expect(answers.slice(1)).toEqual(Array.from({ length: 29 }, () => ({ kind: 'PRIOR', campaignId, allocationId: id })));
    // Two claims' statements (on Citus each a transaction of four: BEGIN, the key's look, the claim,
    // COMMIT); a statement each, as before followers, would be 30 (120 on Citus).
    expect(statements).toBeLessThanOrEqual(onCitus ? 8 : 2);
  } finally {
    await db.close();
  }
});

test('holder limits and quotas stay exact when a batch holds many requests of one holder and one partner', async () => {
  const partner = await server.createPartner('Capped');
  const other = await server.createPartner('Free');
  const campaignId = await server.openCampaignWith(200, { perHolderLimit: 2 });
  await server.gql(
    ADMIN_KEY,
    'mutation($c: ID!, $p: ID!) { setPartnerQuota(campaignId: $c, partnerId: $p, quota: 7) { campaign { id } } }',
    { c: campaignId, p: partner.id },
  );
  const results = await Promise.all([
    ...Array.from({ length: 40 }, (_, i) => server.claim(partner.apiKey, { campaignId, holder: `h-${i % 4}` })),
    ...Array.from({ length: 40 }, (_, i) => server.claim(other.apiKey, { campaignId, holder: `h-${i % 4}` })),
  ]);
  const capped = results.slice(0, 40).filter((r) => r.allocation).length;
  const free = results.slice(40).filter((r) => r.allocation).length;
  expect(capped).toBe(7); // quota 7 < 4 holders x limit 2
  expect(free).toBe(8); // 4 holders x limit 2
  const codes = results.slice(0, 40).map((r) => r.error?.code ?? 'OK');
  expect(codes.filter((c) => c !== 'OK').every((c) => c === 'PARTNER_QUOTA_REACHED' || c === 'HOLDER_LIMIT_REACHED')).toBe(true);
  await assertPoolInvariants(server.sql, campaignId);
});

test('a pool smaller than the burst is sold out exactly: every ticket allocated once, the rest SOLD_OUT', async () => {
  const partner = await server.createPartner();
  const campaignId = await server.openCampaignWith(37);
  const results = await Promise.all(Array.from({ length: 150 }, (_, i) => server.claim(partner.apiKey, { campaignId, holder: `s-${i}` })));
  expect(results.filter((r) => r.allocation)).toHaveLength(37);
  expect(results.filter((r) => r.error?.code === 'SOLD_OUT')).toHaveLength(113);
  await assertPoolInvariants(server.sql, campaignId);
});

test(onCitus ? 'claims for different campaigns go in groups of one campaign each, each judged on its own campaign' : 'claims for different campaigns share group statements, each judged on its own campaign', async () => {
  const partner = await server.createPartner();
  const campaigns = await Promise.all(Array.from({ length: 8 }, () => server.openCampaignWith(15)));
  // 20 claims per campaign for 15 tickets each: every campaign sells out, none over-allocates.
  const results = await Promise.all(
    campaigns.flatMap((campaignId, c) => Array.from({ length: 20 }, (_, i) => server.claim(partner.apiKey, { campaignId, holder: `x-${c}-${i}` }))),
  );
  const codes = results.map((r) => r.allocation?.id ?? r.error!.code);
  expect(codes.filter((c) => c === 'SOLD_OUT')).toHaveLength(8 * 5);
  // Rows inserted by one statement share its transaction id: on one PostgreSQL some transaction
  // wrote allocations of several campaigns; on Citus none did, and some wrote several of one.
  const { rows } = await server.sql.query(
    `SELECT max(campaigns)::int AS widest, max(allocations)::int AS largest
       FROM (SELECT xmin::text, count(DISTINCT campaign_id) AS campaigns, count(*) AS allocations
               FROM allocations WHERE campaign_id = ANY($1::uuid[]) GROUP BY 1) x`,
    [campaigns],
  );
  if (onCitus) expect(rows[0]).toEqual({ widest: 1, largest: expect.any(Number) });
  else expect(rows[0].widest).toBeGreaterThan(1);
  expect(rows[0].largest).toBeGreaterThan(1);
  for (const campaignId of campaigns) {
    const stats = await assertPoolInvariants(server.sql, campaignId);
    expect(stats).toMatchObject({ total: 15, allocated: 15, available: 0 });
  }
});
