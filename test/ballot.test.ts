// @dialects postgresql citus
// Ballot drops (src/db/ballots.ts, prisma/functions/tessera_draw_ballot.sql and its helpers): entries
// (one per partner and holder, races included), the seed's commitment, the draw (once, atomic, the
// contract's ranking and walk, recomputed here and by the published verifier), winners' holds, the
// pass-on of lapsed holds in rank order, quotas and allotments at the draw, and claims refused. After
// every test: no ticket live twice, the pool identity, and winners' allocations within the pool.
import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import { sealSecret } from '../src/webhooks/secrets';
import { newWebhookSecret } from '../src/webhooks/signature';
import { citusNodes } from './helpers/citus';
import { startReceiver, untilWebhooksSettled } from './helpers/receiver';
import { ticketsLiveTwice } from './helpers/sql';
import { ADMIN_KEY, assertPoolInvariants, startTestServer, TEST_WEBHOOK_KEY, type TestServer } from './helpers/testServer';
import { setTimes } from './helpers/setTimes';

const { verifyBallot } = createRequire(__filename)('../bin/verify-ballot.js') as {
  verifyBallot(ballot: unknown, entries: unknown[]): { ok: boolean; summary?: string; mismatch?: string };
};

let server: TestServer;
beforeAll(async () => {
  // No sweeper of its own: each pass-on is a sweep the test runs (server.sweep).
  server = await startTestServer({ database: { poolSize: 30 }, config: { holdSweepIntervalMs: 0 } });
});
afterAll(() => server.stop());

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

const ENTRY_FIELDS = 'id holder quantity status rank wonInDraw createdAt partner { id } allocations { id status expiresAt holder metadata ticket { code status } }';
const ENTER = `mutation($input: EnterBallotInput!) { enterBallot(input: $input) { entry { ${ENTRY_FIELDS} } error { code message } } }`;
const WITHDRAW = `mutation($id: ID!) { withdrawBallotEntry(entryId: $id) { entry { ${ENTRY_FIELDS} } error { code message } } }`;
const ENTRY = `query($id: ID!) { ballotEntry(id: $id) { ${ENTRY_FIELDS} } }`;
const BALLOT_FIELDS = 'seedCommitment seed entriesDigest entryCount winners drawnAt tickets partnerLimits';
const DRAW = `mutation($id: ID!) { drawBallot(campaignId: $id) { ballot { ${BALLOT_FIELDS} } } }`;
const CONFIRM = 'mutation($id: ID!) { confirmHold(allocationId: $id) { allocation { id status } error { code } } }';
const RELEASE = 'mutation($id: ID!) { releaseAllocation(allocationId: $id) { allocation { id status } error { code } } }';
const CAMPAIGN = `query($id: ID!, $after: String) {
  campaign(id: $id) {
    mode status entriesCloseAt ballotConfirmSeconds
    ballot { ${BALLOT_FIELDS} }
    stats { total allocated held allotted available void }
    ballotEntries(first: 100, after: $after) { totalCount pageInfo { hasNextPage endCursor } edges { cursor node { id quantity status rank wonInDraw partner { id } } } }
  }
}`;

interface Allocation {
  id: string;
  status: string;
  expiresAt: string | null;
  holder: string;
  metadata: unknown;
  ticket: { code: string; status: string };
}
interface Entry {
  id: string;
  holder: string;
  quantity: number;
  status: string;
  rank: number | null;
  wonInDraw: boolean | null;
  partner: { id: string };
  allocations: Allocation[];
}
interface Ballot {
  seedCommitment: string;
  seed: string | null;
  entriesDigest: string | null;
  entryCount: number;
  winners: number;
  drawnAt: string | null;
  tickets: number | null;
  partnerLimits: Record<string, { allotted?: number; quota?: number }> | null;
}
type EntryPayload = { entry: Entry | null; error: { code: string; message: string } | null };
type ListedEntry = Pick<Entry, 'id' | 'quantity' | 'status' | 'rank' | 'wonInDraw' | 'partner'>;

const enter = async (key: string, input: Record<string, unknown>) => (await server.gql<{ enterBallot: EntryPayload }>(key, ENTER, { input })).body.data!.enterBallot;
const withdraw = async (key: string, id: string) => (await server.gql<{ withdrawBallotEntry: EntryPayload }>(key, WITHDRAW, { id })).body.data!.withdrawBallotEntry;
const entry = async (key: string, id: string) => (await server.gql<{ ballotEntry: Entry | null }>(key, ENTRY, { id })).body.data!.ballotEntry;
async function draw(id: string): Promise<Ballot> {
  const res = await server.gql<{ drawBallot: { ballot: Ballot } }>(ADMIN_KEY, DRAW, { id });
  expect(res.body.errors).toBeUndefined();
  return res.body.data!.drawBallot.ballot;
}
async function campaign(id: string, key = ADMIN_KEY) {
  type C = {
    mode: string;
    status: string;
    ballot: Ballot | null;
    stats: Record<string, number>;
    ballotEntries: { totalCount: number; pageInfo: { hasNextPage: boolean; endCursor: string | null }; edges: { cursor: string; node: ListedEntry }[] };
  };
  const entries: ListedEntry[] = [];
  let after: string | null = null;
  let first: C | null = null;
  for (;;) {
    const res = await server.gql<{ campaign: C }>(key, CAMPAIGN, { id, after });
    expect(res.body.errors).toBeUndefined();
    const c: C = res.body.data!.campaign;
    first ??= c;
    entries.push(...c.ballotEntries.edges.map((e) => e.node));
    if (!c.ballotEntries.pageInfo.hasNextPage) break;
    after = c.ballotEntries.pageInfo.endCursor;
  }
  return { ...first!, entries };
}

