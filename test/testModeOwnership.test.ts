// Rehearsal controls on a test campaign that several partners use, and purgeTestData's and
// createTestCopy's limits. A partner's test key may reset a test campaign or move its clock only
// where every allocation, hold, waitlist entry and ballot entry in it is its own: otherwise
// FORBIDDEN (audited as a refusal, without arguments), nothing changed, and an operator may.
// Mutations are refused over graphql-ws whatever they are (BAD_REQUEST, naming HTTP: see
// transports.test.ts), so the refusals are HTTP's; one test shows the socket changes nothing either.
// purgeTestData is all or nothing and runs under its own statement timeout, longer than a claim's.
import { ADMIN_KEY, allocated, startTestServer, type TestServer } from './helpers/testServer';
import { connectSocket, runOverSocket, socketErrors, type SocketClient } from './helpers/ws';

/** The server's statement_timeout here: short, so that a statement longer than a claim's shows. */
const STATEMENT_TIMEOUT_MS = 2_000;

let server: TestServer;
const sockets: SocketClient[] = [];

interface Keys {
  id: string;
  test: string;
}
let p1: Keys;
let p2: Keys;

const RESET = 'mutation($c: ID!) { resetTestCampaign(id: $c) { campaign { id stats { allocated held } } } }';
const ADVANCE = 'mutation($c: ID!, $s: Int!) { advanceTestClock(campaignId: $c, seconds: $s) { campaign { id testClock } } }';
const ALLOCATION = 'query($a: ID!) { allocation(id: $a) { id status } }';

async function createPartner(name: string): Promise<Keys> {
  const r = await server.gql(ADMIN_KEY, 'mutation($n: String!) { createPartner(input: { name: $n }) { partner { id } testApiKey } }', { n: name });
  expect(r.body.errors).toBeUndefined();
  return { id: r.body.data!.createPartner.partner.id, test: r.body.data!.createPartner.testApiKey };
}

const testCampaign = (count: number, input: Record<string, unknown> = {}) => server.openCampaignWith(count, { ...input, test: true });

/** The campaign's deadlines and clock, and its holds' expiries: what advanceTestClock moves. */
async function clockOf(campaign: string) {
  const { rows } = await server.sql.query(
    `SELECT c.test_clock_seconds::int AS seconds, c.opens_at, c.closes_at, c.entries_close_at,
            (SELECT array_agg(a.expires_at ORDER BY a.id) FROM allocations a WHERE a.campaign_id = c.id AND a.status = 'HELD') AS holds
       FROM campaigns c WHERE c.id = $1`,
    [campaign],
  );
  return rows[0];
}

const codes = (errors: readonly { extensions?: Record<string, unknown> }[] | undefined) => (errors ?? []).map((e) => e.extensions?.code);

async function lastAudit(operation: string) {
  const { rows } = await server.sql.query('SELECT actor, arguments, outcome, test FROM audit_log WHERE operation = $1 ORDER BY id DESC LIMIT 1', [operation]);
  return rows[0];
}

beforeAll(async () => {
  // No background sweeper: advanceTestClock sweeps by itself, and nothing else should move a hold.
  server = await startTestServer({ config: { holdSweepIntervalMs: 0 }, database: { statementTimeoutMs: STATEMENT_TIMEOUT_MS } });
  p1 = await createPartner('First rehearser');
  p2 = await createPartner('Second rehearser');
});
afterAll(async () => {
  await Promise.all(sockets.map((s) => s.dispose()));
  await server.stop();
});

