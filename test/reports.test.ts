// @dialects postgresql citus
// Reports (the contract's CampaignReport: stats, timeline, partnerStats, soldOutAt) and
// updateCampaign. The reports must agree with each other and with the pool in one answer.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Kind, parse, print, type OperationDefinitionNode } from 'graphql';
import { ADMIN_KEY, allocated, startTestServer, type TestServer } from './helpers/testServer';
import { expireHolds } from './helpers/time';
import { setTimes } from './helpers/setTimes';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ database: { poolSize: 20 } });
});
afterAll(() => server.stop());

/** The CampaignReport operation exactly as external clients send it (contract/ops). */
const CAMPAIGN_REPORT = (() => {
  const document = parse(readFileSync(path.resolve(__dirname, '../contract/ops/reservations.graphql'), 'utf8'));
  const operation = document.definitions.find(
    (d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION && d.name?.value === 'CampaignReport',
  );
  if (!operation) throw new Error('CampaignReport is missing from the contract');
  return print(operation);
})();

const CONFIRM = 'mutation($id: ID!) { confirmHold(allocationId: $id) { allocation { id status } error { code } } }';
const RELEASE = 'mutation($id: ID!) { releaseAllocation(allocationId: $id) { allocation { id status } error { code } } }';
const UPDATE = `mutation Update($id: ID!, $input: UpdateCampaignInput!) {
  updateCampaign(id: $id, input: $input) { campaign { id name status opensAt closesAt perHolderLimit } }
}`;
const CAMPAIGN = 'query($id: ID!) { campaign(id: $id) { id name status opensAt closesAt perHolderLimit } }';

type Bucket = 'MINUTE' | 'HOUR' | 'DAY';
interface Report {
  id: string;
  stats: { total: number; allocated: number; held: number; available: number; fillRate: number; soldOutAt: string | null };
  timeline: { at: string; allocated: number; cumulative: number }[];
  partnerStats: { partner: { id: string; name: string }; allocated: number; held: number; quota: number | null }[];
}

async function report(campaignId: string, bucket: Bucket = 'MINUTE', key = ADMIN_KEY): Promise<Report> {
  const res = await server.gql<{ campaign: Report }>(key, CAMPAIGN_REPORT, { id: campaignId, bucket });
  if (res.body.errors?.length) throw new Error(`CampaignReport failed: ${JSON.stringify(res.body.errors)}`);
  return res.body.data!.campaign!;
}
const call = (key: string, query: string, variables: Record<string, unknown>) => server.gql(key, query, variables);
const errorCode = (res: { body: { errors?: { extensions?: Record<string, any> }[] } }) => res.body.errors?.[0]?.extensions?.code;

function expectTimelineConsistent(r: Report) {
  expect(r.timeline.reduce((sum, p) => sum + p.allocated, 0)).toBe(r.stats.allocated);
  if (r.stats.allocated > 0) expect(r.timeline.at(-1)!.cumulative).toBe(r.stats.allocated);
  let running = 0;
  let previous = -Infinity;
  for (const point of r.timeline) {
    running += point.allocated;
    expect(point.allocated).toBeGreaterThan(0);
    expect(point.cumulative).toBe(running);
    expect(Date.parse(point.at)).toBeGreaterThan(previous);
    previous = Date.parse(point.at);
  }
}
function expectPartnerStatsConsistent(r: Report) {
  expect(r.partnerStats.reduce((sum, p) => sum + p.allocated, 0)).toBe(r.stats.allocated);
  expect(r.partnerStats.reduce((sum, p) => sum + p.held, 0)).toBe(r.stats.held);
  expect(r.stats.allocated + r.stats.held + r.stats.available).toBe(r.stats.total);
}

describe('a campaign worked by three partners: claims, groups, holds, confirmations, releases, an expired hold', () => {
  let campaignId: string;
  let partners: { id: string; apiKey: string }[];

  beforeAll(async () => {
    partners = await Promise.all(['P1', 'P2', 'P3'].map((name) => server.createPartner(name)));
    const [p1, p2, p3] = partners as [(typeof partners)[0], (typeof partners)[0], (typeof partners)[0]];
    campaignId = await server.openCampaignWith(40);
    await server.gql(ADMIN_KEY, 'mutation($c: ID!, $p: ID!) { setPartnerQuota(campaignId: $c, partnerId: $p, quota: 12) { campaign { id } } }', {
      c: campaignId,
      p: p3.id,
    });
    // P1: claims, one released.
    const p1Claims = await Promise.all(Array.from({ length: 6 }, (_, i) => server.claim(p1.apiKey, { campaignId, holder: `p1-${i}` })));
    await call(p1.apiKey, RELEASE, { id: p1Claims[0]!.allocation!.id });
    // P2: a group of 3, two holds (one confirmed), one hold released, one hold left to expire.
    await call(p2.apiKey, 'mutation($input: ClaimTicketsInput!) { claimTickets(input: $input) { error { code } } }', {
      input: { campaignId, holder: 'p2-group', quantity: 3 },
    });
    const p2Holds = [allocated(await server.hold(p2.apiKey, { campaignId })), allocated(await server.hold(p2.apiKey, { campaignId })), allocated(await server.hold(p2.apiKey, { campaignId }))];
    await call(p2.apiKey, CONFIRM, { id: p2Holds[0]!.id });
    await call(p2.apiKey, RELEASE, { id: p2Holds[1]!.id });
    const lapsing = allocated(await server.hold(p2.apiKey, { campaignId }));
    // P3: holds only, one of them confirmed then released.
    const p3Holds = [allocated(await server.hold(p3.apiKey, { campaignId })), allocated(await server.hold(p3.apiKey, { campaignId })), allocated(await server.hold(p3.apiKey, { campaignId }))];
    await call(p3.apiKey, CONFIRM, { id: p3Holds[0]!.id });
    await call(p3.apiKey, RELEASE, { id: p3Holds[0]!.id });
    // The admin claims too (allocations of the operator partner).
    await server.claim(ADMIN_KEY, { campaignId, holder: 'operator' });
    // Some allocations earlier in time, so that buckets differ.
    await setTimes(
      server.sql,
      'allocations',
      { allocated_at: "allocated_at - interval '2 days 3 hours'" },
      "id IN (SELECT id FROM allocations WHERE campaign_id = $1 AND status = 'ACTIVE' AND confirmed_at IS NULL ORDER BY sequence LIMIT 3)",
      [campaignId],
    );
    await setTimes(
      server.sql,
      'allocations',
      { allocated_at: "allocated_at - interval '70 minutes'" },
      "id IN (SELECT id FROM allocations WHERE campaign_id = $1 AND status = 'ACTIVE' AND confirmed_at IS NULL ORDER BY sequence DESC LIMIT 2)",
      [campaignId],
    );
    await expireHolds(server.sql, [lapsing.id]);
  });

  test('the CampaignReport operation of the contract works for the admin', async () => {
    const r = await report(campaignId);
    expect(r.id).toBe(campaignId);
    expect(r.stats).toMatchObject({ total: 40, allocated: 5 + 3 + 1 + 1, held: 1 + 2, available: 40 - 10 - 3 });
    expect(r.stats.fillRate).toBeCloseTo(10 / 40);
    expect(r.stats.soldOutAt).toBeNull();
  });

  test.each<Bucket>(['MINUTE', 'HOUR', 'DAY'])('the %s timeline sums to stats.allocated and its cumulative rises to it', async (bucket) => {
    const r = await report(campaignId, bucket);
    expectTimelineConsistent(r);
  });

  test.each<[Bucket, number]>([
    ['MINUTE', 3],
    ['HOUR', 3],
    ['DAY', 2],
  ])('the %s timeline puts backdated allocations in their own buckets, starting on UTC bucket boundaries', async (bucket, atLeast) => {
    const r = await report(campaignId, bucket);
    expect(r.timeline.length).toBeGreaterThanOrEqual(atLeast);
    const unitMs = { MINUTE: 60_000, HOUR: 3_600_000, DAY: 86_400_000 }[bucket];
    for (const point of r.timeline) expect(Date.parse(point.at) % unitMs).toBe(0);
    const { rows } = await server.sql.query(
      `SELECT count(*)::int AS n FROM allocations WHERE campaign_id = $1 AND status = 'ACTIVE' AND allocated_at < now() - interval '2 days'`,
      [campaignId],
    );
    expect(r.timeline[0]!.allocated).toBe(rows[0].n);
  });

  test('partnerStats allocated sums to stats.allocated and held sums to stats.held', async () => {
    const r = await report(campaignId);
    expectPartnerStatsConsistent(r);
  });

  test('partnerStats gives each partner its own figures and quota', async () => {
    const r = await report(campaignId);
    const byId = Object.fromEntries(r.partnerStats.map((p) => [p.partner.id, p]));
    expect(byId[partners[0]!.id]).toMatchObject({ partner: { name: 'P1' }, allocated: 5, held: 0, quota: null });
    expect(byId[partners[1]!.id]).toMatchObject({ partner: { name: 'P2' }, allocated: 4, held: 1, quota: null });
    expect(byId[partners[2]!.id]).toMatchObject({ partner: { name: 'P3' }, allocated: 0, held: 2, quota: 12 });
    expect(r.partnerStats).toHaveLength(4); // and the operator, for the admin's claim
  });
});

test('the timeline counts a confirmed hold when it was confirmed, not when it was held', async () => {
  const partner = await server.createPartner();
  const campaignId = await server.openCampaignWith(3);
  const held = allocated(await server.hold(partner.apiKey, { campaignId, ttlSeconds: 86_400 }));
  await setTimes(server.sql, 'allocations', { allocated_at: "allocated_at - interval '5 hours'" }, 'id = $1', [held.id]);
  const hourOf = (ms: number) => ms - (ms % 3_600_000);
  const before = hourOf(Date.now());
  await call(partner.apiKey, CONFIRM, { id: held.id });
  const after = hourOf(Date.now());
  const r = await report(campaignId, 'HOUR');
  expect(r.timeline).toHaveLength(1);
  // The hour of the confirmation (either side of an hour that turned meanwhile), not of the hold.
  expect([before, after]).toContain(Date.parse(r.timeline[0]!.at));
  expect(r.timeline[0]).toMatchObject({ allocated: 1, cumulative: 1 });
});

test('the timeline and partnerStats of a campaign with no allocation are empty', async () => {
  const campaignId = await server.openCampaignWith(3);
  const r = await report(campaignId, 'DAY');
  expect(r.timeline).toEqual([]);
  expect(r.partnerStats).toEqual([]);
  expect(r.stats).toMatchObject({ total: 3, allocated: 0, held: 0, available: 3, fillRate: 0, soldOutAt: null });
});

describe('soldOutAt', () => {
  test('is null while tickets remain', async () => {
    const partner = await server.createPartner();
    const campaignId = await server.openCampaignWith(3);
    await server.claim(partner.apiKey, { campaignId });
    await server.claim(partner.apiKey, { campaignId });
    expect((await report(campaignId)).stats.soldOutAt).toBeNull();
  });

  test('is set once claims sell the pool out, at the moment of the last claim', async () => {
    const partner = await server.createPartner();
    const campaignId = await server.openCampaignWith(3);
    allocated(await server.claim(partner.apiKey, { campaignId }));
    allocated(await server.claim(partner.apiKey, { campaignId }));
    const last = allocated(await server.claim(partner.apiKey, { campaignId }));
    const r = await report(campaignId);
    expect(r.stats).toMatchObject({ available: 0, held: 0, allocated: 3 });
    expect(r.stats.soldOutAt).not.toBeNull();
    expect(Date.parse(r.stats.soldOutAt!)).toBe(Date.parse(last.allocatedAt));
  });

  test('is null while the last ticket is only held', async () => {
    const partner = await server.createPartner();
    const campaignId = await server.openCampaignWith(2);
    await server.claim(partner.apiKey, { campaignId });
    allocated(await server.hold(partner.apiKey, { campaignId }));
    expect((await report(campaignId)).stats).toMatchObject({ available: 0, held: 1, soldOutAt: null });
  });

  test('stays set, with the same value, after a release makes a ticket available again', async () => {
    const partner = await server.createPartner();
    const campaignId = await server.openCampaignWith(2);
    const first = allocated(await server.claim(partner.apiKey, { campaignId }));
    allocated(await server.claim(partner.apiKey, { campaignId }));
    const soldOutAt = (await report(campaignId)).stats.soldOutAt;
    expect(soldOutAt).not.toBeNull();
    await call(partner.apiKey, RELEASE, { id: first.id });
    const r = await report(campaignId);
    expect(r.stats).toMatchObject({ available: 1, allocated: 1 });
    expect(r.stats.soldOutAt).toBe(soldOutAt);
    // And after selling out a second time, it is still the first time.
    await server.claim(partner.apiKey, { campaignId });
    expect((await report(campaignId)).stats.soldOutAt).toBe(soldOutAt);
  });

  // "When available first reached 0 with nothing held, if it did": it did, before the new tickets.
  test('stays set after more tickets are loaded into a sold-out campaign', async () => {
    const partner = await server.createPartner();
    const campaignId = await server.openCampaignWith(1);
    await server.claim(partner.apiKey, { campaignId });
    const soldOutAt = (await report(campaignId)).stats.soldOutAt;
    expect(soldOutAt).not.toBeNull();
    await server.loadTickets(campaignId, 2, 'MORE');
    const r = await report(campaignId);
    expect(r.stats).toMatchObject({ total: 3, available: 2 });
    expect(r.stats.soldOutAt).toBe(soldOutAt);
  });

  test('a sell-out by a confirmation is dated at the confirmation', async () => {
    const partner = await server.createPartner();
    const campaignId = await server.openCampaignWith(1);
    const held = allocated(await server.hold(partner.apiKey, { campaignId }));
    // Held a minute earlier (the clock moved in SQL, not waited for): the hold's time and the
    // confirmation's cannot fall in one millisecond.
    const rows = await setTimes(server.sql, 'allocations', { allocated_at: "allocated_at - interval '1 minute'" }, 'id = $1', [held.id]);
    const heldAt = rows[0]!.allocated_at as Date;
    const before = Date.now();
    await call(partner.apiKey, CONFIRM, { id: held.id });
    const soldOutAt = (await report(campaignId)).stats.soldOutAt;
    expect(soldOutAt).not.toBeNull();
    expect(Date.parse(soldOutAt!)).toBeGreaterThan(heldAt.getTime());
    expect(Date.parse(soldOutAt!)).toBeGreaterThanOrEqual(before - 1_000);
  });
});

test('timeline asked by a partner is FORBIDDEN', async () => {
  const partner = await server.createPartner();
  const campaignId = await server.openCampaignWith(1);
  const res = await server.gql(partner.apiKey, 'query($id: ID!) { campaign(id: $id) { timeline(bucket: DAY) { at allocated } } }', { id: campaignId });
  expect(errorCode(res)).toBe('FORBIDDEN');
});

test('partnerStats asked by a partner is FORBIDDEN', async () => {
  const partner = await server.createPartner();
  const campaignId = await server.openCampaignWith(1);
  await server.claim(partner.apiKey, { campaignId });
  const res = await server.gql(partner.apiKey, 'query($id: ID!) { campaign(id: $id) { partnerStats { allocated } } }', { id: campaignId });
  expect(errorCode(res)).toBe('FORBIDDEN');
});

test('the CampaignReport operation sent by a partner is FORBIDDEN', async () => {
  const partner = await server.createPartner();
  const campaignId = await server.openCampaignWith(1);
  const res = await server.gql(partner.apiKey, CAMPAIGN_REPORT, { id: campaignId, bucket: 'DAY' });
  expect(res.body.errors?.map((e) => e.extensions?.code)).toContain('FORBIDDEN');
});

describe('updateCampaign', () => {
  test('renames a campaign and leaves the other fields as they were', async () => {
    const campaignId = await server.openCampaignWith(1, { perHolderLimit: 2 });
    const res = await call(ADMIN_KEY, UPDATE, { id: campaignId, input: { name: 'Renamed' } });
    expect(res.body.data!.updateCampaign.campaign).toMatchObject({ name: 'Renamed', perHolderLimit: 2, status: 'OPEN' });
    expect((await call(ADMIN_KEY, CAMPAIGN, { id: campaignId })).body.data!.campaign.name).toBe('Renamed');
  });

  test('a new perHolderLimit applies to the next claim', async () => {
    const partner = await server.createPartner();
    const campaignId = await server.openCampaignWith(10);
    await server.claim(partner.apiKey, { campaignId, holder: 'same' });
    const res = await call(ADMIN_KEY, UPDATE, { id: campaignId, input: { perHolderLimit: 1 } });
    expect(res.body.data!.updateCampaign.campaign.perHolderLimit).toBe(1);
    expect((await server.claim(partner.apiKey, { campaignId, holder: 'same' })).error?.code).toBe('HOLDER_LIMIT_REACHED');
  });

  test('perHolderLimit: null clears the limit for the next claim', async () => {
    const partner = await server.createPartner();
    const campaignId = await server.openCampaignWith(10, { perHolderLimit: 1 });
    await server.claim(partner.apiKey, { campaignId, holder: 'same' });
    expect((await server.claim(partner.apiKey, { campaignId, holder: 'same' })).error?.code).toBe('HOLDER_LIMIT_REACHED');
    const res = await call(ADMIN_KEY, UPDATE, { id: campaignId, input: { perHolderLimit: null } });
    expect(res.body.data!.updateCampaign.campaign.perHolderLimit).toBeNull();
    expect((await server.claim(partner.apiKey, { campaignId, holder: 'same' })).allocation).not.toBeNull();
  });

  test('a closesAt in the past makes claims answer CAMPAIGN_NOT_OPEN, and clearing it reopens the window', async () => {
    const partner = await server.createPartner();
    const campaignId = await server.openCampaignWith(10);
    const closesAt = new Date(Date.now() - 60_000).toISOString();
    const res = await call(ADMIN_KEY, UPDATE, { id: campaignId, input: { closesAt } });
    expect(Date.parse(res.body.data!.updateCampaign.campaign.closesAt)).toBe(Date.parse(closesAt));
    expect((await server.claim(partner.apiKey, { campaignId })).error?.code).toBe('CAMPAIGN_NOT_OPEN');
    await call(ADMIN_KEY, UPDATE, { id: campaignId, input: { closesAt: null } });
    expect((await server.claim(partner.apiKey, { campaignId })).allocation).not.toBeNull();
  });

  test('an opensAt in the future makes claims answer CAMPAIGN_NOT_OPEN', async () => {
    const partner = await server.createPartner();
    const campaignId = await server.openCampaignWith(10);
    const opensAt = new Date(Date.now() + 3_600_000).toISOString();
    const closesAt = new Date(Date.now() + 7_200_000).toISOString();
    const res = await call(ADMIN_KEY, UPDATE, { id: campaignId, input: { opensAt, closesAt } });
    expect(res.body.errors).toBeUndefined();
    expect((await server.claim(partner.apiKey, { campaignId })).error?.code).toBe('CAMPAIGN_NOT_OPEN');
  });

  test('closesAt before opensAt is BAD_USER_INPUT and changes nothing', async () => {
    const campaignId = await server.openCampaignWith(1);
    const res = await call(ADMIN_KEY, UPDATE, {
      id: campaignId,
      input: { opensAt: new Date(Date.now() + 7_200_000).toISOString(), closesAt: new Date(Date.now() + 3_600_000).toISOString() },
    });
    expect(errorCode(res)).toBe('BAD_USER_INPUT');
    expect((await call(ADMIN_KEY, CAMPAIGN, { id: campaignId })).body.data!.campaign).toMatchObject({ opensAt: null, closesAt: null });
  });

  test('a closesAt alone before the opensAt already set is BAD_USER_INPUT', async () => {
    const opensAt = new Date(Date.now() + 7_200_000).toISOString();
    const campaignId = await server.openCampaignWith(1, { opensAt });
    const res = await call(ADMIN_KEY, UPDATE, { id: campaignId, input: { closesAt: new Date(Date.now() + 3_600_000).toISOString() } });
    expect(errorCode(res)).toBe('BAD_USER_INPUT');
  });

  test('on a CLOSED campaign it is INVALID_TRANSITION', async () => {
    const campaignId = await server.openCampaignWith(1);
    await call(ADMIN_KEY, 'mutation($id: ID!) { closeCampaign(id: $id) { campaign { id } } }', { id: campaignId });
    const res = await call(ADMIN_KEY, UPDATE, { id: campaignId, input: { name: 'Too late' } });
    expect(errorCode(res)).toBe('INVALID_TRANSITION');
    expect((await call(ADMIN_KEY, CAMPAIGN, { id: campaignId })).body.data!.campaign.name).not.toBe('Too late');
  });

  test('by a partner it is FORBIDDEN', async () => {
    const partner = await server.createPartner();
    const campaignId = await server.openCampaignWith(1);
    const res = await call(partner.apiKey, UPDATE, { id: campaignId, input: { name: 'Mine now' } });
    expect(errorCode(res)).toBe('FORBIDDEN');
    expect((await call(ADMIN_KEY, CAMPAIGN, { id: campaignId })).body.data!.campaign.name).not.toBe('Mine now');
  });

  test('name: null is BAD_USER_INPUT', async () => {
    const campaignId = await server.openCampaignWith(1);
    const res = await call(ADMIN_KEY, UPDATE, { id: campaignId, input: { name: null } });
    expect(errorCode(res)).toBe('BAD_USER_INPUT');
  });

  test('an unknown campaign is NOT_FOUND', async () => {
    const res = await call(ADMIN_KEY, UPDATE, { id: '00000000-0000-4000-8000-000000000002', input: { name: 'Ghost' } });
    expect(errorCode(res)).toBe('NOT_FOUND');
  });
});