/** An OPEN BALLOT campaign of `count` tickets. */
const ballotCampaign = (count: number, input: Record<string, unknown> = {}) => server.openCampaignWith(count, { mode: 'BALLOT', ...input });

/** The published data checked as a third party would, plus the pool identity and no ticket live twice. */
async function verified(campaignId: string) {
  const c = await campaign(campaignId);
  const result = verifyBallot(
    c.ballot,
    c.entries.map((e) => ({ ...e, partnerId: e.partner.id })),
  );
  expect(result).toMatchObject({ ok: true });
  await settled(campaignId);
  return c;
}

async function settled(campaignId: string) {
  expect(await ticketsLiveTwice(server.sql, campaignId)).toEqual([]);
  const stats = await assertPoolInvariants(server.sql, campaignId);
  // Winners' live allocations never exceed the pool, and every one is a won entry's.
  const { rows } = await server.sql.query<{ live: number; orphans: number; overdrawn: number }>(
    `SELECT count(*)::int AS live,
            count(*) FILTER (WHERE e.id IS NULL OR e.status NOT IN ('WON', 'LAPSED'))::int AS orphans,
            (SELECT count(*)::int FROM (SELECT a2.ballot_entry_id FROM allocations a2
                                          JOIN ballot_entries e2 ON e2.campaign_id = a2.campaign_id AND e2.id = a2.ballot_entry_id
                                         WHERE a2.campaign_id = $1 GROUP BY a2.ballot_entry_id, e2.quantity
                                        HAVING count(*) <> e2.quantity) x) AS overdrawn
       FROM allocations a LEFT JOIN ballot_entries e ON e.campaign_id = a.campaign_id AND e.id = a.ballot_entry_id
      WHERE a.campaign_id = $1 AND a.status IN ('HELD', 'ACTIVE')`,
    [campaignId],
  );
  expect(rows[0]!.live).toBeLessThanOrEqual(stats.total);
  expect(rows[0]!.orphans).toBe(0);
  expect(rows[0]!.overdrawn).toBe(0);
}

/** The contract's rule, written out again here: rank by sha256("<seed>:<id>"), walk, win if it fits. */
function recompute(seed: string, entries: { id: string; quantity: number }[], tickets: number) {
  const ranked = [...entries].sort((a, b) => (sha256(`${seed}:${a.id}`) < sha256(`${seed}:${b.id}`) ? -1 : 1));
  let left = tickets;
  return ranked.map((e, i) => {
    const wins = e.quantity <= left;
    if (wins) left -= e.quantity;
    return { id: e.id, rank: i + 1, wins };
  });
}

