// @dialects postgresql citus
// Holds are leases (docs/CORRECTNESS.md §9): holdTicket takes a ticket out of the pool until expiresAt;
// confirmHold makes it ACTIVE while the hold lasts; an expired hold's ticket is back in the pool
// from that instant — in every read and for every claim — with or without the sweeper.
import { ADMIN_KEY, assertPoolInvariants, startTestServer, type AllocationAnswer, type TestServer } from './helpers/testServer';
import { allocationWithTicket, ticketsLiveTwice } from './helpers/sql';
import { expireHolds, setHoldExpiry, sleep, until } from './helpers/time';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ database: { poolSize: 20 } });
});
afterAll(() => server.stop());

const CONFIRM = `mutation Confirm($id: ID!) {
  confirmHold(allocationId: $id) {
    allocation { id status expiresAt sequence ticket { id code status } }
    error { code message }
  }
}`;
const RELEASE = `mutation Release($id: ID!) {
  releaseAllocation(allocationId: $id) { allocation { id status ticket { code status } } error { code } }
}`;
const STATS = 'query Stats($id: ID!) { campaign(id: $id) { stats { total allocated held available } } }';
const ALLOCATION = 'query Allocation($id: ID!) { allocation(id: $id) { id status expiresAt ticket { id code status } } }';

interface HoldAnswer {
  allocation: null | { id: string; status: string; expiresAt: string | null; sequence: number; holder?: string; ticket: { id: string; code: string; status: string } };
  error: null | { code: string; message: string };
}

async function confirm(key: string, id: string): Promise<HoldAnswer> {
  const res = await server.gql<{ confirmHold: HoldAnswer }>(key, CONFIRM, { id });
  if (res.body.errors?.length) throw new Error(`confirmHold failed: ${JSON.stringify(res.body.errors)}`);
  return res.body.data!.confirmHold;
}
async function stats(campaignId: string): Promise<{ total: number; allocated: number; held: number; available: number }> {
  const res = await server.gql(ADMIN_KEY, STATS, { id: campaignId });
  return res.body.data!.campaign.stats;
}
async function allocation(key: string, id: string) {
  const res = await server.gql(key, ALLOCATION, { id });
  expect(res.body.errors).toBeUndefined();
  return res.body.data!.allocation;
}
const dbAllocation = (id: string) => allocationWithTicket(server.sql, id);

test('holdTicket answers a HELD allocation that expires ttlSeconds from now, and its ticket is HELD', async () => {
  const partner = await server.createPartner();
  const campaignId = await server.openCampaignWith(5);
  const before = Date.now();
  const held = await server.hold(partner.apiKey, { campaignId, holder: 'alice', ttlSeconds: 120 });
  const after = Date.now();
  expect(held.error).toBeNull();
  expect(held.allocation).toMatchObject({ status: 'HELD', holder: 'alice', ticket: { status: 'HELD' } });
  const expiresAt = Date.parse(held.allocation!.expiresAt!);
  expect(expiresAt).toBeGreaterThanOrEqual(before + 120_000 - 2_000);
  expect(expiresAt).toBeLessThanOrEqual(after + 120_000 + 2_000);
  expect(await dbAllocation(held.allocation!.id)).toEqual({ status: 'HELD', ticket_status: 'HELD' });
  const read = await allocation(partner.apiKey, held.allocation!.id);
  expect(read).toMatchObject({ status: 'HELD', ticket: { status: 'HELD' } });
});

test('a held ticket counts as held in the stats, neither available nor allocated', async () => {
  const partner = await server.createPartner();
  const campaignId = await server.openCampaignWith(5);
  await server.hold(partner.apiKey, { campaignId });
  await server.claim(partner.apiKey, { campaignId });
  const s = await stats(campaignId);
  expect(s).toEqual({ total: 5, allocated: 1, held: 1, available: 3 });
  expect(s.allocated + s.held + s.available).toBe(s.total);
});

