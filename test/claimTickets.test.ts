// @dialects postgresql citus
// claimTickets: `quantity` tickets for one holder, all or nothing — also when many groups race for
// a pool that cannot serve them all (no group is ever split, no ticket is handed out twice).
import { allocated, assertPoolInvariants, startTestServer, type TestServer } from './helpers/testServer';
import { expireHolds } from './helpers/time';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ database: { poolSize: 20 } });
});
afterAll(() => server.stop());

const CLAIM_MANY = `mutation ClaimTickets($input: ClaimTicketsInput!) {
  claimTickets(input: $input) {
    allocations { id sequence status holder metadata idempotencyKey ticket { id code status } }
    error { code message }
  }
}`;

interface ManyAnswer {
  allocations: { id: string; sequence: number; status: string; holder: string; metadata: unknown; idempotencyKey: string | null; ticket: { id: string; code: string; status: string } }[];
  error: null | { code: string; message: string };
}

async function claimMany(key: string, input: Record<string, unknown>): Promise<ManyAnswer> {
  const res = await server.gql<{ claimTickets: ManyAnswer }>(key, CLAIM_MANY, { input: { holder: 'h', ...input } });
  if (res.body.errors?.length) throw new Error(`claimTickets failed: ${JSON.stringify(res.body.errors)}`);
  return res.body.data!.claimTickets;
}
const liveCount = async (campaignId: string) =>
  (await server.sql.query(`SELECT count(*)::int AS n FROM allocations WHERE campaign_id = $1 AND status IN ('HELD', 'ACTIVE')`, [campaignId])).rows[0]
    .n as number;
const allCount = async (campaignId: string) =>
  (await server.sql.query(`SELECT count(*)::int AS n FROM allocations WHERE campaign_id = $1`, [campaignId])).rows[0].n as number;

test('quantity 3 answers three ACTIVE allocations of three distinct tickets', async () => {
  const partner = await server.createPartner();
  const campaignId = await server.openCampaignWith(10);
  const r = await claimMany(partner.apiKey, { campaignId, quantity: 3 });
  expect(r.error).toBeNull();
  expect(r.allocations).toHaveLength(3);
  expect(new Set(r.allocations.map((a) => a.ticket.code)).size).toBe(3);
  expect(new Set(r.allocations.map((a) => a.id)).size).toBe(3);
  for (const a of r.allocations) expect(a).toMatchObject({ status: 'ACTIVE', ticket: { status: 'ALLOCATED' } });
  expect(await liveCount(campaignId)).toBe(3);
  await assertPoolInvariants(server.sql, campaignId);
});

test('the three allocations of one group have distinct sequences, increasing in answer order', async () => {
  const partner = await server.createPartner();
  for (let i = 0; i < 5; i += 1) {
    const sequences = (await claimMany(partner.apiKey, { campaignId: await server.openCampaignWith(6), quantity: 3, holder: `seq-${i}` })).allocations.map(
      (a) => a.sequence,
    );
    expect(sequences).toHaveLength(3);
    expect(sequences[1]!).toBeGreaterThan(sequences[0]!);
    expect(sequences[2]!).toBeGreaterThan(sequences[1]!);
  }
});

test('every allocation of a group carries the same holder, metadata and key', async () => {
  const partner = await server.createPartner();
  const campaignId = await server.openCampaignWith(10);
  const metadata = { order: 'A-17', seats: [1, 2, 3], nested: { vip: true } };
  const r = await claimMany(partner.apiKey, { campaignId, quantity: 3, holder: 'group-holder', metadata, idempotencyKey: 'group-meta' });
  for (const a of r.allocations) expect(a).toMatchObject({ holder: 'group-holder', metadata, idempotencyKey: 'group-meta' });
  const { rows } = await server.sql.query(`SELECT DISTINCT holder, metadata FROM allocations WHERE campaign_id = $1`, [campaignId]);
  expect(rows).toEqual([{ holder: 'group-holder', metadata }]);
});

