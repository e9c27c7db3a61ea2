// @dialects postgresql citus
// Idempotency keys: same partner + key => the same allocation, never a second ticket — also when
// the requests race; the same key with a different request => IDEMPOTENCY_KEY_REUSED.
import { assertPoolInvariants, startTestServer, type TestServer } from './helpers/testServer';

let server: TestServer;
let partner: { id: string; apiKey: string };
beforeAll(async () => {
  server = await startTestServer({ database: { poolSize: 20 } });
  partner = await server.createPartner('Keyed');
});
afterAll(() => server.stop());

const liveCount = async (campaignId: string) =>
  (await server.sql.query(`SELECT count(*)::int AS n FROM allocations WHERE campaign_id = $1`, [campaignId])).rows[0].n as number;

test('twenty parallel claims with one key allocate one ticket and all answer the same allocation', async () => {
  const campaignId = await server.openCampaignWith(30);
  const input = { campaignId, holder: 'alice', metadata: { order: 17 }, idempotencyKey: 'order-17' };
  const results = await Promise.all(Array.from({ length: 20 }, () => server.claim(partner.apiKey, input)));
  const ids = new Set(results.map((r) => r.allocation?.id));
  expect(ids.size).toBe(1);
  expect([...ids][0]).toEqual(expect.any(String));
  expect(await liveCount(campaignId)).toBe(1);
  await assertPoolInvariants(server.sql, campaignId);
});

test('a replayed key answers the original allocation, ticket and sequence', async () => {
  const campaignId = await server.openCampaignWith(5);
  const input = { campaignId, holder: 'bob', idempotencyKey: 'replay-1' };
  const first = (await server.claim(partner.apiKey, input)).allocation!;
  await server.claim(partner.apiKey, { campaignId, holder: 'someone else' });
  const again = (await server.claim(partner.apiKey, input)).allocation!;
  expect(again).toEqual(first);
  expect(await liveCount(campaignId)).toBe(2);
});

test('the same key with a different holder is refused as IDEMPOTENCY_KEY_REUSED and allocates nothing', async () => {
  const campaignId = await server.openCampaignWith(5);
  await server.claim(partner.apiKey, { campaignId, holder: 'carol', idempotencyKey: 'reuse-1' });
  const r = await server.claim(partner.apiKey, { campaignId, holder: 'dave', idempotencyKey: 'reuse-1' });
  expect(r).toMatchObject({ allocation: null, error: { code: 'IDEMPOTENCY_KEY_REUSED' } });
  expect(await liveCount(campaignId)).toBe(1);
});

test('the same key with different metadata is refused, and metadata key order does not matter', async () => {
  const campaignId = await server.openCampaignWith(5);
  const first = await server.claim(partner.apiKey, { campaignId, holder: 'erin', metadata: { a: 1, b: [1, 2] }, idempotencyKey: 'meta-1' });
  const reordered = await server.claim(partner.apiKey, { campaignId, holder: 'erin', metadata: { b: [1, 2], a: 1 }, idempotencyKey: 'meta-1' });
  expect(reordered.allocation!.id).toBe(first.allocation!.id);
  const changed = await server.claim(partner.apiKey, { campaignId, holder: 'erin', metadata: { a: 2, b: [1, 2] }, idempotencyKey: 'meta-1' });
  expect(changed.error?.code).toBe('IDEMPOTENCY_KEY_REUSED');
  expect(await liveCount(campaignId)).toBe(1);
});

test('a key used on one campaign is refused on another campaign', async () => {
  const first = await server.openCampaignWith(2);
  const second = await server.openCampaignWith(2);
  await server.claim(partner.apiKey, { campaignId: first, holder: 'frank', idempotencyKey: 'cross-1' });
  const r = await server.claim(partner.apiKey, { campaignId: second, holder: 'frank', idempotencyKey: 'cross-1' });
  expect(r.error?.code).toBe('IDEMPOTENCY_KEY_REUSED');
  expect(await liveCount(second)).toBe(0);
});

test('racing one key on two campaigns gives at most one ticket', async () => {
  const first = await server.openCampaignWith(5);
  const second = await server.openCampaignWith(5);
  const results = await Promise.all(
    Array.from({ length: 10 }, (_, i) => server.claim(partner.apiKey, { campaignId: i % 2 ? first : second, holder: 'gina', idempotencyKey: 'cross-race' })),
  );
  expect((await liveCount(first)) + (await liveCount(second))).toBe(1);
  const granted = results.filter((r) => r.allocation);
  const refused = results.filter((r) => r.error?.code === 'IDEMPOTENCY_KEY_REUSED');
  expect(granted.length + refused.length).toBe(10);
  expect(new Set(granted.map((r) => r.allocation!.id)).size).toBe(1);
});

test('keys belong to a partner: two partners using the same key get two tickets', async () => {
  const other = await server.createPartner('Other');
  const campaignId = await server.openCampaignWith(5);
  const a = await server.claim(partner.apiKey, { campaignId, holder: 'hank', idempotencyKey: 'shared-key' });
  const b = await server.claim(other.apiKey, { campaignId, holder: 'hank', idempotencyKey: 'shared-key' });
  expect(a.allocation!.id).not.toBe(b.allocation!.id);
  expect(await liveCount(campaignId)).toBe(2);
});

test('a refusal is not stored as the key\'s answer: the same key succeeds once the campaign opens', async () => {
  const campaignId = await server.createCampaign();
  await server.loadTickets(campaignId, 3);
  const early = await server.claim(partner.apiKey, { campaignId, holder: 'ivy', idempotencyKey: 'early-1' });
  expect(early.error?.code).toBe('CAMPAIGN_NOT_OPEN');
  await server.openCampaign(campaignId);
  const later = await server.claim(partner.apiKey, { campaignId, holder: 'ivy', idempotencyKey: 'early-1' });
  expect(later.allocation).not.toBeNull();
});

test('ten keys, each sent five times at once, on a pool of five: five tickets, and every key gets one consistent answer', async () => {
  const campaignId = await server.openCampaignWith(5);
  const requests = Array.from({ length: 50 }, (_, i) => ({ key: `k-${i % 10}`, holder: `holder-${i % 10}` }));
  const results = await Promise.all(
    requests.map((r) => server.claim(partner.apiKey, { campaignId, holder: r.holder, idempotencyKey: r.key }).then((res) => ({ ...r, res }))),
  );
  const byKey = new Map<string, Set<string>>();
  for (const { key, res } of results) {
    const answer = res.allocation ? `ticket:${res.allocation.ticket.code}` : `error:${res.error!.code}`;
    byKey.set(key, (byKey.get(key) ?? new Set()).add(answer));
  }
  for (const answers of byKey.values()) expect(answers.size).toBe(1);
  const winners = [...byKey.values()].filter((answers) => [...answers][0]!.startsWith('ticket:'));
  expect(winners).toHaveLength(5);
  expect(await liveCount(campaignId)).toBe(5);
  await assertPoolInvariants(server.sql, campaignId);
});