test('confirmHold before expiry makes the allocation ACTIVE and its ticket ALLOCATED', async () => {
  const partner = await server.createPartner();
  const campaignId = await server.openCampaignWith(3);
  const held = (await server.hold(partner.apiKey, { campaignId })).allocation!;
  const confirmed = await confirm(partner.apiKey, held.id);
  expect(confirmed.error).toBeNull();
  expect(confirmed.allocation).toMatchObject({ id: held.id, status: 'ACTIVE', sequence: held.sequence, ticket: { code: held.ticket.code, status: 'ALLOCATED' } });
  expect(confirmed.allocation!.expiresAt).toBeNull();
  expect(await dbAllocation(held.id)).toEqual({ status: 'ACTIVE', ticket_status: 'ALLOCATED' });
  await assertPoolInvariants(server.sql, campaignId);
});

test('confirming a hold moves it from held to allocated in the stats', async () => {
  const partner = await server.createPartner();
  const campaignId = await server.openCampaignWith(3);
  const held = (await server.hold(partner.apiKey, { campaignId })).allocation!;
  expect(await stats(campaignId)).toEqual({ total: 3, allocated: 0, held: 1, available: 2 });
  await confirm(partner.apiKey, held.id);
  expect(await stats(campaignId)).toEqual({ total: 3, allocated: 1, held: 0, available: 2 });
});

test('confirming a hold twice answers the same ACTIVE allocation, without an error', async () => {
  const partner = await server.createPartner();
  const campaignId = await server.openCampaignWith(3);
  const held = (await server.hold(partner.apiKey, { campaignId })).allocation!;
  const first = await confirm(partner.apiKey, held.id);
  const second = await confirm(partner.apiKey, held.id);
  expect(second.error).toBeNull();
  expect(second.allocation).toEqual(first.allocation);
  expect(second.allocation!.status).toBe('ACTIVE');
  expect(await stats(campaignId)).toEqual({ total: 3, allocated: 1, held: 0, available: 2 });
});

describe('a hold that expired before its confirmation', () => {
  let partner: { id: string; apiKey: string };
  let campaignId: string;
  let held: NonNullable<HoldAnswer['allocation']>;
  let confirmed: HoldAnswer;

  beforeAll(async () => {
    partner = await server.createPartner();
    campaignId = await server.openCampaignWith(1);
    held = (await server.hold(partner.apiKey, { campaignId })).allocation!;
    await expireHolds(server.sql, [held.id]);
    confirmed = await confirm(partner.apiKey, held.id);
  });

  test('confirmHold answers HOLD_EXPIRED', () => {
    expect(confirmed).toMatchObject({ allocation: null, error: { code: 'HOLD_EXPIRED' } });
  });

  test('the stats show its ticket available again', async () => {
    expect(await stats(campaignId)).toEqual({ total: 1, allocated: 0, held: 0, available: 1 });
  });

  test('allocation(id) shows it EXPIRED and its ticket AVAILABLE', async () => {
    expect(await allocation(partner.apiKey, held.id)).toMatchObject({ id: held.id, status: 'EXPIRED', ticket: { code: held.ticket.code, status: 'AVAILABLE' } });
  });

  test('a new claim gets exactly that ticket', async () => {
    const claimed = await server.claim(partner.apiKey, { campaignId, holder: 'next' });
    expect(claimed.error).toBeNull();
    expect(claimed.allocation!.ticket.code).toBe(held.ticket.code);
    expect(await dbAllocation(held.id)).toEqual({ status: 'EXPIRED', ticket_status: 'ALLOCATED' });
    await assertPoolInvariants(server.sql, campaignId);
  });
});

test('confirmHold of a claimed (never held) allocation answers NOT_HELD and changes nothing', async () => {
  const partner = await server.createPartner();
  const campaignId = await server.openCampaignWith(3);
  const claimed = (await server.claim(partner.apiKey, { campaignId })).allocation!;
  expect(await confirm(partner.apiKey, claimed.id)).toMatchObject({ allocation: null, error: { code: 'NOT_HELD' } });
  expect(await dbAllocation(claimed.id)).toEqual({ status: 'ACTIVE', ticket_status: 'ALLOCATED' });
});