test('quantity 5 on a pool of 4 answers INSUFFICIENT_TICKETS and allocates nothing', async () => {
  const partner = await server.createPartner();
  const campaignId = await server.openCampaignWith(4);
  const r = await claimMany(partner.apiKey, { campaignId, quantity: 5 });
  expect(r).toMatchObject({ allocations: [], error: { code: 'INSUFFICIENT_TICKETS' } });
  expect(await allCount(campaignId)).toBe(0);
  expect(await assertPoolInvariants(server.sql, campaignId)).toMatchObject({ total: 4, allocated: 0, available: 4 });
});

test('a refused group leaves the pool whole: the four tickets can still be claimed together', async () => {
  const partner = await server.createPartner();
  const campaignId = await server.openCampaignWith(4);
  await claimMany(partner.apiKey, { campaignId, quantity: 5 });
  const r = await claimMany(partner.apiKey, { campaignId, quantity: 4 });
  expect(r.error).toBeNull();
  expect(r.allocations).toHaveLength(4);
});

describe('twenty parallel groups of three on thirty tickets', () => {
  let campaignId: string;
  let results: ManyAnswer[];
  beforeAll(async () => {
    const partners = await Promise.all([server.createPartner('G1'), server.createPartner('G2')]);
    campaignId = await server.openCampaignWith(30);
    results = await Promise.all(Array.from({ length: 20 }, (_, i) => claimMany(partners[i % 2]!.apiKey, { campaignId, quantity: 3, holder: `group-${i}` })));
  });

  test('exactly ten groups succeed, each with exactly three allocations', () => {
    const ok = results.filter((r) => r.error === null);
    expect(ok).toHaveLength(10);
    for (const r of ok) expect(r.allocations).toHaveLength(3);
  });

  test('the other ten answer INSUFFICIENT_TICKETS with no allocation', () => {
    const refused = results.filter((r) => r.error !== null);
    expect(refused.map((r) => r.error!.code)).toEqual(Array(10).fill('INSUFFICIENT_TICKETS'));
    for (const r of refused) expect(r.allocations).toEqual([]);
  });

  test('all thirty tickets are allocated, none twice, each group to one holder', async () => {
    const codes = results.flatMap((r) => r.allocations.map((a) => a.ticket.code));
    expect(codes).toHaveLength(30);
    expect(new Set(codes).size).toBe(30);
    const { rows } = await server.sql.query(
      `SELECT holder, count(*)::int AS n FROM allocations WHERE campaign_id = $1 AND status = 'ACTIVE' GROUP BY holder`,
      [campaignId],
    );
    expect(rows).toHaveLength(10);
    for (const r of rows) expect(r.n).toBe(3);
    expect(await assertPoolInvariants(server.sql, campaignId)).toMatchObject({ total: 30, allocated: 30, available: 0 });
  });
});

test('a replay of claimTickets with its key answers the same three allocations in the same order', async () => {
  const partner = await server.createPartner();
  const campaignId = await server.openCampaignWith(10);
  const input = { campaignId, quantity: 3, holder: 'replayer', idempotencyKey: 'group-replay' };
  const first = await claimMany(partner.apiKey, input);
  await claimMany(partner.apiKey, { campaignId, quantity: 2, holder: 'someone else' });
  const again = await claimMany(partner.apiKey, input);
  expect(again.error).toBeNull();
  expect(again.allocations).toEqual(first.allocations);
  expect(await liveCount(campaignId)).toBe(5);
});

test('parallel replays of one keyed group allocate one group only', async () => {
  const partner = await server.createPartner();
  const campaignId = await server.openCampaignWith(30);
  const input = { campaignId, quantity: 3, holder: 'racer', idempotencyKey: 'group-race' };
  const results = await Promise.all(Array.from({ length: 10 }, () => claimMany(partner.apiKey, input)));
  const groups = new Set(results.map((r) => r.allocations.map((a) => a.id).sort().join(',')));
  expect(groups.size).toBe(1);
  expect(results.every((r) => r.error === null && r.allocations.length === 3)).toBe(true);
  expect(await liveCount(campaignId)).toBe(3);
});

