// @dialects postgresql pgbouncer citus
//
// The dialects' conformance suite: what every database Tessera runs on (src/db/dialect.ts) must do
// alike, run unchanged on each — here on one PostgreSQL (npm test), through PgBouncer (npm run
// test:pgbouncer) and on Citus (npm run test:citus). Each case touches a place where the dialects
// take different paths: how claims that wait together are sent (a group of any campaigns, or per
// campaign), where a keyed claim's key is looked up (in the gate, or on the coordinator first), the
// session settings, the second look, and the webhook outbox (one statement, or per campaign).
import { ADMIN_KEY, assertPoolInvariants, startTestServer, type TestServer } from './helpers/testServer';
import { citusNodes } from './helpers/citus';
import { POOLER_ENV } from './helpers/pgbouncer';

let server: TestServer;
beforeAll(async () => {
  // Claims that wait go together, up to 32 at a time: every case below exercises the groups.
  server = await startTestServer({ config: { claimBatchMax: 32, holdSweepIntervalMs: 0 } });
});
afterAll(() => server.stop());

const STATS = `query($id: ID!) { campaign(id: $id) { stats { total allocated held available } } }`;

async function stats(campaignId: string): Promise<{ total: number; allocated: number; held: number; available: number }> {
  const r = await server.gql<{ campaign: { stats: { total: number; allocated: number; held: number; available: number } } }>(ADMIN_KEY, STATS, { id: campaignId });
  return r.body.data!.campaign.stats;
}

test('the server was handed the dialect of the database it runs on, and its sessions run with its settings', async () => {
  const dialect = server.db.dialect;
  expect(dialect.kind).toBe(citusNodes() !== null ? 'citus' : 'postgresql');
  expect(dialect.pooler).toBe(process.env[POOLER_ENV] ? 'pgbouncer' : 'none');
  const { rows } = await server.db.pool.query<{ plan_cache_mode: string }>('SHOW plan_cache_mode');
  expect(rows[0]!.plan_cache_mode).toBe(dialect.planCacheMode);
});

test('claims sent together over several campaigns: each ticket once, each campaign sold out exactly, the counters right', async () => {
  const partner = await server.createPartner();
  const campaigns = await Promise.all([12, 12, 12].map((n) => server.openCampaignWith(n)));
  // 60 claims for 36 tickets, spread over the three campaigns, all at once.
  const answers = await Promise.all(Array.from({ length: 60 }, (_, i) => server.claim(partner.apiKey, { campaignId: campaigns[i % 3]!, holder: `h${i}` })));
  const codes = answers.flatMap((a) => (a.allocation ? [`${a.allocation.campaign.id}:${a.allocation.ticket.code}`] : []));
  expect(codes).toHaveLength(36);
  expect(new Set(codes).size).toBe(36);
  expect(answers.filter((a) => a.error).map((a) => a.error!.code)).toEqual(Array(24).fill('SOLD_OUT'));
  for (const campaignId of campaigns) {
    await assertPoolInvariants(server.sql, campaignId);
    expect(await stats(campaignId)).toEqual({ total: 12, allocated: 12, held: 0, available: 0 });
  }
});

test('a group is judged request by request: a holder limit or a quota the group itself reaches is final', async () => {
  const partner = await server.createPartner();
  const limited = await server.openCampaignWith(20, { perHolderLimit: 2 });
  const quoted = await server.openCampaignWith(20);
  const quota = await server.gql(ADMIN_KEY, `mutation($c: ID!, $p: ID!) { setPartnerQuota(campaignId: $c, partnerId: $p, quota: 3) { campaign { id } } }`, { c: quoted, p: partner.id });
  expect(quota.body.errors).toBeUndefined();
  const [byHolder, byQuota] = await Promise.all([
    Promise.all(Array.from({ length: 10 }, () => server.claim(partner.apiKey, { campaignId: limited, holder: 'one' }))),
    Promise.all(Array.from({ length: 10 }, (_, i) => server.claim(partner.apiKey, { campaignId: quoted, holder: `q${i}` }))),
  ]);
  expect(byHolder.filter((a) => a.allocation)).toHaveLength(2);
  expect(byHolder.filter((a) => a.error).map((a) => a.error!.code)).toEqual(Array(8).fill('HOLDER_LIMIT_REACHED'));
  expect(byQuota.filter((a) => a.allocation)).toHaveLength(3);
  expect(byQuota.filter((a) => a.error).map((a) => a.error!.code)).toEqual(Array(7).fill('PARTNER_QUOTA_REACHED'));
  await assertPoolInvariants(server.sql, limited);
  await assertPoolInvariants(server.sql, quoted);
});