test('confirmHold of a released hold answers NOT_HELD and leaves the ticket in the pool', async () => {
  const partner = await server.createPartner();
  const campaignId = await server.openCampaignWith(3);
  const held = (await server.hold(partner.apiKey, { campaignId })).allocation!;
  await server.gql(partner.apiKey, RELEASE, { id: held.id });
  expect(await confirm(partner.apiKey, held.id)).toMatchObject({ allocation: null, error: { code: 'NOT_HELD' } });
  expect(await dbAllocation(held.id)).toEqual({ status: 'RELEASED', ticket_status: 'AVAILABLE' });
  expect(await stats(campaignId)).toEqual({ total: 3, allocated: 0, held: 0, available: 3 });
});

test('confirmHold of an unknown or malformed id answers ALLOCATION_NOT_FOUND', async () => {
  const partner = await server.createPartner();
  for (const id of ['00000000-0000-4000-8000-000000000000', 'not-an-id', '', "'; DROP TABLE allocations; --"]) {
    expect(await confirm(partner.apiKey, id)).toMatchObject({ allocation: null, error: { code: 'ALLOCATION_NOT_FOUND' } });
  }
});

test("confirmHold of another partner's hold answers ALLOCATION_NOT_FOUND and leaves the hold as it was", async () => {
  const owner = await server.createPartner('Owner');
  const other = await server.createPartner('Other');
  const campaignId = await server.openCampaignWith(3);
  const held = (await server.hold(owner.apiKey, { campaignId })).allocation!;
  expect(await confirm(other.apiKey, held.id)).toMatchObject({ allocation: null, error: { code: 'ALLOCATION_NOT_FOUND' } });
  expect(await dbAllocation(held.id)).toEqual({ status: 'HELD', ticket_status: 'HELD' });
});

test('a claim on a pool whose only ticket is held answers ALL_HELD, not SOLD_OUT', async () => {
  const partner = await server.createPartner();
  const campaignId = await server.openCampaignWith(1);
  await server.hold(partner.apiKey, { campaignId });
  expect(await server.claim(partner.apiKey, { campaignId, holder: 'late' })).toMatchObject({ allocation: null, error: { code: 'ALL_HELD' } });
});

test('once the only held ticket is confirmed, a claim answers SOLD_OUT', async () => {
  const partner = await server.createPartner();
  const campaignId = await server.openCampaignWith(1);
  const held = (await server.hold(partner.apiKey, { campaignId })).allocation!;
  await confirm(partner.apiKey, held.id);
  expect(await server.claim(partner.apiKey, { campaignId, holder: 'late' })).toMatchObject({ allocation: null, error: { code: 'SOLD_OUT' } });
});

test.each([0, -1, 86_401])('holdTicket with ttlSeconds %p answers INVALID_INPUT and holds nothing', async (ttlSeconds) => {
  const partner = await server.createPartner();
  const campaignId = await server.openCampaignWith(2);
  expect(await server.hold(partner.apiKey, { campaignId, ttlSeconds })).toMatchObject({ allocation: null, error: { code: 'INVALID_INPUT' } });
  const { rows } = await server.sql.query('SELECT count(*)::int AS n FROM allocations WHERE campaign_id = $1', [campaignId]);
  expect(rows[0].n).toBe(0);
});

test('holdTicket accepts the bounds of ttlSeconds, 1 and 86400', async () => {
  const partner = await server.createPartner();
  const campaignId = await server.openCampaignWith(2);
  expect((await server.hold(partner.apiKey, { campaignId, ttlSeconds: 86_400 })).allocation?.status).toBe('HELD');
  expect((await server.hold(partner.apiKey, { campaignId, ttlSeconds: 1 })).allocation).not.toBeNull();
});

test('holdTicket with a key already used answers the same hold, and holds no second ticket', async () => {
  const partner = await server.createPartner();
  const campaignId = await server.openCampaignWith(5);
  const input = { campaignId, holder: 'keyed', ttlSeconds: 300, idempotencyKey: 'hold-key-1' };
  const first = await server.hold(partner.apiKey, input);
  const again = await server.hold(partner.apiKey, input);
  expect(again.error).toBeNull();
  expect(again.allocation).toMatchObject({ id: first.allocation!.id, status: 'HELD', ticket: { code: first.allocation!.ticket.code } });
  expect(await stats(campaignId)).toMatchObject({ held: 1, available: 4 });
});