test('the same key with a different quantity answers IDEMPOTENCY_KEY_REUSED and allocates nothing more', async () => {
  const partner = await server.createPartner();
  const campaignId = await server.openCampaignWith(10);
  await claimMany(partner.apiKey, { campaignId, quantity: 3, holder: 'k', idempotencyKey: 'group-reuse' });
  const r = await claimMany(partner.apiKey, { campaignId, quantity: 2, holder: 'k', idempotencyKey: 'group-reuse' });
  expect(r).toMatchObject({ allocations: [], error: { code: 'IDEMPOTENCY_KEY_REUSED' } });
  expect(await liveCount(campaignId)).toBe(3);
});

test('a second group of 3 under a perHolderLimit of 4 answers HOLDER_LIMIT_REACHED and allocates nothing', async () => {
  const partner = await server.createPartner();
  const campaignId = await server.openCampaignWith(10, { perHolderLimit: 4 });
  expect((await claimMany(partner.apiKey, { campaignId, quantity: 3, holder: 'limited' })).allocations).toHaveLength(3);
  const second = await claimMany(partner.apiKey, { campaignId, quantity: 3, holder: 'limited' });
  expect(second).toMatchObject({ allocations: [], error: { code: 'HOLDER_LIMIT_REACHED' } });
  expect(await liveCount(campaignId)).toBe(3);
  // The one place left is still usable.
  expect((await claimMany(partner.apiKey, { campaignId, quantity: 1, holder: 'limited' })).allocations).toHaveLength(1);
});

test.each([0, 101, -1])('quantity %p answers INVALID_INPUT and allocates nothing', async (quantity) => {
  const partner = await server.createPartner();
  const campaignId = await server.openCampaignWith(5);
  expect(await claimMany(partner.apiKey, { campaignId, quantity })).toMatchObject({ allocations: [], error: { code: 'INVALID_INPUT' } });
  expect(await allCount(campaignId)).toBe(0);
});

test('quantity 100 is accepted and takes one hundred tickets', async () => {
  const partner = await server.createPartner();
  const campaignId = await server.openCampaignWith(100);
  const r = await claimMany(partner.apiKey, { campaignId, quantity: 100 });
  expect(r.error).toBeNull();
  expect(new Set(r.allocations.map((a) => a.ticket.code)).size).toBe(100);
  expect(await assertPoolInvariants(server.sql, campaignId)).toMatchObject({ allocated: 100, available: 0 });
});

test('claimTickets takes over expired holds: two expired holds and one free ticket make a group of three', async () => {
  const partner = await server.createPartner();
  const campaignId = await server.openCampaignWith(3);
  const holds = (await Promise.all([0, 1].map((i) => server.hold(partner.apiKey, { campaignId, holder: `holder-${i}`, ttlSeconds: 60 })))).map(allocated);
  const before = await claimMany(partner.apiKey, { campaignId, quantity: 3, holder: 'early' });
  expect(before.error?.code).toBe('INSUFFICIENT_TICKETS');
  // Just past the expiry, usually before the sweeper (every second) has come by: the claim itself
  // has to end the holds. Either way the group must be served.
  await expireHolds(
    server.sql,
    holds.map((h) => h.id),
  );
  const r = await claimMany(partner.apiKey, { campaignId, quantity: 3, holder: 'taker' });
  expect(r.error).toBeNull();
  expect(r.allocations).toHaveLength(3);
  const heldCodes = holds.map((h) => h.ticket.code);
  for (const code of heldCodes) expect(r.allocations.map((a) => a.ticket.code)).toContain(code);
  const { rows } = await server.sql.query(`SELECT status::text FROM allocations WHERE id = ANY($1::uuid[]) ORDER BY 1`, [holds.map((h) => h.id)]);
  expect(rows.map((x) => x.status)).toEqual(['EXPIRED', 'EXPIRED']);
  await assertPoolInvariants(server.sql, campaignId);
});
