// @dialects postgresql pgbouncer citus
// The race: many parallel claims from several partners on a small pool, over HTTP, then the
// database checked by SQL. Nothing over-, under- or double-allocated; every acknowledged claim stored.
import { assertPoolInvariants, CLAIM, startTestServer, type ClaimPayload, type TestServer } from './helpers/testServer';
import { untilSessionsWaitForLock } from './helpers/time';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ database: { poolSize: 20 } });
});
afterAll(() => server.stop());

test('200 parallel claims from three partners on a pool of 50 allocate exactly 50 distinct tickets and answer 150 SOLD_OUT', async () => {
  const partners = await Promise.all(['A', 'B', 'C'].map((name) => server.createPartner(name)));
  const campaignId = await server.openCampaignWith(50);

  const results = await Promise.all(
    Array.from({ length: 200 }, (_, i) =>
      server.gql<ClaimPayload>(partners[i % 3]!.apiKey, CLAIM, { input: { campaignId, holder: `user-${i}`, metadata: { i } } }),
    ),
  );

  const granted = results.filter((r) => r.body.data?.claimTicket.allocation);
  const soldOut = results.filter((r) => r.body.data?.claimTicket.error?.code === 'SOLD_OUT');
  expect(results.every((r) => r.status === 200 && !r.body.errors)).toBe(true);
  expect(granted).toHaveLength(50);
  expect(soldOut).toHaveLength(150);

  const codes = granted.map((r) => r.body.data!.claimTicket.allocation!.ticket.code);
  expect(new Set(codes).size).toBe(50);

  // Every acknowledged claim is in the database, with the holder and metadata it was made with.
  const { rows } = await server.sql.query(
    `SELECT a.id, a.holder, a.metadata, t.code, t.status AS ticket_status, a.status
       FROM allocations a JOIN tickets t ON t.campaign_id = a.campaign_id AND t.id = a.ticket_id
      WHERE a.campaign_id = $1`,
    [campaignId],
  );
  expect(rows).toHaveLength(50);
  const stored = new Map(rows.map((row) => [row.id, row]));
  for (const r of granted) {
    const allocation = r.body.data!.claimTicket.allocation!;
    const row = stored.get(allocation.id);
    expect(row).toMatchObject({ code: allocation.ticket.code, holder: allocation.holder, status: 'ACTIVE', ticket_status: 'ALLOCATED' });
    expect(row.metadata).toEqual(allocation.metadata);
  }
  const stats = await assertPoolInvariants(server.sql, campaignId);
  expect(stats).toMatchObject({ total: 50, allocated: 50, available: 0 });
});

test('sequences are unique per campaign and increase with allocation order', async () => {
  const partner = await server.createPartner();
  const campaignId = await server.openCampaignWith(60);

  const sequential: number[] = [];
  for (let i = 0; i < 10; i += 1) {
    const r = await server.gql<ClaimPayload>(partner.apiKey, CLAIM, { input: { campaignId, holder: `seq-${i}` } });
    sequential.push(r.body.data!.claimTicket.allocation!.sequence);
  }
  expect([...sequential].sort((a, b) => a - b)).toEqual(sequential);
  expect(new Set(sequential).size).toBe(10);

  await Promise.all(
    Array.from({ length: 50 }, (_, i) => server.gql(partner.apiKey, CLAIM, { input: { campaignId, holder: `par-${i}` } })),
  );
  const { rows } = await server.sql.query(
    'SELECT count(*)::int AS n, count(DISTINCT sequence)::int AS d, min(sequence) AS lo FROM allocations WHERE campaign_id = $1',
    [campaignId],
  );
  expect(rows[0]).toMatchObject({ n: 60, d: 60 });
  // The parallel claims all came after the sequential ones.
  expect(Number(rows[0].lo)).toBe(sequential[0]);
  const later = await server.sql.query('SELECT min(sequence) AS m FROM allocations WHERE campaign_id = $1 AND holder LIKE $2', [campaignId, 'par-%']);
  expect(Number(later.rows[0].m)).toBeGreaterThan(Math.max(...sequential));
});

test('a claim never answers SOLD_OUT while the last ticket is locked by a claim that rolls back', async () => {
  const partner = await server.createPartner();
  const campaignId = await server.openCampaignWith(1);
  // Stand-in for a claim in flight: a transaction holding the only ticket's row lock.
  const inFlight = await server.sql.connect();
  try {
    await inFlight.query('BEGIN');
    await inFlight.query(`SELECT id FROM tickets WHERE campaign_id = $1 FOR UPDATE`, [campaignId]);
    const claim = server.gql<ClaimPayload>(partner.apiKey, CLAIM, { input: { campaignId, holder: 'patient' } });
    // The claim has skipped the locked ticket and now waits for it (plain FOR UPDATE).
    await untilSessionsWaitForLock(server.sql, 1, { message: 'the claim to wait for the locked last ticket' });
    await inFlight.query('ROLLBACK');
    const r = await claim;
    expect(r.body.data!.claimTicket.error).toBeNull();
    expect(r.body.data!.claimTicket.allocation!.holder).toBe('patient');
  } finally {
    inFlight.release();
  }
  await assertPoolInvariants(server.sql, campaignId);
});

test('a claim answers SOLD_OUT once the locked last ticket is committed to another claim', async () => {
  const partner = await server.createPartner();
  const campaignId = await server.openCampaignWith(1);
  const inFlight = await server.sql.connect();
  try {
    await inFlight.query('BEGIN');
    await inFlight.query(`UPDATE tickets SET status = 'ALLOCATED' WHERE campaign_id = $1`, [campaignId]);
    const claim = server.gql<ClaimPayload>(partner.apiKey, CLAIM, { input: { campaignId, holder: 'late' } });
    await untilSessionsWaitForLock(server.sql, 1, { message: 'the claim to wait for the locked last ticket' });
    // Another claim's allocation, recorded as every claim records one.
    await inFlight.query(
      `SELECT count(*) FROM tessera_record_allocations($1, 'ACTIVE', NULL, ARRAY(SELECT id FROM tickets WHERE campaign_id = $1),
                                                       ARRAY[$2::uuid], ARRAY['first'], NULL, NULL, NULL, NULL, NULL, NULL, NULL, true)`,
      [campaignId, partner.id],
    );
    await inFlight.query('COMMIT');
    const r = await claim;
    expect(r.body.data!.claimTicket.error?.code).toBe('SOLD_OUT');
  } finally {
    inFlight.release();
  }
  await assertPoolInvariants(server.sql, campaignId);
});