test('holdTicket with a key already used for another ttlSeconds answers IDEMPOTENCY_KEY_REUSED', async () => {
  const partner = await server.createPartner();
  const campaignId = await server.openCampaignWith(5);
  await server.hold(partner.apiKey, { campaignId, holder: 'keyed', ttlSeconds: 300, idempotencyKey: 'hold-key-2' });
  const reused = await server.hold(partner.apiKey, { campaignId, holder: 'keyed', ttlSeconds: 600, idempotencyKey: 'hold-key-2' });
  expect(reused).toMatchObject({ allocation: null, error: { code: 'IDEMPOTENCY_KEY_REUSED' } });
  expect(await stats(campaignId)).toMatchObject({ held: 1, available: 4 });
});

test('a key used by holdTicket is refused by claimTicket as IDEMPOTENCY_KEY_REUSED', async () => {
  const partner = await server.createPartner();
  const campaignId = await server.openCampaignWith(5);
  await server.hold(partner.apiKey, { campaignId, holder: 'keyed', idempotencyKey: 'hold-then-claim' });
  const claimed = await server.claim(partner.apiKey, { campaignId, holder: 'keyed', idempotencyKey: 'hold-then-claim' });
  expect(claimed).toMatchObject({ allocation: null, error: { code: 'IDEMPOTENCY_KEY_REUSED' } });
  expect(await stats(campaignId)).toMatchObject({ held: 1, allocated: 0 });
});

test('holdTicket on a DRAFT campaign answers CAMPAIGN_NOT_OPEN, on an unknown one CAMPAIGN_NOT_FOUND', async () => {
  const partner = await server.createPartner();
  const draft = await server.createCampaign();
  await server.loadTickets(draft, 2);
  expect((await server.hold(partner.apiKey, { campaignId: draft })).error?.code).toBe('CAMPAIGN_NOT_OPEN');
  expect((await server.hold(partner.apiKey, { campaignId: '00000000-0000-4000-8000-000000000003' })).error?.code).toBe('CAMPAIGN_NOT_FOUND');
});

test('confirmHold after closeCampaign answers CAMPAIGN_NOT_OPEN and leaves the hold unconfirmed', async () => {
  const partner = await server.createPartner();
  const campaignId = await server.openCampaignWith(3);
  const held = (await server.hold(partner.apiKey, { campaignId })).allocation!;
  await server.gql(ADMIN_KEY, 'mutation($id: ID!) { closeCampaign(id: $id) { campaign { status } } }', { id: campaignId });
  expect(await confirm(partner.apiKey, held.id)).toMatchObject({ allocation: null, error: { code: 'CAMPAIGN_NOT_OPEN' } });
  expect((await dbAllocation(held.id)).status).toBe('HELD');
});

test('releaseAllocation of a hold returns its ticket to the pool', async () => {
  const partner = await server.createPartner();
  const campaignId = await server.openCampaignWith(1);
  const held = (await server.hold(partner.apiKey, { campaignId })).allocation!;
  const released = await server.gql(partner.apiKey, RELEASE, { id: held.id });
  expect(released.body.data!.releaseAllocation).toMatchObject({ allocation: { status: 'RELEASED', ticket: { status: 'AVAILABLE' } }, error: null });
  expect(await dbAllocation(held.id)).toEqual({ status: 'RELEASED', ticket_status: 'AVAILABLE' });
  expect(await stats(campaignId)).toEqual({ total: 1, allocated: 0, held: 0, available: 1 });
  const claimed = await server.claim(partner.apiKey, { campaignId, holder: 'next' });
  expect(claimed.allocation?.ticket.code).toBe(held.ticket.code);
  await assertPoolInvariants(server.sql, campaignId);
});

test('the hold sweeper writes EXPIRED into the database and returns the ticket by itself', async () => {
  const partner = await server.createPartner();
  const campaignId = await server.openCampaignWith(2);
  const held = (await server.hold(partner.apiKey, { campaignId })).allocation!;
  await expireHolds(server.sql, [held.id]);
  // Nothing but the sweeper writes here: it comes by on its own interval (every second).
  const row = await until(
    async () => {
      const r = await dbAllocation(held.id);
      return r.status === 'EXPIRED' && r;
    },
    { message: 'the sweeper to write EXPIRED', timeoutMs: 5_000, intervalMs: 100 },
  );
  expect(row).toEqual({ status: 'EXPIRED', ticket_status: 'AVAILABLE' });
  await assertPoolInvariants(server.sql, campaignId);
});

