// @dialects postgresql citus
// Test mode's promise (issue 31), end to end: a partner rehearses the README's whole flow — claim,
// retry with its key, hold, confirm, release, a waitlist offer, a ballot entry and its draw, webhook
// deliveries checked with the README's own verifying snippet — with its test key, against test
// copies of live campaigns; and nothing live changes: not a row, a counter, a figure, an export
// line, a live metric or a live endpoint's delivery (compared before and after).
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { liveSnapshot, REFUSAL_FLUSH_MS } from './helpers/liveRows';
import { ADMIN_KEY, startTestServer, type TestServer } from './helpers/testServer';
import { startRecorder } from './helpers/receiver';
import { until } from './helpers/time';

const run = promisify(execFile);
let server: TestServer;
let base: string;

/** The README's "Verifying a delivery in Node" snippet, run as written. */
type Verify = (header: string, rawBody: string, secret: string) => boolean;
const verifyTessera: Verify = (() => {
  const readme = readFileSync(path.resolve(__dirname, '../README.md'), 'utf8');
  const code = /Verifying a delivery in Node[\s\S]*?```js\n([\s\S]*?)```/.exec(readme)?.[1];
  if (!code) throw new Error('README.md no longer has its verifying snippet');
  return new Function('require', `${code}\nreturn verifyTessera;`)(require) as Verify;
})();

/** The live metrics of claims and deliveries: every tessera_claims_total, tessera_claim_duration_seconds and tessera_webhook_deliveries_total sample. */
async function liveMetrics(): Promise<string[]> {
  const text = await (await fetch(`${base}/metrics`)).text();
  return text.split('\n').filter((line) => /^tessera_(claims_total|claim_duration_seconds|webhook_deliveries_total)/.test(line));
}

async function exportOf(campaignId: string): Promise<string> {
  const { stdout } = await run(process.execPath, [path.resolve(__dirname, '../bin/tessera.js'), 'export', '--campaign', campaignId, '--url', base, '--key', ADMIN_KEY]);
  return stdout;
}

beforeAll(async () => {
  server = await startTestServer({ config: { holdSweepIntervalMs: 100, refusalFlushMs: REFUSAL_FLUSH_MS } });
  base = server.url.replace(/\/graphql$/, '');
});
afterAll(() => server.stop());

