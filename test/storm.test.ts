// @dialects postgresql pgbouncer citus
// What an independent checker does: a storm over HTTP — demand three times the pool, several
// partners, idempotency keys (and retries of them), releases, stats reads, a close in the middle —
// then every invariant checked through the API and in the database.
import { randomUUID } from 'node:crypto';
import { ADMIN_KEY, assertPoolInvariants, CLAIM, startTestServer, type ClaimPayload, type TestServer } from './helpers/testServer';
import { sleep, until } from './helpers/time';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ database: { poolSize: 12 } });
});
afterAll(() => server.stop());

const STATS = 'query($id: ID!) { campaign(id: $id) { status stats { total allocated held available fillRate } } }';
const RELEASE = 'mutation($id: ID!) { releaseAllocation(allocationId: $id) { allocation { id status } error { code } } }';

test('a mixed storm with releases, key retries, stats reads and a close keeps every invariant', async () => {
  const POOL = 150;
  const partners = await Promise.all(['P1', 'P2', 'P3', 'P4'].map((name) => server.createPartner(name)));
  const campaignId = await server.openCampaignWith(POOL, { perHolderLimit: 3 });

  const acknowledged = new Map<string, { allocationId: string; code: string }>(); // key -> answer
  const answersByKey = new Map<string, Set<string>>();
  const released = new Set<string>();
  const statsSeen: { allocated: number; total: number; held: number; available: number }[] = [];
  let stopStats = false;
  let answered = 0;

  const claimOnce = async (i: number, key: string) => {
    const partner = partners[i % partners.length]!;
    const r = await server.gql<ClaimPayload>(partner.apiKey, CLAIM, {
      input: { campaignId, holder: `holder-${i % 120}`, metadata: { i }, idempotencyKey: key },
    });
    expect(r.status).toBe(200);
    expect(r.body.errors).toBeUndefined();
    const payload = r.body.data!.claimTicket;
    const answer = payload.allocation ? `ok:${payload.allocation.id}` : `err:${payload.error!.code}`;
    answersByKey.set(key, (answersByKey.get(key) ?? new Set()).add(answer));
    answered += 1;
    if (payload.allocation) acknowledged.set(key, { allocationId: payload.allocation.id, code: payload.allocation.ticket.code });
    return { partner, payload };
  };

  const statsReader = (async () => {
    while (!stopStats) {
      const r = await server.gql(ADMIN_KEY, STATS, { id: campaignId });
      statsSeen.push(r.body.data!.campaign.stats);
      await sleep(5); // a reader's pace, not a wait
    }
  })();

  const storm = Array.from({ length: POOL * 3 }, async (_, i) => {
    const key = `storm-${i}-${randomUUID()}`;
    const { partner, payload } = await claimOnce(i, key);
    if (i % 7 === 0) await claimOnce(i, key); // a client retrying with its key
    if (payload.allocation && i % 10 === 0) {
      const r = await server.gql(partner.apiKey, RELEASE, { id: payload.allocation.id });
      if (r.body.data!.releaseAllocation.allocation?.status === 'RELEASED') released.add(payload.allocation.id);
    }
  });
  // The close comes in the middle of the storm: once part of it has been answered.
  await until(() => answered >= POOL / 3, { message: `the storm to be under way (${POOL / 3} claims answered)`, timeoutMs: 20_000 });
  const close = await server.gql(ADMIN_KEY, 'mutation($id: ID!) { closeCampaign(id: $id) { campaign { status } } }', { id: campaignId });
  const closed = close.body.data!.closeCampaign.campaign.status === 'CLOSED';
  const liveAtClose = (
    await server.sql.query(`SELECT count(*)::int AS n FROM allocations WHERE campaign_id = $1 AND status = 'ACTIVE'`, [campaignId])
  ).rows[0].n;
  await Promise.all(storm);
  stopStats = true;
  await statsReader;

  expect(closed).toBe(true);
  // Every key got one answer, however often it was sent (a refusal may turn into a grant only if
  // the pool changed between two sends; with one send plus one retry, grant and refusal never mix).
  for (const answers of answersByKey.values()) {
    const grants = [...answers].filter((a) => a.startsWith('ok:'));
    expect(grants.length).toBeLessThanOrEqual(1);
  }
  // Every acknowledged allocation is stored, under its key, with the ticket it was answered with.
  const { rows } = await server.sql.query(
    `SELECT a.id, a.idempotency_key, a.status, t.code FROM allocations a
       JOIN tickets t ON t.campaign_id = a.campaign_id AND t.id = a.ticket_id WHERE a.campaign_id = $1`,
    [campaignId],
  );
  const stored = new Map(rows.map((r) => [r.idempotency_key, r]));
  for (const [key, answer] of acknowledged) {
    expect(stored.get(key)).toMatchObject({ id: answer.allocationId, code: answer.code });
  }
  // Every stored allocation answers a request that was made.
  expect(rows.every((r) => answersByKey.has(r.idempotency_key))).toBe(true);
  for (const id of released) expect(rows.find((r) => r.id === id)!.status).toBe('RELEASED');
  // Nothing allocated after close returned (releases only shrink the live count).
  const liveNow = rows.filter((r) => r.status === 'ACTIVE').length;
  expect(liveNow).toBeLessThanOrEqual(liveAtClose);
  // Stats were consistent at every read.
  expect(statsSeen.length).toBeGreaterThan(0);
  for (const s of statsSeen) expect(s.allocated + s.held + s.available).toBe(s.total);
  await assertPoolInvariants(server.sql, campaignId);
});