// Holds of a minute, expired afterwards in the database: however long the forty holds take to be
// answered, none lapses while they race (an expired hold's ticket may rightly be held again).
/** How many answers of each kind: OK, or the error's code (with its message when it has none). */
function answers(all: readonly { allocation?: unknown; error?: { code: string; message?: string } | null }[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const a of all) {
    const kind = a.allocation ? 'OK' : (a.error?.code ?? 'neither an allocation nor an error');
    counts[kind] = (counts[kind] ?? 0) + 1;
  }
  return counts;
}

describe('forty parallel holds on a pool of ten, then expired', () => {
  let campaignId: string;
  let holds: HoldAnswer[];
  let claims: AllocationAnswer[];

  beforeAll(async () => {
    const partners = await Promise.all([server.createPartner('R1'), server.createPartner('R2')]);
    campaignId = await server.openCampaignWith(10);
    holds = await Promise.all(Array.from({ length: 40 }, (_, i) => server.hold(partners[i % 2]!.apiKey, { campaignId, holder: `hold-${i}`, ttlSeconds: 60 })));
    const heldIds = holds.filter((h) => h.allocation).map((h) => h.allocation!.id);
    // Every hold expires (by the database's clock), then forty claims race.
    await expireHolds(server.sql, heldIds);
    claims = await Promise.all(Array.from({ length: 40 }, (_, i) => server.claim(partners[i % 2]!.apiKey, { campaignId, holder: `claim-${i}` })));
    expect(heldIds).toHaveLength(10);
  });

  test('exactly ten are held and thirty answer ALL_HELD', () => {
    const held = holds.filter((h) => h.allocation);
    expect(held).toHaveLength(10);
    expect(new Set(held.map((h) => h.allocation!.ticket.code)).size).toBe(10);
    expect(answers(holds)).toEqual({ OK: 10, ALL_HELD: 30 });
  });

  test('after they expire, forty parallel claims allocate exactly ten tickets, each once', () => {
    const granted = claims.filter((c) => c.allocation);
    expect(granted).toHaveLength(10);
    expect(new Set(granted.map((c) => c.allocation!.ticket.code)).size).toBe(10);
    expect(answers(claims)).toEqual({ OK: 10, SOLD_OUT: 30 });
  });

  test('the ten expired holds are EXPIRED in the database and the pool is consistent', async () => {
    const { rows } = await server.sql.query(
      `SELECT status::text, count(*)::int AS n FROM allocations WHERE campaign_id = $1 GROUP BY status ORDER BY status`,
      [campaignId],
    );
    expect(Object.fromEntries(rows.map((r) => [r.status, r.n]))).toEqual({ ACTIVE: 10, EXPIRED: 10 });
    expect(await ticketsLiveTwice(server.sql, campaignId)).toEqual([]);
    expect(await assertPoolInvariants(server.sql, campaignId)).toMatchObject({ total: 10, allocated: 10, available: 0 });
  });
});

test('confirmations racing their holds’ expiry, the sweeper and takeovers: every ACTIVE answer stays ACTIVE, no ticket twice', async () => {
  const partner = await server.createPartner();
  const campaignId = await server.openCampaignWith(20);
  const holds = await Promise.all(Array.from({ length: 20 }, (_, i) => server.hold(partner.apiKey, { campaignId, holder: `edge-${i}`, ttlSeconds: 60 })));
  const ids = holds.map((h) => h.allocation!.id);
  // Real time on purpose: the holds lapse 40-800 ms from now (by the database's clock, in a
  // shuffled order) while the confirmations go out over 0-114 ms, with claims taking over whatever
  // has lapsed: however slow the machine, some confirmations land before their hold's expiry, some
  // after, some at the instant.
  await setHoldExpiry(
    server.sql,
    ids,
    ids.map((_, i) => 40 + ((i * 7) % 20) * 40),
  );
  const [confirmations] = await Promise.all([
    Promise.all(ids.map((id, i) => sleep(i * 6).then(() => confirm(partner.apiKey, id)))),
    Promise.all(Array.from({ length: 20 }, (_, i) => sleep(i * 6).then(() => server.claim(partner.apiKey, { campaignId, holder: `taker-${i}` })))),
  ]);
  for (const [i, answer] of confirmations.entries()) {
    const row = await dbAllocation(ids[i]!);
    if (answer.allocation) {
      expect(answer.allocation.status).toBe('ACTIVE');
      expect(row).toEqual({ status: 'ACTIVE', ticket_status: 'ALLOCATED' });
    } else {
      expect(answer.error?.code).toBe('HOLD_EXPIRED');
      expect(row.status).not.toBe('ACTIVE');
    }
  }
  await assertPoolInvariants(server.sql, campaignId);
});