test('the README partner flow with a test key against test copies changes nothing live', async () => {
  const receiver = await startRecorder();
  try {
    const created = await server.gql(ADMIN_KEY, 'mutation { createPartner(input: { name: "Rehearsal" }) { partner { id } apiKey testApiKey } }');
    const { apiKey: liveKey, testApiKey: testKey } = created.body.data!.createPartner;
    const gql = async (key: string, query: string, variables?: Record<string, unknown>) => {
      const r = await server.gql(key, query, variables);
      expect(r.body.errors).toBeUndefined();
      return r.body.data!;
    };
    const CREATE_WEBHOOK = 'mutation($input: CreateWebhookInput!) { createWebhook(input: $input) { endpoint { id test } secret } }';
    const EVENTS = ['ALLOCATION_CREATED', 'HOLD_CREATED', 'HOLD_CONFIRMED', 'ALLOCATION_RELEASED', 'WAITLIST_OFFERED', 'BALLOT_DRAWN'];

    // The live world: two live campaigns, the partner's live claims, a live endpoint of the partner and one of the operator.
    const liveWaitlist = await server.openCampaignWith(6, { name: 'Live waitlist drop', releasePolicy: 'WAITLIST_FIRST', perHolderLimit: 2 });
    const liveBallot = await server.openCampaignWith(4, { name: 'Live ballot', mode: 'BALLOT' });
    await gql(liveKey, CREATE_WEBHOOK, { input: { url: `${receiver.url}/partner-live`, events: EVENTS } });
    await gql(ADMIN_KEY, CREATE_WEBHOOK, { input: { url: `${receiver.url}/operator-live`, events: EVENTS } });
    for (const holder of ['live-1', 'live-2']) {
      await gql(liveKey, 'mutation($c: ID!, $h: String!) { claimTicket(input: { campaignId: $c, holder: $h }) { allocation { id } } }', { c: liveWaitlist, h: holder });
    }
    await gql(liveKey, 'mutation($c: ID!) { enterBallot(input: { campaignId: $c, holder: "live-b" }) { entry { id } } }', { c: liveBallot });
    await until(() => receiver.received.length >= 4, { message: 'the live deliveries' });

    const before = { rows: await liveSnapshot(server.sql), metrics: await liveMetrics(), exported: await exportOf(liveWaitlist), delivered: receiver.received.length };

    // The rehearsal: test copies, a test endpoint, the whole flow with the test key.
    const copyOf = async (c: string, tickets?: number) =>
      (await gql(ADMIN_KEY, 'mutation($c: ID!, $n: Int) { createTestCopy(campaignId: $c, tickets: $n) { campaign { id test status } } }', { c, n: tickets })).createTestCopy.campaign;
    const waitlistCopy = await copyOf(liveWaitlist, 2);
    const ballotCopy = await copyOf(liveBallot);
    expect([waitlistCopy.test, waitlistCopy.status, ballotCopy.test, ballotCopy.status]).toEqual([true, 'OPEN', true, 'OPEN']);
    const testHook = (await gql(testKey, CREATE_WEBHOOK, { input: { url: `${receiver.url}/partner-test`, events: EVENTS } })).createWebhook;
    expect(testHook.endpoint.test).toBe(true);

    const CLAIM = 'mutation($input: ClaimTicketInput!) { claimTicket(input: $input) { allocation { id sequence test ticket { code } } error { code } } }';
    const input = { campaignId: waitlistCopy.id, holder: 'customer-42', metadata: { order: 1001 }, idempotencyKey: 'order-1001' };
    const claimed = (await gql(testKey, CLAIM, { input })).claimTicket;
    expect(claimed.error).toBeNull();
    expect(claimed.allocation.test).toBe(true);
    expect(claimed.allocation.ticket.code).toMatch(/^TEST-/);
    expect((await gql(testKey, CLAIM, { input })).claimTicket).toEqual(claimed); // the retry with the key: the same ticket

    const held = (await gql(testKey, 'mutation($c: ID!) { holdTicket(input: { campaignId: $c, holder: "customer-43", ttlSeconds: 600 }) { allocation { id status } } }', { c: waitlistCopy.id })).holdTicket;
    expect(held.allocation.status).toBe('HELD');
    expect((await gql(testKey, 'mutation($a: ID!) { confirmHold(allocationId: $a) { allocation { status } } }', { a: held.allocation.id })).confirmHold.allocation.status).toBe('ACTIVE');

    // Sold out: a holder joins the waitlist; a release offers the returned ticket to it.
    const joined = (await gql(testKey, 'mutation($c: ID!) { joinWaitlist(input: { campaignId: $c, holder: "waiting-1" }) { entry { id status test } error { code } } }', { c: waitlistCopy.id })).joinWaitlist;
    expect(joined).toEqual({ entry: { id: expect.any(String), status: 'WAITING', test: true }, error: null });
    expect((await gql(testKey, 'mutation($a: ID!) { releaseAllocation(allocationId: $a) { allocation { status } } }', { a: claimed.allocation.id })).releaseAllocation.allocation.status).toBe('RELEASED');
    const offered = await until(
      async () => {
        const entry = (await gql(testKey, 'query($e: ID!) { waitlistEntry(id: $e) { status offer { id status } } }', { e: joined.entry.id })).waitlistEntry;
        return entry.status === 'OFFERED' ? entry : null;
      },
      { message: 'the waitlist offer' },
    );
    expect((await gql(testKey, 'mutation($a: ID!) { confirmHold(allocationId: $a) { allocation { status } } }', { a: offered.offer[0].id })).confirmHold.allocation.status).toBe('ACTIVE');

    // A ballot: an entry, the operator's draw, the entry won.
    const entry = (await gql(testKey, 'mutation($c: ID!) { enterBallot(input: { campaignId: $c, holder: "ballot-1" }) { entry { id test } } }', { c: ballotCopy.id })).enterBallot.entry;
    expect(entry.test).toBe(true);
    await gql(ADMIN_KEY, 'mutation($c: ID!) { drawBallot(campaignId: $c) { ballot { seed } } }', { c: ballotCopy.id });
    expect((await gql(testKey, 'query($e: ID!) { ballotEntry(id: $e) { status } }', { e: entry.id })).ballotEntry.status).toBe('WON');

    // Webhooks: the test endpoint got the rehearsal's events, each verified with the README's snippet, "livemode": false.
    const types = ['ALLOCATION_CREATED', 'HOLD_CREATED', 'HOLD_CONFIRMED', 'ALLOCATION_RELEASED', 'WAITLIST_OFFERED', 'BALLOT_DRAWN'];
    const testDeliveries = () => receiver.received.filter((d) => d.path === '/partner-test');
    await until(() => types.every((t) => testDeliveries().some((d) => JSON.parse(d.raw).type === t)), { message: 'the test deliveries' });
    for (const d of testDeliveries()) {
      expect(verifyTessera(d.signature, d.raw, testHook.secret)).toBe(true);
      expect(JSON.parse(d.raw).livemode).toBe(false);
    }

    // Nothing live changed: rows, counters, figures, the export, the live metrics, the live endpoints.
    expect(await liveSnapshot(server.sql)).toEqual(before.rows);
    expect(await liveMetrics()).toEqual(before.metrics);
    expect(await exportOf(liveWaitlist)).toBe(before.exported);
    expect(receiver.received.filter((d) => d.path !== '/partner-test')).toHaveLength(before.delivered);
    const stats = await gql(liveKey, 'query($c: ID!) { campaign(id: $c) { stats { total allocated held available } } }', { c: liveWaitlist });
    expect(stats.campaign.stats).toEqual({ total: 6, allocated: 2, held: 0, available: 4 });
    // The rehearsal's claims were counted apart.
    const text = await (await fetch(`${base}/metrics`)).text();
    expect(text).toMatch(/^tessera_test_claims_total\{operation="claimTicket",outcome="ALLOCATED"\} 1$/m);
    expect(text).toMatch(/^tessera_test_webhook_deliveries_total\{outcome="delivered"\} [1-9]/m);
    // And the audit log says which mode acted.
    const audit = await server.sql.query("SELECT operation, test FROM audit_log WHERE operation IN ('createTestCopy', 'drawBallot') ORDER BY id");
    expect(audit.rows).toEqual([
      { operation: 'createTestCopy', test: true },
      { operation: 'createTestCopy', test: true },
      { operation: 'drawBallot', test: true },
    ]);
  } finally {
    await receiver.close();
  }
});