test("a partner's idempotency key names one claim in all its campaigns, however the requests race", async () => {
  const partner = await server.createPartner();
  const [a, b] = await Promise.all([server.openCampaignWith(5), server.openCampaignWith(5)]);
  // The same key, at once, in two campaigns (and twice in each): one allocation in all.
  const answers = await Promise.all([a, b, a, b].map((campaignId) => server.claim(partner.apiKey, { campaignId, holder: 'k', idempotencyKey: 'one-key' })));
  const made = answers.filter((x) => x.allocation);
  expect(new Set(made.map((x) => x.allocation!.id)).size).toBe(1);
  const winner = made[0]!.allocation!.campaign.id;
  for (const x of answers) {
    if (x.allocation) expect(x.allocation.campaign.id).toBe(winner);
    else expect(x.error!.code).toBe('IDEMPOTENCY_KEY_REUSED');
  }
  const { rows } = await server.sql.query<{ n: number }>(`SELECT count(*)::int AS n FROM allocations WHERE partner_id = $1 AND idempotency_key = 'one-key'`, [partner.id]);
  expect(rows[0]!.n).toBe(1);
});

test('the second look: held tickets answer ALL_HELD, a sweep that ends the holds gives them back, then SOLD_OUT', async () => {
  const partner = await server.createPartner();
  const campaignId = await server.openCampaignWith(3);
  const holds = await Promise.all(Array.from({ length: 3 }, (_, i) => server.hold(partner.apiKey, { campaignId, holder: `h${i}`, ttlSeconds: 1 })));
  expect(holds.every((h) => h.allocation?.status === 'HELD')).toBe(true);
  expect((await server.claim(partner.apiKey, { campaignId, holder: 'late' })).error?.code).toBe('ALL_HELD');
  await server.sql.query(`UPDATE allocations SET expires_at = now() - interval '1 second' WHERE campaign_id = $1 AND status = 'HELD'`, [campaignId]);
  expect(await server.sweep()).toBe(3);
  const again = await Promise.all(Array.from({ length: 4 }, (_, i) => server.claim(partner.apiKey, { campaignId, holder: `a${i}` })));
  expect(again.filter((x) => x.allocation)).toHaveLength(3);
  expect(again.filter((x) => x.error).map((x) => x.error!.code)).toEqual(['SOLD_OUT']);
  await assertPoolInvariants(server.sql, campaignId);
  expect(await stats(campaignId)).toEqual({ total: 3, allocated: 3, held: 0, available: 0 });
});

test('every allocation is recorded with its webhook event while an endpoint listens, drained into deliveries', async () => {
  const partner = await server.createPartner();
  const endpoint = await server.gql<{ createWebhook: { endpoint: { id: string } } }>(
    partner.apiKey,
    `mutation { createWebhook(input: { url: "http://127.0.0.1:9/unreachable", events: [ALLOCATION_CREATED] }) { endpoint { id } } }`,
  );
  expect(endpoint.body.errors).toBeUndefined();
  const endpointId = endpoint.body.data!.createWebhook.endpoint.id;
  try {
    const campaigns = await Promise.all([4, 4].map((n) => server.openCampaignWith(n)));
    const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => server.claim(partner.apiKey, { campaignId: campaigns[i % 2]!, holder: `w${i}` })));
    const ids = answers.map((x) => x.allocation!.id).sort();
    // The dispatcher drains the outbox (as the dialect says: one statement, or per campaign) into one delivery per allocation.
    const deadline = Date.now() + 20_000;
    let delivered: string[] = [];
    while (Date.now() < deadline) {
      const { rows } = await server.sql.query<{ allocation_id: string }>(`SELECT allocation_id FROM webhook_deliveries WHERE endpoint_id = $1 ORDER BY 1`, [endpointId]);
      delivered = rows.map((r) => r.allocation_id);
      if (delivered.length >= ids.length) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(delivered).toEqual(ids);
  } finally {
    await server.gql(partner.apiKey, `mutation($id: ID!) { deleteWebhook(id: $id) }`, { id: endpointId });
  }
});