describe("a partner's test key on a test campaign that another partner uses", () => {
  test("resetTestCampaign is FORBIDDEN, says an operator's key can, and leaves the other partner's allocation ACTIVE and readable", async () => {
    const campaign = await testCampaign(4);
    const allocation = allocated(await server.claim(p1.test, { campaignId: campaign, holder: 'p1-active' })).id;
    const r = await server.gql(p2.test, RESET, { c: campaign });
    expect(codes(r.body.errors)).toEqual(['FORBIDDEN']);
    expect(r.body.errors![0]!.message).toMatch(/operator's key can reset it/);
    expect(r.body.data).toBeNull();
    const read = await server.gql(p1.test, ALLOCATION, { a: allocation });
    expect(read.body.data!.allocation).toEqual({ id: allocation, status: 'ACTIVE' });
    // The refusal is audited as access.ts audits every refusal: FORBIDDEN, without arguments.
    expect(await lastAudit('resetTestCampaign')).toEqual({ actor: `partner:${p2.id}`, arguments: {}, outcome: 'FORBIDDEN', test: true });
  });

  test("advanceTestClock is FORBIDDEN, says an operator's key can, and moves nothing: the other partner's hold stays confirmable", async () => {
    const closesAt = new Date(Date.now() + 86_400_000).toISOString();
    const campaign = await testCampaign(4, { closesAt });
    const held = allocated(await server.hold(p1.test, { campaignId: campaign, holder: 'p1-hold' })).id;
    const before = await clockOf(campaign);
    const r = await server.gql(p2.test, ADVANCE, { c: campaign, s: 601 });
    expect(codes(r.body.errors)).toEqual(['FORBIDDEN']);
    expect(r.body.errors![0]!.message).toMatch(/operator's key can move its clock/);
    expect(await clockOf(campaign)).toEqual(before);
    expect(before.seconds).toBe(0);
    const confirmed = await server.gql(p1.test, 'mutation($a: ID!) { confirmHold(allocationId: $a) { allocation { status } error { code } } }', { a: held });
    expect(confirmed.body.data!.confirmHold).toEqual({ allocation: { status: 'ACTIVE' }, error: null });
    expect(await lastAudit('advanceTestClock')).toEqual({ actor: `partner:${p2.id}`, arguments: {}, outcome: 'FORBIDDEN', test: true });
  });

  test("on a ballot test campaign, another partner's entry is enough: both controls are FORBIDDEN and the entry stays ENTERED", async () => {
    const entriesCloseAt = new Date(Date.now() + 3_600_000).toISOString();
    const campaign = await testCampaign(3, { mode: 'BALLOT', entriesCloseAt });
    const entered = await server.gql(p1.test, 'mutation($c: ID!) { enterBallot(input: { campaignId: $c, holder: "p1-entry" }) { entry { id } error { code } } }', { c: campaign });
    expect(entered.body.data!.enterBallot.error).toBeNull();
    const entry = entered.body.data!.enterBallot.entry.id;
    const before = await clockOf(campaign);
    expect(codes((await server.gql(p2.test, RESET, { c: campaign })).body.errors)).toEqual(['FORBIDDEN']);
    expect(codes((await server.gql(p2.test, ADVANCE, { c: campaign, s: 3_601 })).body.errors)).toEqual(['FORBIDDEN']);
    expect(await clockOf(campaign)).toEqual(before);
    const read = await server.gql(p1.test, 'query($e: ID!) { ballotEntry(id: $e) { id status } }', { e: entry });
    expect(read.body.data!.ballotEntry).toEqual({ id: entry, status: 'ENTERED' });
  });

  test("another partner's waitlist entry counts too", async () => {
    const campaign = await testCampaign(0, { releasePolicy: 'WAITLIST_FIRST' });
    const joined = await server.gql(p1.test, 'mutation($c: ID!) { joinWaitlist(input: { campaignId: $c, holder: "p1-waits" }) { entry { id } error { code } } }', { c: campaign });
    expect(joined.body.data!.joinWaitlist.error).toBeNull();
    const entry = joined.body.data!.joinWaitlist.entry.id;
    expect(codes((await server.gql(p2.test, RESET, { c: campaign })).body.errors)).toEqual(['FORBIDDEN']);
    expect(codes((await server.gql(p2.test, ADVANCE, { c: campaign, s: 60 })).body.errors)).toEqual(['FORBIDDEN']);
    const read = await server.gql(p1.test, 'query($e: ID!) { waitlistEntry(id: $e) { id status } }', { e: entry });
    expect(read.body.data!.waitlistEntry).toEqual({ id: entry, status: 'WAITING' });
  });

  test('the partner that has rows there is refused as well while the other has rows too', async () => {
    const campaign = await testCampaign(4);
    allocated(await server.claim(p1.test, { campaignId: campaign, holder: 'p1' }));
    const theirs = allocated(await server.claim(p2.test, { campaignId: campaign, holder: 'p2' })).id;
    expect(codes((await server.gql(p1.test, RESET, { c: campaign })).body.errors)).toEqual(['FORBIDDEN']);
    expect(codes((await server.gql(p1.test, ADVANCE, { c: campaign, s: 60 })).body.errors)).toEqual(['FORBIDDEN']);
    expect((await server.gql(p2.test, ALLOCATION, { a: theirs })).body.data!.allocation).toEqual({ id: theirs, status: 'ACTIVE' });
  });

  test("an operator's claim counts as another's", async () => {
    const campaign = await testCampaign(4);
    allocated(await server.claim(ADMIN_KEY, { campaignId: campaign, holder: 'operator' }));
    expect(codes((await server.gql(p1.test, RESET, { c: campaign })).body.errors)).toEqual(['FORBIDDEN']);
  });

  test('over graphql-ws the same calls do not run either: the socket takes no mutation (BAD_REQUEST), and nothing changes', async () => {
    const campaign = await testCampaign(4);
    const allocation = allocated(await server.claim(p1.test, { campaignId: campaign, holder: 'p1-ws' })).id;
    const before = await clockOf(campaign);
    const socket = connectSocket(server.url, p2.test);
    sockets.push(socket);
    for (const payload of [
      { query: RESET, variables: { c: campaign } },
      { query: ADVANCE, variables: { c: campaign, s: 600 } },
    ]) {
      const errors = socketErrors(await runOverSocket(socket, payload));
      expect(codes(errors)).toEqual(['BAD_REQUEST']);
      expect(errors[0]!.message).toMatch(/HTTP POST \/graphql/);
    }
    expect((await server.gql(p1.test, ALLOCATION, { a: allocation })).body.data!.allocation).toEqual({ id: allocation, status: 'ACTIVE' });
    expect(await clockOf(campaign)).toEqual(before);
  });
});

describe('where everything is its own, or for an operator', () => {
  test("a partner's test key resets and advances a test campaign where every allocation and hold is its own", async () => {
    const campaign = await testCampaign(4);
    allocated(await server.claim(p1.test, { campaignId: campaign, holder: 'a' }));
    allocated(await server.hold(p1.test, { campaignId: campaign, holder: 'b' }));
    const advanced = await server.gql(p1.test, ADVANCE, { c: campaign, s: 601 });
    expect(advanced.body.errors).toBeUndefined();
    expect((await clockOf(campaign)).seconds).toBe(601);
    const reset = await server.gql(p1.test, RESET, { c: campaign });
    expect(reset.body.errors).toBeUndefined();
    expect(reset.body.data!.resetTestCampaign.campaign.stats).toEqual({ allocated: 0, held: 0 });
    expect((await clockOf(campaign)).seconds).toBe(0);
  });

  test("another partner's allotment does not stand in the way: it is the operator's set-up, which a reset sets aside anew", async () => {
    const campaign = await testCampaign(4);
    await server.gql(ADMIN_KEY, 'mutation($c: ID!, $p: ID!) { setPartnerAllotment(campaignId: $c, partnerId: $p, size: 1) { id } }', { c: campaign, p: p2.id });
    allocated(await server.claim(p1.test, { campaignId: campaign, holder: 'a' }));
    const reset = await server.gql(p1.test, RESET, { c: campaign });
    expect(reset.body.errors).toBeUndefined();
    const { rows } = await server.sql.query("SELECT count(*)::int AS n FROM tickets WHERE campaign_id = $1 AND status = 'ALLOTTED' AND allotted_to = $2", [campaign, p2.id]);
    expect(rows[0].n).toBe(1);
  });

  test('an operator resets and advances a test campaign whoever has rows in it', async () => {
    const campaign = await testCampaign(4);
    allocated(await server.claim(p1.test, { campaignId: campaign, holder: 'a' }));
    allocated(await server.hold(p2.test, { campaignId: campaign, holder: 'b' }));
    const advanced = await server.gql(ADMIN_KEY, ADVANCE, { c: campaign, s: 601 });
    expect(advanced.body.errors).toBeUndefined();
    expect((await clockOf(campaign)).seconds).toBe(601);
    const reset = await server.gql(ADMIN_KEY, RESET, { c: campaign });
    expect(reset.body.errors).toBeUndefined();
    expect(reset.body.data!.resetTestCampaign.campaign.stats).toEqual({ allocated: 0, held: 0 });
    expect((await lastAudit('resetTestCampaign')).outcome).toBe('OK');
  });

  test("the check is made under the campaign's lock: no claim of another partner is ever reset away, however the two race", async () => {
    for (let round = 0; round < 5; round += 1) {
      const campaign = await testCampaign(40);
      allocated(await server.claim(p1.test, { campaignId: campaign, holder: 'own' }));
      // p2's claims and p1's reset at once: each claim commits before the reset (which is then
      // refused) or after it (and survives it).
      const claims = Array.from({ length: 12 }, (_, i) => server.claim(p2.test, { campaignId: campaign, holder: `p2-${round}-${i}` }));
      const reset = server.gql(p1.test, RESET, { c: campaign });
      const [answers, resetAnswer] = await Promise.all([Promise.all(claims), reset]);
      expect([undefined, 'FORBIDDEN']).toContain(resetAnswer.body.errors?.[0]?.extensions?.code);
      const handedOut = answers.map((a) => a.allocation?.id).filter((id): id is string => id !== undefined);
      expect(handedOut).toHaveLength(12);
      const { rows } = await server.sql.query("SELECT count(*)::int AS n FROM allocations WHERE id = ANY($1::uuid[]) AND status = 'ACTIVE'", [handedOut]);
      expect(rows[0].n).toBe(12);
    }
  });
});

describe('createTestCopy and purgeTestData', () => {
  test("createTestCopy takes at most generateTickets' cap: 1,000,001 tickets is BAD_USER_INPUT, as for generateTickets, and nothing is made", async () => {
    const original = await server.openCampaignWith(2);
    const campaigns = (await server.sql.query('SELECT count(*)::int AS n FROM campaigns')).rows[0].n;
    const copy = await server.gql(ADMIN_KEY, 'mutation($c: ID!, $n: Int) { createTestCopy(campaignId: $c, tickets: $n) { campaign { id } } }', { c: original, n: 1_000_001 });
    expect(copy.body.errors?.[0]?.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'tickets' });
    expect(copy.body.errors![0]!.message).toMatch(/1,000,000/);
    const generate = await server.gql(ADMIN_KEY, 'mutation($c: ID!) { generateTickets(campaignId: $c, count: 1000001) { loaded } }', { c: original });
    expect(generate.body.errors?.[0]?.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'count' });
    expect((await server.sql.query('SELECT count(*)::int AS n FROM campaigns')).rows[0].n).toBe(campaigns);
  });

  describe('with a fault in the middle of the purge', () => {
    // A test campaign named so fails (or stalls) when its row is deleted: a purge that fails part-way.
    beforeAll(async () => {
      await server.sql.query(`
        CREATE FUNCTION purge_fault() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          IF OLD.name = 'purge fails here' THEN RAISE EXCEPTION 'injected purge failure'; END IF;
          IF OLD.name = 'purge stalls here' THEN PERFORM pg_sleep(${(STATEMENT_TIMEOUT_MS + 500) / 1000}); END IF;
          RETURN OLD;
        END $$`);
      await server.sql.query('CREATE TRIGGER purge_fault BEFORE DELETE ON campaigns FOR EACH ROW EXECUTE FUNCTION purge_fault()');
    });
    afterAll(async () => {
      await server.sql.query('DROP TRIGGER IF EXISTS purge_fault ON campaigns');
    });

    const PURGE = 'mutation($b: DateTime!) { purgeTestData(before: $b) { campaigns tickets allocations webhookDeliveries } }';
    const testRows = async () =>
      (
        await server.sql.query(
          'SELECT (SELECT count(*)::int FROM campaigns WHERE test) AS campaigns, (SELECT count(*)::int FROM tickets WHERE substring(campaign_id::text, 15, 1) = $1) AS tickets, (SELECT count(*)::int FROM allocations WHERE substring(campaign_id::text, 15, 1) = $1) AS allocations',
          ['8'],
        )
      ).rows[0];

    test('is all or nothing: a failure at one campaign leaves every test campaign as it was; once it is gone, a retry purges them all', async () => {
      const first = await testCampaign(3);
      allocated(await server.claim(p1.test, { campaignId: first, holder: 'kept' }));
      const failing = await testCampaign(2, { name: 'purge fails here' });
      await testCampaign(2);
      const before = await testRows();
      expect(before.campaigns).toBeGreaterThanOrEqual(3);
      const failed = await server.gql(ADMIN_KEY, PURGE, { b: new Date(Date.now() + 60_000).toISOString() });
      expect(failed.body.errors).toHaveLength(1);
      expect(await testRows()).toEqual(before);
      expect((await server.gql(p1.test, 'query($c: ID!) { campaign(id: $c) { id } }', { c: first })).body.data!.campaign).toEqual({ id: first });

      await server.sql.query("UPDATE campaigns SET name = 'no longer failing' WHERE id = $1", [failing]);
      const purged = await server.gql(ADMIN_KEY, PURGE, { b: new Date(Date.now() + 60_000).toISOString() });
      expect(purged.body.errors).toBeUndefined();
      expect(purged.body.data!.purgeTestData).toMatchObject({ campaigns: before.campaigns, tickets: before.tickets, allocations: before.allocations });
      expect(await testRows()).toEqual({ campaigns: 0, tickets: 0, allocations: 0 });
    });

    test("runs under a statement timeout of its own: a statement longer than the server's statement_timeout does not cancel it", async () => {
      await testCampaign(2);
      await testCampaign(2, { name: 'purge stalls here' });
      await testCampaign(2);
      const r = await server.gql(ADMIN_KEY, PURGE, { b: new Date(Date.now() + 60_000).toISOString() });
      expect(r.body.errors).toBeUndefined();
      expect(r.body.data!.purgeTestData.campaigns).toBe(3);
      expect(await testRows()).toEqual({ campaigns: 0, tickets: 0, allocations: 0 });
    });
  });
});