// The sweeper "is not needed for correctness" (src/sweeper.ts): an expired hold is over from the
// instant it expires. Here a server runs no sweeper (holdSweepIntervalMs 0), and nothing else
// sweeps its database, so every read and every claim has to see the expiry by itself.
describe('without the sweeper', () => {
  let quiet: TestServer;
  beforeAll(async () => {
    quiet = await startTestServer({ database: { poolSize: 10 }, config: { holdSweepIntervalMs: 0 } });
  });
  afterAll(() => quiet.stop());

  test('an expired hold reads as EXPIRED, its ticket as AVAILABLE, and a claim takes that ticket', async () => {
    const partner = await quiet.createPartner();
    const campaignId = await quiet.openCampaignWith(1);
    const held = (await quiet.hold(partner.apiKey, { campaignId })).allocation!;
    await expireHolds(quiet.sql, [held.id]);
    expect((await quiet.sql.query('SELECT status::text FROM allocations WHERE id = $1', [held.id])).rows[0].status).toBe('HELD');
    const read = await quiet.gql(partner.apiKey, ALLOCATION, { id: held.id });
    expect(read.body.data!.allocation).toMatchObject({ status: 'EXPIRED', ticket: { status: 'AVAILABLE' } });
    const s = await quiet.gql(ADMIN_KEY, STATS, { id: campaignId });
    expect(s.body.data!.campaign.stats).toEqual({ total: 1, allocated: 0, held: 0, available: 1 });
    const claimed = await quiet.claim(partner.apiKey, { campaignId, holder: 'next' });
    expect(claimed.allocation?.ticket.code).toBe(held.ticket.code);
    expect((await quiet.sql.query('SELECT status::text FROM allocations WHERE id = $1', [held.id])).rows[0].status).toBe('EXPIRED');
    await assertPoolInvariants(quiet.sql, campaignId);
  });

  // Known bug: releaseAllocation ends any allocation whose status column is still HELD, so a hold
  // the API already reads as EXPIRED becomes RELEASED — or stays EXPIRED, if the sweeper came
  // first: the same request at the same moment answers differently.
  test('releasing a hold that has already expired answers it as EXPIRED, not RELEASED', async () => {
    const partner = await quiet.createPartner();
    const campaignId = await quiet.openCampaignWith(2);
    const held = (await quiet.hold(partner.apiKey, { campaignId })).allocation!;
    await expireHolds(quiet.sql, [held.id]);
    const released = await quiet.gql(partner.apiKey, RELEASE, { id: held.id });
    expect(released.body.data!.releaseAllocation).toMatchObject({ allocation: { id: held.id, status: 'EXPIRED' }, error: null });
    expect((await quiet.gql(partner.apiKey, ALLOCATION, { id: held.id })).body.data!.allocation.status).toBe('EXPIRED');
    await assertPoolInvariants(quiet.sql, campaignId);
  });

  // Known bug: the gate counts the hold as live until the sweeper or a takeover ends it, though the
  // API already reads it as EXPIRED; without the sweeper the holder stays blocked.
  test('an expired hold no longer counts against perHolderLimit', async () => {
    const partner = await quiet.createPartner();
    const campaignId = await quiet.openCampaignWith(5, { perHolderLimit: 1 });
    const held = (await quiet.hold(partner.apiKey, { campaignId, holder: 'once' })).allocation!;
    await expireHolds(quiet.sql, [held.id]);
    const claimed = await quiet.claim(partner.apiKey, { campaignId, holder: 'once' });
    expect(claimed.error).toBeNull();
    expect(claimed.allocation?.status).toBe('ACTIVE');
  });
});
