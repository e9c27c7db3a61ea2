// @dialects postgresql citus
// Verify and repair (issue 19): verifyCampaign recomputes every counter and invariant from the
// rows and reports each drift with its size; repairCampaign fixes the counters, under claims too,
// and never "fixes" a row.
import { ADMIN_KEY, allocated, startTestServer, type TestServer } from './helpers/testServer';
import { sleep } from './helpers/time';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ config: { holdSweepIntervalMs: 0 }, verifyAtStop: false });
});
afterAll(() => server.stop());

const FIELDS = 'ok checkedAt campaign { id } drifts { check subject expected found size repairable } repaired { check subject expected found size repairable }';
const VERIFY = `query($id: ID!) { verifyCampaign(id: $id) { ${FIELDS} } }`;
const REPAIR = `mutation($id: ID!) { repairCampaign(id: $id) { ${FIELDS} } }`;
type Drift = { check: string; subject: string | null; expected: string; found: string; size: number; repairable: boolean };
const verify = async (id: string, key = ADMIN_KEY) => (await server.gql(key, VERIFY, { id })).body.data!.verifyCampaign as { ok: boolean; drifts: Drift[]; repaired: Drift[] };
const repair = async (id: string) => (await server.gql(ADMIN_KEY, REPAIR, { id })).body.data!.repairCampaign as { ok: boolean; drifts: Drift[]; repaired: Drift[] };

/** A campaign worked every way: claims, a hold, a confirmation, a release, a quota and an allotment. */
async function workedCampaign(): Promise<{ id: string; partner: { id: string; apiKey: string } }> {
  const partner = await server.createPartner('verified');
  const other = await server.createPartner('allotted');
  const id = await server.openCampaignWith(40);
  await server.gql(ADMIN_KEY, 'mutation($c: ID!, $p: ID!) { setPartnerQuota(campaignId: $c, partnerId: $p, quota: 30) { campaign { id } } }', { c: id, p: partner.id });
  await server.gql(ADMIN_KEY, 'mutation($c: ID!, $p: ID!) { setPartnerAllotment(campaignId: $c, partnerId: $p, size: 5) { id } }', { c: id, p: other.id });
  const claims = await Promise.all(Array.from({ length: 10 }, (_, i) => server.claim(partner.apiKey, { campaignId: id, holder: `h${i}` })));
  const held = allocated(await server.hold(partner.apiKey, { campaignId: id, holder: 'held' }));
  await server.gql(partner.apiKey, 'mutation($id: ID!) { confirmHold(allocationId: $id) { allocation { id } } }', { id: held.id });
  await server.hold(partner.apiKey, { campaignId: id, holder: 'still held' });
  await server.gql(partner.apiKey, 'mutation($id: ID!) { releaseAllocation(allocationId: $id) { allocation { id } } }', { id: allocated(claims[0]!).id });
  await server.claim(other.apiKey, { campaignId: id, holder: 'from allotment' });
  return { id, partner };
}

test('a campaign worked every way verifies with no drift, for an OPERATOR and a VIEWER alike', async () => {
  const { id } = await workedCampaign();
  expect(await verify(id)).toMatchObject({ ok: true, drifts: [], repaired: [] });
  const viewer = (await server.gql(ADMIN_KEY, 'mutation { createOperatorKey(input: { name: "auditor", role: VIEWER }) { apiKey } }')).body.data!.createOperatorKey.apiKey;
  expect(await verify(id, viewer)).toMatchObject({ ok: true, drifts: [] });
});

test('a corrupted counter and a corrupted ticket are both reported with their size; repair fixes the counter, refuses the ticket, and is audited', async () => {
  const { id } = await workedCampaign();
  await server.sql.query('UPDATE campaign_counters SET allocated = allocated + 3 WHERE campaign_id = $1 AND slot = (SELECT min(slot) FROM campaign_counters WHERE campaign_id = $1)', [id]);
  const { rows } = await server.sql.query("UPDATE tickets SET status = 'AVAILABLE' WHERE id = (SELECT ticket_id FROM allocations WHERE campaign_id = $1 AND status = 'ACTIVE' LIMIT 1) AND campaign_id = $1 RETURNING id", [id]);
  const ticketId = rows[0].id as string;

  const found = await verify(id);
  expect(found.ok).toBe(false);
  expect(found.drifts).toEqual([
    { check: 'counter.allocated', subject: null, expected: '11', found: '14', size: 3, repairable: true },
    { check: 'ticket.status', subject: ticketId, expected: 'ALLOCATED', found: 'AVAILABLE', size: 1, repairable: false },
  ]);

  const repaired = await repair(id);
  expect(repaired.repaired).toEqual([found.drifts[0]]);
  expect(repaired.drifts).toEqual([found.drifts[1]]);
  expect(repaired.ok).toBe(false);
  // The ticket is as it was: repair touches no row.
  expect((await server.sql.query('SELECT status FROM tickets WHERE id = $1 AND campaign_id = $2', [ticketId, id])).rows[0].status).toBe('AVAILABLE');
  expect((await verify(id)).drifts).toEqual([found.drifts[1]]);
  const audit = await server.sql.query("SELECT actor, arguments, outcome FROM audit_log WHERE operation = 'repairCampaign' ORDER BY id DESC LIMIT 1");
  expect(audit.rows[0]).toEqual({ actor: 'admin', arguments: { id }, outcome: 'OK' });
});