test('modes: createCampaign checks the ballot settings; a BALLOT campaign refuses every first-come claim, and publishes its commitment (never the seed) from the opening', async () => {
  const bad = async (input: Record<string, unknown>) =>
    (await server.gql(ADMIN_KEY, 'mutation($input: CreateCampaignInput!) { createCampaign(input: $input) { campaign { id } } }', { input: { name: 'x', ...input } }))
      .body.errors?.[0]?.extensions;
  expect(await bad({ entriesCloseAt: new Date(Date.now() + 60_000).toISOString() })).toMatchObject({ code: 'BAD_USER_INPUT', field: 'entriesCloseAt' });
  expect(await bad({ ballotConfirmSeconds: 60 })).toMatchObject({ code: 'BAD_USER_INPUT', field: 'ballotConfirmSeconds' });
  expect(await bad({ mode: 'BALLOT', releasePolicy: 'WAITLIST_FIRST' })).toMatchObject({ code: 'BAD_USER_INPUT', field: 'releasePolicy' });
  expect(await bad({ mode: 'BALLOT', entriesCloseAt: new Date(Date.now() - 1000).toISOString() })).toMatchObject({ field: 'entriesCloseAt' });
  expect(await bad({ mode: 'BALLOT', ballotConfirmSeconds: 0 })).toMatchObject({ field: 'ballotConfirmSeconds' });
  expect(await bad({ mode: 'BALLOT', maxHoldSeconds: 60, ballotConfirmSeconds: 61 })).toMatchObject({ field: 'ballotConfirmSeconds' });
  expect(await bad({ mode: 'LOTTERY' })).toMatchObject({ code: 'BAD_USER_INPUT' });

  const draftId = await server.createCampaign({ mode: 'BALLOT', maxHoldSeconds: 600 });
  await server.loadTickets(draftId, 3);
  const draft = await campaign(draftId);
  expect(draft).toMatchObject({ mode: 'BALLOT', ballot: null, ballotConfirmSeconds: 600, entriesCloseAt: null });
  const drawDraft = await server.gql(ADMIN_KEY, DRAW, { id: draftId });
  expect(drawDraft.body.errors?.[0]?.extensions?.code).toBe('INVALID_TRANSITION');

  await server.openCampaign(draftId);
  const opened = await campaign(draftId);
  expect(opened.ballot).toMatchObject({ seed: null, entriesDigest: null, entryCount: 0, winners: 0, drawnAt: null });
  expect(opened.ballot!.seedCommitment).toMatch(/^[0-9a-f]{64}$/);
  // The database holds the seed sealed, never in the clear.
  const { rows } = await server.sql.query('SELECT seed, sealed_seed FROM ballots WHERE campaign_id = $1', [draftId]);
  expect(rows[0]).toMatchObject({ seed: null, sealed_seed: expect.stringMatching(/^v1:/) });

  const partner = await server.createPartner('claimer');
  expect(await server.claim(partner.apiKey, { campaignId: draftId })).toMatchObject({ allocation: null, error: { code: 'CAMPAIGN_NOT_OPEN' } });
  const group = await server.gql(partner.apiKey, 'mutation($i: ClaimTicketsInput!) { claimTickets(input: $i) { allocations { id } error { code } } }', {
    i: { campaignId: draftId, holder: 'h', quantity: 2 },
  });
  expect(group.body.data!.claimTickets.error.code).toBe('CAMPAIGN_NOT_OPEN');
  expect((await server.hold(partner.apiKey, { campaignId: draftId, ttlSeconds: 60 })).error?.code).toBe('CAMPAIGN_NOT_OPEN');
  expect((await campaign(draftId)).stats).toMatchObject({ total: 3, available: 3, held: 0, allocated: 0 });

  // A first-come campaign has no ballot, and drawBallot says so.
  const firstCome = await server.openCampaignWith(1);
  expect((await campaign(firstCome)).ballot).toBeNull();
  expect((await server.gql(ADMIN_KEY, DRAW, { id: firstCome })).body.errors?.[0]?.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'campaignId' });
  expect((await server.gql(ADMIN_KEY, DRAW, { id: '00000000-0000-4000-8000-000000000000' })).body.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
  // Only an operator draws.
  expect((await server.gql(partner.apiKey, DRAW, { id: draftId })).body.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
});

test('entries: validated, one per partner and holder (ALREADY_ENTERED with it), idempotent by key, withdrawable before the draw, a partner sees only its own; nothing recorded for a refusal', async () => {
  const [partner, other] = await Promise.all([server.createPartner('entrant'), server.createPartner('other')]);
  const campaignId = await ballotCampaign(5, { perHolderLimit: 3 });
  const count = async () => (await server.sql.query('SELECT count(*)::int AS n FROM ballot_entries WHERE campaign_id = $1', [campaignId])).rows[0].n as number;

  for (const bad of [{ quantity: 0 }, { quantity: 4 }, { quantity: 101 }, { holder: '' }, { holder: 'x'.repeat(257) }, { idempotencyKey: '' }]) {
    expect(await enter(partner.apiKey, { campaignId, holder: 'h', ...bad })).toMatchObject({ entry: null, error: { code: 'INVALID_INPUT' } });
  }
  expect((await enter(partner.apiKey, { campaignId: 'nonsense', holder: 'h' })).error?.code).toBe('CAMPAIGN_NOT_FOUND');
  expect((await enter(partner.apiKey, { campaignId: '00000000-0000-4000-8000-000000000000', holder: 'h' })).error?.code).toBe('CAMPAIGN_NOT_FOUND');
  expect((await enter(partner.apiKey, { campaignId: await server.openCampaignWith(1), holder: 'h' })).error?.code).toBe('INVALID_INPUT');
  expect((await enter(partner.apiKey, { campaignId: await server.createCampaign({ mode: 'BALLOT' }), holder: 'h' })).error?.code).toBe('CAMPAIGN_NOT_OPEN');
  expect(await count()).toBe(0);

  const first = await enter(partner.apiKey, { campaignId, holder: 'h', quantity: 2, idempotencyKey: 'k1', metadata: { seat: 'aisle' } });
  expect(first).toMatchObject({ error: null, entry: { holder: 'h', quantity: 2, status: 'ENTERED', rank: null, wonInDraw: null, allocations: [] } });
  expect(await enter(partner.apiKey, { campaignId, holder: 'h', quantity: 2, idempotencyKey: 'k1', metadata: { seat: 'aisle' } })).toMatchObject({
    error: null,
    entry: { id: first.entry!.id },
  });
  expect((await enter(partner.apiKey, { campaignId, holder: 'h', quantity: 1, idempotencyKey: 'k1' })).error?.code).toBe('IDEMPOTENCY_KEY_REUSED');
  expect(await enter(partner.apiKey, { campaignId, holder: 'h' })).toMatchObject({ error: { code: 'ALREADY_ENTERED' }, entry: { id: first.entry!.id } });
  // Another partner's holder of the same name is another holder.
  const others = await enter(other.apiKey, { campaignId, holder: 'h' });
  expect(others.error).toBeNull();
  expect(await count()).toBe(2);

  // Visibility: the owner or the admin.
  expect(await entry(other.apiKey, first.entry!.id)).toBeNull();
  expect((await entry(partner.apiKey, first.entry!.id))!.id).toBe(first.entry!.id);
  expect((await entry(ADMIN_KEY, first.entry!.id))!.id).toBe(first.entry!.id);
  expect((await campaign(campaignId, partner.apiKey)).entries.map((e) => e.id)).toEqual([first.entry!.id]);
  expect((await campaign(campaignId)).entries).toHaveLength(2);
  expect((await campaign(campaignId)).ballot!.entryCount).toBe(2);
  expect((await withdraw(other.apiKey, first.entry!.id)).error?.code).toBe('ENTRY_NOT_FOUND');
  expect((await withdraw(other.apiKey, 'nonsense')).error?.code).toBe('ENTRY_NOT_FOUND');

  // Withdrawn, the holder may enter again; withdrawing twice changes nothing.
  expect((await withdraw(partner.apiKey, first.entry!.id)).entry!.status).toBe('WITHDRAWN');
  expect(await withdraw(partner.apiKey, first.entry!.id)).toMatchObject({ error: null, entry: { status: 'WITHDRAWN' } });
  const again = await enter(partner.apiKey, { campaignId, holder: 'h', quantity: 3 });
  expect(again).toMatchObject({ error: null, entry: { status: 'ENTERED', quantity: 3 } });
  expect(again.entry!.id).not.toBe(first.entry!.id);
  expect((await campaign(campaignId)).ballot!.entryCount).toBe(2);

  // entriesCloseAt passed: ENTRIES_CLOSED, and nothing recorded.
  await setTimes(server.sql, 'campaigns', { entries_close_at: "clock_timestamp() - interval '1 second'" }, 'id = $1', [campaignId]);
  expect((await enter(partner.apiKey, { campaignId, holder: 'late' })).error?.code).toBe('ENTRIES_CLOSED');
  expect(await count()).toBe(3);

  const ballot = await draw(campaignId);
  expect(ballot.entryCount).toBe(2);
  // After the draw: ENTRIES_CLOSED whatever else holds, for entering and withdrawing alike.
  await server.sql.query('UPDATE campaigns SET entries_close_at = NULL WHERE id = $1', [campaignId]);
  for (const input of [{ holder: 'new' }, { holder: 'h' }, { holder: 'h', idempotencyKey: 'k1', quantity: 2, metadata: { seat: 'aisle' } }, { holder: 'h', quantity: 50 }]) {
    expect((await enter(partner.apiKey, { campaignId, ...input })).error?.code).toBe('ENTRIES_CLOSED');
  }
  expect((await withdraw(partner.apiKey, again.entry!.id)).error?.code).toBe('ENTRIES_CLOSED');
  await verified(campaignId);
});

test('entry races: 200 entries for one holder from 30 connections give one entry; 200 holders at once give 200', async () => {
  const partner = await server.createPartner('racer');
  const campaignId = await ballotCampaign(50);
  const answers = await Promise.all(Array.from({ length: 200 }, (_, i) => enter(partner.apiKey, { campaignId, holder: 'one', idempotencyKey: i % 2 ? `k${i}` : undefined })));
  const ids = new Set(answers.map((a) => a.entry?.id));
  expect(ids.size).toBe(1);
  expect(answers.filter((a) => a.error === null)).toHaveLength(1);
  expect(answers.filter((a) => a.error?.code === 'ALREADY_ENTERED')).toHaveLength(199);
  const many = await Promise.all(Array.from({ length: 200 }, (_, i) => enter(partner.apiKey, { campaignId, holder: `h${i}` })));
  expect(many.every((a) => a.error === null)).toBe(true);
  const { rows } = await server.sql.query('SELECT count(*)::int AS n, count(DISTINCT holder)::int AS holders FROM ballot_entries WHERE campaign_id = $1', [campaignId]);
  expect(rows[0]).toEqual({ n: 201, holders: 201 });
  await draw(campaignId);
  await verified(campaignId);
});

test('the draw: the contract ranking and walk (recomputed here), digest and seed, winners HELD for ballotConfirmSeconds with the entry metadata, smaller later entries still win, HOLD_CREATED and BALLOT_DRAWN sent', async () => {
  const [a, b] = await Promise.all([server.createPartner('a'), server.createPartner('b')]);
  const secret = newWebhookSecret();
  const receiver = await startReceiver({ secret });
  try {
    await server.sql.query('INSERT INTO webhook_endpoints (partner_id, url, events, secret_sealed) VALUES ($1, $2, $3, $4)', [
      b.id,
      `${receiver.url}/b`,
      ['BALLOT_DRAWN', 'HOLD_CREATED'],
      sealSecret(secret, TEST_WEBHOOK_KEY),
    ]);
    const campaignId = await ballotCampaign(10, { ballotConfirmSeconds: 120 });
    const entered: { id: string; quantity: number }[] = [];
    for (let i = 0; i < 30; i += 1) {
      const who = i % 2 ? a : b;
      const e = await enter(who.apiKey, { campaignId, holder: `h${i}`, quantity: 1 + (i % 4), metadata: { i } });
      entered.push({ id: e.entry!.id, quantity: e.entry!.quantity });
    }
    const before = await campaign(campaignId);
    const started = Date.now();
    const ballot = await draw(campaignId);
    expect(sha256(ballot.seed!)).toBe(before.ballot!.seedCommitment);
    expect(ballot.seedCommitment).toBe(before.ballot!.seedCommitment);
    expect(ballot.entriesDigest).toBe(sha256(entered.map((e) => e.id).sort().join('\n')));
    expect(ballot).toMatchObject({ entryCount: 30, tickets: 10, partnerLimits: {} });

    const expected = recompute(ballot.seed!, entered, 10);
    const c = await verified(campaignId);
    const byId = new Map(c.entries.map((e) => [e.id, e]));
    for (const x of expected) expect(byId.get(x.id)).toMatchObject({ rank: x.rank, status: x.wins ? 'WON' : 'LOST', wonInDraw: x.wins });
    expect(ballot.winners).toBe(expected.filter((x) => x.wins).length);
    expect(c.entries.map((e) => e.rank)).toEqual(expected.map((x) => x.rank)); // rank order
    const won = expected.filter((x) => x.wins);
    const wonTickets = won.reduce((n, x) => n + entered.find((e) => e.id === x.id)!.quantity, 0);
    expect(c.stats).toMatchObject({ held: wonTickets, available: 10 - wonTickets, allocated: 0 });

    const winner = (await entry(ADMIN_KEY, won[0]!.id))!;
    expect(winner.allocations).toHaveLength(winner.quantity);
    for (const alloc of winner.allocations) {
      expect(alloc).toMatchObject({ status: 'HELD', holder: winner.holder, ticket: { status: 'HELD' } });
      expect(alloc.metadata).toEqual({ i: Number(winner.holder.slice(1)) });
      const ttl = new Date(alloc.expiresAt!).getTime() - started;
      expect(ttl).toBeGreaterThan(110_000);
      expect(ttl).toBeLessThan(125_000);
    }
    const loser = expected.find((x) => !x.wins);
    if (loser) expect((await entry(ADMIN_KEY, loser.id))!.allocations).toEqual([]);

    // Webhooks: one BALLOT_DRAWN (campaign-wide), and a HOLD_CREATED for each of b's winning holds only.
    const bHolds = c.entries.filter((e) => e.partner.id === b.id && e.wonInDraw).reduce((n, e) => n + e.quantity, 0);
    await untilWebhooksSettled(server.sql);
    const types = receiver.received.map((r) => (r.body as { type: string }).type);
    expect(types.filter((t) => t === 'BALLOT_DRAWN')).toHaveLength(1);
    expect(types.filter((t) => t === 'HOLD_CREATED')).toHaveLength(bHolds);
    const drawn = receiver.received.find((r) => (r.body as { type: string }).type === 'BALLOT_DRAWN')!.body as { data: Record<string, unknown> };
    expect(drawn.data).toMatchObject({
      campaign: { id: campaignId },
      ballot: { seed: ballot.seed, entriesDigest: ballot.entriesDigest, entryCount: 30, winners: ballot.winners },
    });
  } finally {
    await receiver.close();
  }
});

test('draw races: 12 concurrent drawBallot calls give one draw, all answering the same ballot', async () => {
  const partner = await server.createPartner('drawn');
  const campaignId = await ballotCampaign(40);
  await Promise.all(Array.from({ length: 120 }, (_, i) => enter(partner.apiKey, { campaignId, holder: `h${i}`, quantity: 1 + (i % 3) })));
  const ballots = await Promise.all(Array.from({ length: 12 }, () => draw(campaignId)));
  expect(new Set(ballots.map((x) => JSON.stringify(x))).size).toBe(1);
  const { rows } = await server.sql.query('SELECT count(*)::int AS n FROM allocations WHERE campaign_id = $1', [campaignId]);
  const c = await verified(campaignId);
  expect(rows[0].n).toBe(c.entries.filter((e) => e.wonInDraw).reduce((n, e) => n + e.quantity, 0));
  expect(rows[0].n).toBeLessThanOrEqual(40);
});

test('after the draw: a lapsed or released hold makes its entry LAPSED, and its tickets pass on to LOST entries in rank order, each once; confirmations stay WON', async () => {
  const partner = await server.createPartner('lapse');
  const campaignId = await ballotCampaign(6, { ballotConfirmSeconds: 300 });
  for (let i = 0; i < 40; i += 1) await enter(partner.apiKey, { campaignId, holder: `h${i}`, quantity: 1 + (i % 2) });
  const ballot = await draw(campaignId);
  let c = await verified(campaignId);
  const winners = c.entries.filter((e) => e.status === 'WON');
  expect(winners.reduce((n, e) => n + e.quantity, 0)).toBe(6);
  expect(ballot.winners).toBe(winners.length);

  // The first winner confirms; the second declines (a release); the others' holds lapse.
  const [keep, decline, ...lapse] = await Promise.all(winners.map((w) => entry(ADMIN_KEY, w.id)));
  for (const a of keep!.allocations) expect((await server.gql(partner.apiKey, CONFIRM, { id: a.id })).body.data!.confirmHold.allocation.status).toBe('ACTIVE');
  // The decline first, and its ticket passed on, before the lapses: each sweep walks the ranking
  // with the tickets free at that moment, so one ticket now and the rest later is not the same
  // walk as all of them at once (the expectation below follows the two walks).
  const lostAtDraw = (x: typeof c) => x.entries.filter((e) => !e.wonInDraw).sort((a, b) => a.rank! - b.rank!);
  const walk = (entries: typeof c.entries, tickets: number) => {
    const taken: string[] = [];
    for (const e of entries) {
      if (e.quantity <= tickets) {
        taken.push(e.id);
        tickets -= e.quantity;
      }
    }
    return { taken, left: tickets };
  };
  const first = walk(lostAtDraw(c), 1);
  await server.gql(partner.apiKey, RELEASE, { id: decline!.allocations[0]!.id });
  await server.sweep();
  expect((await campaign(campaignId)).entries.filter((e) => !e.wonInDraw && e.status === 'WON')).toHaveLength(first.taken.length);
  await setTimes(server.sql, 'allocations', { expires_at: 'clock_timestamp()' }, "ballot_entry_id = ANY($1::uuid[]) AND status = 'HELD'", [lapse.map((e) => e!.id)]);

  // A sweep ends the holds and passes the tickets on.
  const freed = 6 - keep!.quantity;
  await server.sweep();
  c = await verified(campaignId);
  expect(c.stats.available === 0 || c.entries.every((e) => e.status !== 'LOST' || e.quantity > c.stats.available)).toBe(true);
  expect((await entry(ADMIN_KEY, keep!.id))!.status).toBe('WON');
  expect((await entry(ADMIN_KEY, decline!.id))!.status).toBe('LAPSED');
  for (const e of lapse) expect((await entry(ADMIN_KEY, e!.id))!.status).toBe('LAPSED');

  // The promoted entries are exactly what the rule gives: LOST entries in rank order that the freed tickets cover.
  // (The decline's other hold, if any, lapses only at its own time: count what is free now.)
  const declineLeft = decline!.allocations.length - 1;
  const second = walk(lostAtDraw(c).filter((e) => !first.taken.includes(e.id)), freed - declineLeft - (1 - first.left));
  const byRank = new Map(c.entries.map((e) => [e.id, e.rank!]));
  const promoted = [...first.taken, ...second.taken].sort((x, y) => byRank.get(x)! - byRank.get(y)!);
  expect(c.entries.filter((e) => !e.wonInDraw && e.status === 'WON').map((e) => e.id)).toEqual(promoted);
  for (const id of promoted) {
    const e = (await entry(ADMIN_KEY, id))!;
    expect(e.allocations).toHaveLength(e.quantity);
    expect(e.allocations.every((a) => a.status === 'HELD')).toBe(true);
  }
  // Nothing is given twice: another sweep changes nothing.
  await server.sweep();
  expect((await campaign(campaignId)).entries).toEqual(c.entries);
  await verified(campaignId);
});

test("quotas and allotments limit what an entry can win, not entering: a partner's allotment goes to its own entries first, its quota caps its wins, and the verifier recomputes both from partnerLimits", async () => {
  const [capped, allotted, free] = await Promise.all([server.createPartner('capped'), server.createPartner('allotted'), server.createPartner('free')]);
  const campaignId = await server.createCampaign({ mode: 'BALLOT' });
  await server.loadTickets(campaignId, 12);
  const set = async (query: string, vars: Record<string, unknown>) => expect((await server.gql(ADMIN_KEY, query, vars)).body.errors).toBeUndefined();
  await set('mutation($c: ID!, $p: ID!) { setPartnerQuota(campaignId: $c, partnerId: $p, quota: 2) { campaign { id } } }', { c: campaignId, p: capped.id });
  await set('mutation($c: ID!, $p: ID!) { setPartnerAllotment(campaignId: $c, partnerId: $p, size: 4) { id } }', { c: campaignId, p: allotted.id });
  await server.openCampaign(campaignId);
  for (let i = 0; i < 10; i += 1) {
    // Entering is never refused for a quota.
    expect((await enter(capped.apiKey, { campaignId, holder: `c${i}` })).error).toBeNull();
    expect((await enter(allotted.apiKey, { campaignId, holder: `a${i}` })).error).toBeNull();
    expect((await enter(free.apiKey, { campaignId, holder: `f${i}` })).error).toBeNull();
  }
  const ballot = await draw(campaignId);
  expect(ballot.tickets).toBe(12);
  expect(ballot.partnerLimits).toEqual({ [capped.id]: { quota: 2 }, [allotted.id]: { allotted: 4 } });
  // Operators (a VIEWER key too) read every partner's limits; a partner only its own, or {}.
  const viewer = await server.gql(ADMIN_KEY, 'mutation { createOperatorKey(input: { name: "ballot viewer", role: VIEWER }) { apiKey } }');
  const everyone = { [capped.id]: { quota: 2 }, [allotted.id]: { allotted: 4 } };
  expect((await campaign(campaignId, viewer.body.data!.createOperatorKey.apiKey)).ballot!.partnerLimits).toEqual(everyone);
  expect((await campaign(campaignId, capped.apiKey)).ballot!.partnerLimits).toEqual({ [capped.id]: { quota: 2 } });
  expect((await campaign(campaignId, allotted.apiKey)).ballot!.partnerLimits).toEqual({ [allotted.id]: { allotted: 4 } });
  expect((await campaign(campaignId, free.apiKey)).ballot).toMatchObject({ partnerLimits: {}, tickets: 12, winners: ballot.winners, seed: ballot.seed });
  const c = await verified(campaignId);
  const won = (p: { id: string }) => c.entries.filter((e) => e.partner.id === p.id && e.wonInDraw).length;
  // The walk by hand, in rank order: `allotted` draws on its 4 first, then everyone on the 8 of the
  // pool, `capped` at most twice. (How many `capped` wins depends on where its entries rank: at
  // most 2, and fewer only when the pool ran out first.)
  let pool = 8;
  let allotment = 4;
  let cappedWins = 0;
  const expected = new Map<string, boolean>();
  for (const e of [...c.entries].sort((x, y) => x.rank! - y.rank!)) {
    if (e.partner.id === allotted.id && allotment > 0) {
      allotment -= 1;
      expected.set(e.id, true);
    } else if (pool > 0 && (e.partner.id !== capped.id || cappedWins < 2)) {
      pool -= 1;
      if (e.partner.id === capped.id) cappedWins += 1;
      expected.set(e.id, true);
    } else expected.set(e.id, false);
  }
  expect(Object.fromEntries(c.entries.map((e) => [e.id, e.wonInDraw]))).toEqual(Object.fromEntries(expected));
  expect(won(capped)).toBeLessThanOrEqual(2);
  expect(won(capped)).toBe(cappedWins);
  expect(won(allotted)).toBeGreaterThanOrEqual(4);
  expect(won(capped) + won(allotted) + won(free)).toBe(12);
  const { rows } = await server.sql.query(
    "SELECT count(*)::int AS n FROM allocations WHERE campaign_id = $1 AND partner_id = $2 AND from_allotment AND status = 'HELD'",
    [campaignId, allotted.id],
  );
  expect(rows[0].n).toBe(4);
});

test('the verifier catches a tampered ranking, result or entry list', async () => {
  const partner = await server.createPartner('tamper');
  const campaignId = await ballotCampaign(5);
  for (let i = 0; i < 20; i += 1) await enter(partner.apiKey, { campaignId, holder: `h${i}` });
  await draw(campaignId);
  const c = await verified(campaignId);
  const published = c.entries.map((e) => ({ ...e, partnerId: e.partner.id }));
  // One rank swapped in the database: in the ranking, or in the entries.
  const check = async () => {
    const c = await campaign(campaignId);
    return verifyBallot(c.ballot, c.entries.map((e) => ({ ...e, partnerId: e.partner.id }))).mismatch;
  };
  const swapRanking = `UPDATE ballot_ranks r SET entry_id = o.entry_id FROM ballot_ranks o
                        WHERE r.campaign_id = $1 AND o.campaign_id = $1 AND r.rank IN (1, 2) AND o.rank = 3 - r.rank`;
  await server.sql.query(swapRanking, [campaignId]);
  expect(await check()).toMatch(/not in rank order: position 1 holds entry .* with rank 2/);
  await server.sql.query(swapRanking, [campaignId]);
  expect(await check()).toBeUndefined();
  await server.sql.query('UPDATE ballot_entries e SET rank = 3 - e.rank WHERE e.campaign_id = $1 AND e.rank IN (1, 2)', [campaignId]);
  expect(await check()).toMatch(/rank order/);
  // Both swapped, consistently: the list is in order, and the hash says otherwise.
  await server.sql.query(swapRanking, [campaignId]);
  expect(await check()).toMatch(/has rank 2; sha256\("<seed>:<id>"\) puts it at 1/);
  // A loser marked a winner, an entry left out, another seed.
  const flipped = published.map((e, i) => (i === published.length - 1 ? { ...e, wonInDraw: true, status: 'WON' } : e));
  expect(verifyBallot(c.ballot, flipped).mismatch).toMatch(/recorded as a winner/);
  expect(verifyBallot(c.ballot, published.slice(1)).mismatch).toMatch(/entries published/);
  expect(verifyBallot({ ...c.ballot, seed: 'f'.repeat(64) }, published).mismatch).toMatch(/commitment/);
});

test('the walk: an entry the tickets left do not cover LOSES and the walk goes on, so a later, smaller entry still wins; allotments first, quotas cap', async () => {
  const client = await server.sql.connect();
  const nil = '00000000-0000-0000-0000-000000000000';
  const p = '11111111-1111-4111-8111-111111111111';
  const q = '22222222-2222-4222-8222-222222222222';
  const walk = async (candidates: [number, string, number][], pool: Record<string, number>, caps: Record<string, number> = {}) => {
    await client.query('BEGIN');
    try {
      await client.query('CREATE TEMP TABLE tessera_ballot_candidates (id UUID, partner_id UUID, quantity INTEGER, rank INTEGER) ON COMMIT DROP');
      for (const [rank, partner, quantity] of candidates) {
        await client.query('INSERT INTO tessera_ballot_candidates VALUES (gen_random_uuid(), $1, $2, $3)', [partner, quantity, rank]);
      }
      const left = (await client.query('SELECT tessera_ballot_walk($1::jsonb, $2::jsonb) AS left', [JSON.stringify(pool), JSON.stringify(caps)])).rows[0].left;
      const won = (await client.query('SELECT rank, from_allot FROM tessera_ballot_winners ORDER BY rank')).rows.map((r) => [r.rank, r.from_allot]);
      return { left, won };
    } finally {
      await client.query('ROLLBACK');
    }
  };
  try {
    // 3 tickets: rank 1 (2) wins, rank 2 (2) does not fit, rank 3 (1) does, rank 4 finds nothing left.
    expect(await walk([[1, p, 2], [2, p, 2], [3, p, 1], [4, p, 1]], { [nil]: 3 })).toEqual({ left: { [nil]: 0 }, won: [[1, 0], [3, 0]] });
    // q's allotment of 2 serves q's entries first, and only them; p's quota of 1 passes over its second entry.
    expect(await walk([[1, q, 3], [2, p, 1], [3, p, 1], [4, q, 1]], { [nil]: 2, [q]: 2 }, { [p]: 1 })).toEqual({
      left: { [nil]: 0, [q]: 0 },
      won: [[1, 2], [2, 0]],
    });
  } finally {
    client.release();
  }
});

/**
 * The fairness test draws 200 times, each draw rolled back: a statistical check of the draw's
 * arithmetic (tessera_draw_ballot), which is the same SQL on every database. On Citus (npm run
 * test:citus) it is left out: 31 s of CI's 25 minutes on a slow machine (2026-12-07, CI at
 * 1,521 s), for nothing the draw test above does not already run there.
 */
const fairnessTest = citusNodes() === null ? test : test.skip;

fairnessTest('fairness: 200 draws of 1,000 entries with random seeds — each entry wins as often as uniform predicts, and so does each tenth of the entry order (chi-square, α = 10⁻⁵ each)', async () => {
  const partner = await server.createPartner('fair');
  const campaignId = await ballotCampaign(100);
  const N = 1000;
  const WINNERS = 100;
  const DRAWS = 200;
  await server.sql.query(
    `INSERT INTO ballot_entries (campaign_id, partner_id, holder, quantity) SELECT $1, $2, 'h' || g, 1 FROM generate_series(1, ${N}) g ORDER BY g`,
    [campaignId, partner.id],
  );
  const order = (await server.sql.query('SELECT id FROM ballot_entries WHERE campaign_id = $1 ORDER BY seq', [campaignId])).rows.map((r) => r.id as string);
  const index = new Map(order.map((id, i) => [id, i]));
  const wins = new Array<number>(N).fill(0);
  const client = await server.sql.connect();
  try {
    for (let d = 0; d < DRAWS; d += 1) {
      const seed = createHash('sha256').update(`${Math.random()}:${d}:${process.hrtime.bigint()}`).digest('hex');
      // Each draw is the real one, rolled back, with its own seed committed first.
      await client.query('BEGIN');
      await client.query('UPDATE ballots SET seed_commitment = $2 WHERE campaign_id = $1', [campaignId, sha256(seed)]);
      expect((await client.query('SELECT tessera_draw_ballot($1, $2) AS v', [campaignId, seed])).rows[0].v).toBe('OK');
      const won = (await client.query("SELECT id FROM ballot_entries WHERE campaign_id = $1 AND status = 'WON'", [campaignId])).rows;
      expect(won).toHaveLength(WINNERS);
      for (const r of won) wins[index.get(r.id)!]! += 1;
      await client.query('ROLLBACK');
    }
  } finally {
    client.release();
  }
  // Per draw the winners are a uniform 100 of 1,000 (without replacement): a group holding a fraction
  // π of the entries wins T·n·(N−n)/(N−1)·π variance around T·n·π, so Σ (O − E)² / that ~ χ²(groups − 1).
  const scale = (DRAWS * WINNERS * (N - WINNERS)) / (N - 1);
  const chiSquare = (observed: number[]) => {
    const share = 1 / observed.length;
    const expected = DRAWS * WINNERS * share;
    return observed.reduce((x, o) => x + (o - expected) ** 2 / (scale * share), 0);
  };
  // Upper 10⁻⁵ point of χ²(k), Wilson–Hilferty (z = 4.2649). Each check fails a fair draw once in
  // 100,000 runs (at 0.1% the suite, which CI runs five times, failed a fair draw about once in
  // twenty CI runs); a bias of the entry order large enough to matter is still far beyond it.
  const Z = 4.2649;
  const critical = (k: number) => k * (1 - 2 / (9 * k) + Z * Math.sqrt(2 / (9 * k))) ** 3;
  const perEntry = chiSquare(wins);
  const deciles = Array.from({ length: 10 }, (_, d) => wins.slice(d * 100, d * 100 + 100).reduce((a, b) => a + b, 0));
  const perDecile = chiSquare(deciles);
  expect(wins.reduce((a, b) => a + b, 0)).toBe(DRAWS * WINNERS);
  expect(perEntry).toBeLessThan(critical(N - 1)); // ≈ 1,201
  expect(perDecile).toBeLessThan(critical(9)); // ≈ 40.1
  // And not suspiciously uniform either (a rigged rotation would be): the lower 10⁻⁵ point.
  const lower = (k: number) => k * (1 - 2 / (9 * k) - Z * Math.sqrt(2 / (9 * k))) ** 3;
  expect(perEntry).toBeGreaterThan(lower(N - 1));
}, 120_000);
