// The history checker must catch what it claims to catch: each test plants one violation in an
// otherwise clean history (or database) and expects the checker to name it.
import { checkHistory, History } from './chaos/history';
import { sendClaim } from './chaos/client';
import { startTestServer, type TestServer } from './helpers/testServer';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.stop());

/** A clean history: `claims` keyed claims on a pool of `tickets`, all answered. */
async function cleanHistory(tickets: number, claims: number): Promise<{ history: History; campaignId: string }> {
  const partner = await server.createPartner();
  const campaignId = await server.openCampaignWith(tickets);
  const history = new History();
  for (let i = 0; i < claims; i += 1) {
    const request = { campaignId, holder: `h${i}`, metadata: { i }, idempotencyKey: `k-${campaignId}-${i}` };
    const inv = history.add(request, partner.apiKey);
    const startedAt = Date.now();
    const outcome = await sendClaim(server.url, partner.apiKey, request, { timeoutMs: 10_000 });
    inv.attempts.push({ startedAt, endedAt: Date.now(), outcome, retry: false });
  }
  return { history, campaignId };
}

test('a clean history has no violations', async () => {
  const { history, campaignId } = await cleanHistory(3, 5);
  expect((await checkHistory(history, server.sql, campaignId)).violations).toEqual([]);
});

test('an acknowledged allocation missing from the database is a violation', async () => {
  const { history, campaignId } = await cleanHistory(3, 3);
  await server.sql.query(`UPDATE tickets SET status = 'AVAILABLE' WHERE campaign_id = $1 AND id = (SELECT ticket_id FROM allocations WHERE campaign_id = $1 LIMIT 1)`, [campaignId]);
  await server.sql.query(`DELETE FROM allocations WHERE id = (SELECT id FROM allocations WHERE campaign_id = $1 LIMIT 1)`, [campaignId]);
  expect((await checkHistory(history, server.sql, campaignId)).violations.join('\n')).toMatch(/is not stored/);
});

test('one key answered with two different allocations is a violation', async () => {
  const { history, campaignId } = await cleanHistory(3, 2);
  const inv = history.invocations[0]!;
  inv.attempts.push({ startedAt: 0, endedAt: 0, retry: true, outcome: { kind: 'ok', allocationId: '00000000-0000-0000-0000-00000000abcd', ticketCode: 'X', sequence: 1 } });
  expect((await checkHistory(history, server.sql, campaignId)).violations.join('\n')).toMatch(/answered 2 different allocations/);
});

test('SOLD_OUT while tickets remain available is a violation (under-allocation)', async () => {
  const { history, campaignId } = await cleanHistory(5, 2);
  history.invocations[1]!.attempts.push({ startedAt: 0, endedAt: 0, retry: true, outcome: { kind: 'refused', code: 'SOLD_OUT' } });
  expect((await checkHistory(history, server.sql, campaignId)).violations.join('\n')).toMatch(/SOLD_OUT but 3 tickets are still available/);
});

test('a stored allocation no request asked for is a violation', async () => {
  const { history, campaignId } = await cleanHistory(3, 1);
  await sendClaim(server.url, history.invocations[0]!.partnerKey, { campaignId, holder: 'ghost', metadata: {}, idempotencyKey: 'ghost-key' }, { timeoutMs: 10_000 });
  expect((await checkHistory(history, server.sql, campaignId)).violations.join('\n')).toMatch(/belongs to no request/);
});

test('an unanswered request, inconsistent stats, fill going backwards and a claim after close are violations', async () => {
  const { history, campaignId } = await cleanHistory(4, 2);
  history.add({ campaignId, holder: 'x', metadata: {}, idempotencyKey: 'never' }, 'k').attempts.push({ startedAt: 0, endedAt: 0, retry: false, outcome: { kind: 'unknown', reason: 'http 503' } });
  history.statsReads.push({ at: 1, total: 4, allocated: 2, held: 0, allotted: 0, available: 1, void: 0 }, { at: 2, total: 4, allocated: 1, held: 0, allotted: 0, available: 3, void: 0 });
  history.closeAck = { at: 3, storedAtAck: 1 };
  const violations = (await checkHistory(history, server.sql, campaignId)).violations.join('\n');
  expect(violations).toMatch(/key never was never answered/);
  expect(violations).toMatch(/2\+0\+0\+1\+0 != 4/);
  expect(violations).toMatch(/allocated went back from 2 to 1/);
  expect(violations).toMatch(/1 allocations stored after closeCampaign was acknowledged/);
});