test('every kind of counter is checked and repaired: per partner, per minute, and the quota', async () => {
  const { id, partner } = await workedCampaign();
  await server.sql.query('UPDATE partner_counters SET active = active - 2, held = held + 1 WHERE campaign_id = $1 AND partner_id = $2 AND slot = (SELECT min(slot) FROM partner_counters WHERE campaign_id = $1 AND partner_id = $2)', [id, partner.id]);
  await server.sql.query("INSERT INTO minute_counters (campaign_id, minute, slot, active) VALUES ($1, '2020-01-01T00:00Z', 0, 4)", [id]);
  await server.sql.query('UPDATE partner_quotas SET live = live + 7 WHERE campaign_id = $1 AND partner_id = $2', [id, partner.id]);
  await server.sql.query("UPDATE campaign_counters SET total = total - 1, void = void + 2 WHERE campaign_id = $1 AND slot = (SELECT min(slot) FROM campaign_counters WHERE campaign_id = $1)", [id]);
  const found = await verify(id);
  const byCheck = Object.fromEntries(found.drifts.map((d) => [`${d.check}${d.subject ? ` ${d.subject}` : ''}`, d.size]));
  expect(byCheck).toEqual({
    'counter.total': 1,
    'counter.void': 2,
    [`partner.active ${partner.id}`]: 2,
    [`partner.held ${partner.id}`]: 1,
    'timeline.active 2020-01-01T00:00Z': 4,
    [`quota.live ${partner.id}`]: 7,
  });
  expect(found.drifts.every((d) => d.repairable)).toBe(true);
  const repaired = await repair(id);
  expect(repaired).toMatchObject({ ok: true, drifts: [] });
  expect(repaired.repaired).toHaveLength(6);
  expect(await verify(id)).toMatchObject({ ok: true, drifts: [] });
  // The figures the API shows follow the repair.
  const stats = (await server.gql(ADMIN_KEY, 'query($id: ID!) { campaign(id: $id) { stats { total void } timeline(bucket: DAY) { allocated } } }', { id })).body.data!.campaign;
  expect(stats.stats).toEqual({ total: 40, void: 0 });
});

test('a repair while claims arrive neither loses nor double-counts a claim', async () => {
  const partner = await server.createPartner('storm');
  const id = await server.openCampaignWith(300);
  await server.sql.query('UPDATE campaign_counters SET allocated = allocated + 5 WHERE campaign_id = $1 AND slot = (SELECT min(slot) FROM campaign_counters WHERE campaign_id = $1)', [id]);
  const claims = Promise.all(Array.from({ length: 200 }, (_, i) => server.claim(partner.apiKey, { campaignId: id, holder: `s${i}` })));
  const repairs = Promise.all([repair(id), sleep(20).then(() => repair(id))]);
  const [answers] = await Promise.all([claims, repairs]);
  expect(answers.filter((a) => a.allocation).length).toBe(200);
  expect(await verify(id)).toMatchObject({ ok: true, drifts: [] });
});

test('an unknown campaign is NOT_FOUND; a partner key is FORBIDDEN; bad ids never reach the database', async () => {
  expect((await server.gql(ADMIN_KEY, VERIFY, { id: '00000000-0000-0000-0000-0000000000ee' })).body.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
  expect((await server.gql(ADMIN_KEY, REPAIR, { id: 'not-a-uuid' })).body.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
  const partner = await server.createPartner('nosy');
  const id = await server.openCampaignWith(1);
  expect((await server.gql(partner.apiKey, VERIFY, { id })).body.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
});
