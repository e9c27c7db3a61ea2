// In a real browser: GraphiQL runs a query; the console signs in, creates and loads a campaign,
// opens it, and its fill bar moves while claims arrive from another client; its webhooks screen
// lists endpoints and an endpoint's deliveries (filter, paging, "Send again"). Screenshots are kept
// in test-results/screenshots.
/// <reference lib="dom" />
import { createHash, randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, Page } from 'playwright-core';
import { ADMIN_KEY, CLAIM, startTestServer, type TestServer } from '../helpers/testServer';
import { until } from '../helpers/time';
import { answer, launch, screenshot } from './browser';

let server: TestServer;
let browser: Browser;
let base: string;
const pageErrors: string[] = [];

beforeAll(async () => {
  server = await startTestServer();
  base = server.url.replace(/\/graphql$/, '');
  browser = await launch();
});
afterAll(async () => {
  await browser?.close();
  await server?.stop();
});

/**
 * Waits for `selector`'s attribute to read `value`: the console's figures follow the server by
 * polling, so a figure read too early is the previous one (once: data-total 120 of 200, read while
 * the second load was still on its way). Fails with the last value seen.
 */
async function attributeReaches(page: Page, selector: string, attribute: string, value: string, timeout = 10_000): Promise<void> {
  try {
    await page.waitForFunction(([s, a, v]) => document.querySelector(s)?.getAttribute(a) === v, [selector, attribute, value] as const, { timeout });
  } catch (error) {
    const last = await page.locator(selector).first().getAttribute(attribute, { timeout: 1_000 }).catch(() => '(no element)');
    throw new Error(`${selector} [${attribute}] did not reach ${value} within ${timeout} ms (last: ${last})`, { cause: error });
  }
}

async function newPage(): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  page.on('pageerror', (error) => pageErrors.push(String(error)));
  // Nothing may come from anywhere but the server itself (no CDN).
  await page.route('**/*', (route) => (route.request().url().startsWith(base) || route.request().url().startsWith(base.replace('http', 'ws')) ? route.continue() : route.abort()));
  return page;
}

test('GraphiQL, served offline, runs a query with the admin key', async () => {
  const page = await newPage();
  const outside: string[] = [];
  page.on('requestfailed', (r) => outside.push(r.url()));
  await page.goto(`${base}/graphql#admin-key=${encodeURIComponent(ADMIN_KEY)}`);
  await page.locator('.graphiql-execute-button').click();
  await page.locator('.result-window').getByText('"campaigns"').waitFor({ timeout: 15_000 });
  await screenshot(page, 'graphiql');
  expect(outside).toEqual([]);
  await page.context().close();
});

test('the console signs in, creates and loads a campaign, and its fill bar moves as claims arrive', async () => {
  const page = await newPage();
  await page.goto(`${base}/console/`);

  // Sign in with the admin key.
  await page.getByTestId('key').fill(ADMIN_KEY);
  await page.getByTestId('sign-in').click();
  await page.locator('table.campaigns').waitFor();

  // Create a campaign.
  await page.goto(`${base}/console/#/new`);
  await page.getByTestId('campaign-name').fill('Browser concert');
  await page.getByTestId('create-campaign').click();
  await page.getByTestId('status').getByText('DRAFT').waitFor();
  const campaignId = /#\/campaigns\/([0-9a-f-]{36})/.exec(page.url())![1]!;

  // Load tickets: a pasted list, then a CSV file.
  await page.getByTestId('codes').fill(Array.from({ length: 120 }, (_, i) => `SEAT-${i + 1}`).join('\n'));
  await page.getByTestId('load').click();
  await page.getByTestId('load-status').getByText('loaded 120 new tickets').waitFor();
  await page.getByTestId('codes-file').setInputFiles({
    name: 'codes.csv',
    mimeType: 'text/csv',
    buffer: Buffer.from(['code', ...Array.from({ length: 80 }, (_, i) => `BALCONY-${i + 1}`), 'SEAT-1'].join('\n')),
  });
  await page.getByTestId('load').click();
  await page.getByTestId('load-status').getByText('loaded 80 new tickets, 1 duplicate skipped').waitFor();

  // Open it: asked first, in the page (Cancel leaves it a DRAFT), then answered yes.
  await page.getByTestId('open').click();
  expect(await page.evaluate(() => document.activeElement?.getAttribute('data-testid'))).toBe('confirm-yes');
  await screenshot(page, 'console-question');
  expect(await answer(page, false)).toBe('Open this campaign for claims?');
  expect(await page.getByTestId('status').textContent()).toBe('DRAFT');
  // Escape answers no as well, and the focus goes back to Open.
  await page.getByTestId('open').click();
  await page.getByRole('alertdialog').waitFor();
  await page.keyboard.press('Escape');
  await page.getByRole('alertdialog').waitFor({ state: 'detached' });
  expect(await page.evaluate(() => document.activeElement?.getAttribute('data-testid'))).toBe('open');
  expect(await page.getByTestId('status').textContent()).toBe('DRAFT');
  await page.getByTestId('open').click();
  await answer(page);
  await page.getByTestId('status').getByText('OPEN').waitFor();
  const bar = page.getByTestId('live-bar').locator('.fill');
  await bar.waitFor();
  await attributeReaches(page, "[data-testid='live-bar'] .fill", 'data-total', '200');
  expect(await bar.getAttribute('data-total')).toBe('200');
  expect(await bar.getAttribute('data-allocated')).toBe('0');
  await screenshot(page, 'console-open');

  // Claims arrive from another client, a few at a time; the bar follows.
  const partner = await server.createPartner('Box office');
  const widths: number[] = [];
  for (let round = 0; round < 6; round += 1) {
    await Promise.all(Array.from({ length: 25 }, (_, i) => server.gql(partner.apiKey, CLAIM, { input: { campaignId, holder: `fan-${round}-${i}` } })));
    const allocated = (round + 1) * 25;
    await attributeReaches(page, "[data-testid='live-bar'] .fill", 'data-allocated', String(allocated));
    widths.push(await bar.locator('.fill-allocated').evaluate((el) => (el as HTMLElement).getBoundingClientRect().width));
  }
  expect(widths.every((w, i) => i === 0 || w > widths[i - 1]!)).toBe(true);
  await page.getByTestId('figure-allocated').getByText('150').waitFor();
  await page.getByTestId('figure-retired').getByText('0').waitFor();
  await page.getByTestId('figure-allotted').getByText('0').waitFor();
  await page.getByTestId('allotments').getByText('No allotments').waitFor();
  // An allotment for the partner appears with its figures, and the live figures count it.
  const allotted = await server.gql(ADMIN_KEY, 'mutation($c: ID!, $p: ID!) { setPartnerAllotment(campaignId: $c, partnerId: $p, size: 5) { id } }', { c: campaignId, p: partner.id });
  expect(allotted.body.errors).toBeUndefined();
  await page.getByTestId('allotments').locator('tr', { hasText: 'Box office' }).getByText('when the campaign ends').waitFor();
  await page.getByTestId('figure-allotted').getByText('5').waitFor();
  expect(await page.getByTestId('release-policy').textContent()).toBe('return to the pool');
  // The rest of the page follows the live figures within a second or so.
  await page.locator('table', { hasText: 'Partner' }).getByText('150').first().waitFor();
  await page.getByTestId('latest').locator('tr').first().waitFor();
  await screenshot(page, 'console-live-campaign');

  // The campaigns list shows it with its fill.
  await page.goto(`${base}/console/#/campaigns`);
  const row = page.getByTestId(`campaign-${campaignId}`);
  await row.waitFor();
  await attributeReaches(page, `[data-testid='campaign-${campaignId}'] .fill`, 'data-allocated', '150');
  expect(await row.locator('.fill').getAttribute('data-allocated')).toBe('150');
  await screenshot(page, 'console-campaigns');

  // Close it.
  await page.goto(`${base}/console/#/campaigns/${campaignId}`);
  await page.getByTestId('close').click();
  expect(await answer(page)).toContain('No claim will be served after this.');
  await page.getByTestId('status').getByText('CLOSED').waitFor();
  expect(pageErrors).toEqual([]);
  await page.context().close();
});

test("a WAITLIST_FIRST campaign's page shows its waitlist: who waits, in order, and the offers out", async () => {
  const owner = await server.createPartner('Venue');
  const waiter = await server.createPartner('Resale desk');
  const campaignId = await server.openCampaignWith(1, { name: 'Waitlist night', releasePolicy: 'WAITLIST_FIRST' });
  const claimed = await server.gql<{ claimTicket: { allocation: { id: string } } }>(owner.apiKey, CLAIM, { input: { campaignId, holder: 'first' } });
  const JOIN = 'mutation($input: JoinWaitlistInput!) { joinWaitlist(input: $input) { entry { id } error { code } } }';
  for (const holder of ['ada', 'bob']) {
    const joined = await server.gql(waiter.apiKey, JOIN, { input: { campaignId, holder } });
    expect(joined.body.data!.joinWaitlist.error).toBeNull();
  }
  const page = await newPage();
  await page.goto(`${base}/console/`);
  await page.getByTestId('key').fill(ADMIN_KEY);
  await page.getByTestId('sign-in').click();
  await page.locator('table.campaigns').waitFor();
  await page.goto(`${base}/console/#/campaigns/${campaignId}`);
  expect(await page.getByTestId('release-policy').textContent({ timeout: 10_000 })).toBe('go to the waitlist first');
  await page.getByTestId('waitlist-summary').getByText('2 waiting · 0 offers out').waitFor();
  // The summary comes with the page's figures; the table's page of entries is its own request.
  await page.getByTestId('waitlist').getByText('bob').waitFor();
  expect(await page.getByTestId('waitlist').locator('tr').allTextContents()).toEqual([
    expect.stringContaining('1ada'),
    expect.stringContaining('2bob'),
  ]);
  // A release: the ticket is offered to ada, and the page follows within a second or so.
  await server.gql(owner.apiKey, 'mutation($id: ID!) { releaseAllocation(allocationId: $id) { allocation { id } } }', { id: claimed.body.data!.claimTicket.allocation.id });
  await page.getByTestId('waitlist-summary').getByText('1 waiting · 1 offers out').waitFor();
  await page.getByTestId('waitlist').locator('tr', { hasText: 'ada' }).getByText('offered until').waitFor();
  await screenshot(page, 'console-waitlist');
  expect(pageErrors).toEqual([]);
  await page.context().close();
});

test("a BALLOT campaign's page counts entries live, draws on confirmation and shows the seed, digest and ranking", async () => {
  const partner = await server.createPartner('Lottery desk');
  const page = await newPage();
  await page.goto(`${base}/console/`);
  await page.getByTestId('key').fill(ADMIN_KEY);
  await page.getByTestId('sign-in').click();
  await page.locator('table.campaigns').waitFor();

  // Created from the console as a ballot; no section for its entries until it opens.
  await page.goto(`${base}/console/#/new`);
  await page.getByTestId('campaign-name').fill('Ballot drop');
  await page.getByTestId('campaign-mode').selectOption('BALLOT');
  await page.getByTestId('ballot-confirm-seconds').fill('900');
  await page.getByTestId('create-campaign').click();
  await page.getByTestId('status').getByText('DRAFT').waitFor();
  const campaignId = /#\/campaigns\/([0-9a-f-]{36})/.exec(page.url())![1]!;
  await page.getByTestId('mode').getByText('by ballot').waitFor();
  await page.getByTestId('ballot-entries').getByText('No entries yet.').waitFor();
  expect(await page.getByTestId('draw').count()).toBe(0);
  await page.getByTestId('codes').fill(['S-1', 'S-2'].join('\n'));
  await page.getByTestId('load').click();
  await page.getByTestId('load-status').getByText('loaded 2 new tickets').waitFor();
  await page.getByTestId('open').click();
  await answer(page);
  await page.getByTestId('status').getByText('OPEN').waitFor();
  const commitment = await page.getByTestId('seed-commitment').textContent({ timeout: 10_000 });
  expect(commitment).toMatch(/^[0-9a-f]{64}$/);

  // Entries arrive from the partner; the count follows without a reload.
  const ENTER = 'mutation($input: EnterBallotInput!) { enterBallot(input: $input) { entry { id } error { code } } }';
  for (const holder of ['ada', 'bob', 'cy', 'dee', 'eve']) {
    const entered = await server.gql(partner.apiKey, ENTER, { input: { campaignId, holder } });
    expect(entered.body.data!.enterBallot.error).toBeNull();
  }
  await page.getByTestId('ballot-count').getByText('5 entries').waitFor({ timeout: 10_000 });
  // The list is fetched after the count is shown (its own page query): wait for its fifth row.
  await page.getByTestId('ballot-entries').locator('tr').nth(4).waitFor({ timeout: 10_000 });
  expect(await page.getByTestId('ballot-entries').locator('tr').count()).toBe(5);

  // Draw: asked first, then the seed (which matches the commitment), the digest, and the ranking.
  await page.getByTestId('draw').click();
  expect(await answer(page)).toContain('Draw the ballot now? Entries close, 5 entries');
  await page.getByTestId('ballot-count').getByText('2 winners').waitFor();
  const seed = (await page.getByTestId('seed').textContent())!;
  expect(createHash('sha256').update(seed).digest('hex')).toBe(commitment);
  expect(await page.getByTestId('entries-digest').textContent()).toMatch(/^[0-9a-f]{64}$/);
  const rows = await page.getByTestId('ballot-entries').locator('tr').allTextContents();
  expect(rows).toHaveLength(5);
  expect(rows.map((row) => row.charAt(0))).toEqual(['1', '2', '3', '4', '5']);
  expect(rows.slice(0, 2).every((row) => row.includes('WON') && row.includes('held until'))).toBe(true);
  expect(rows.slice(2).every((row) => row.includes('LOST'))).toBe(true);
  expect(await page.getByTestId('draw').count()).toBe(0);
  expect(await page.getByTestId('waitlist-summary').isHidden()).toBe(true);
  await screenshot(page, 'console-ballot');
  expect(pageErrors).toEqual([]);
  await page.context().close();
});

test('a wrong key is refused at sign-in', async () => {
  const page = await newPage();
  await page.goto(`${base}/console/`);
  await page.getByTestId('key').fill('not-the-admin-key-at-all');
  await page.getByTestId('sign-in').click();
  await page.getByRole('alert').getByText('UNAUTHENTICATED').waitFor();
  await page.context().close();
});

test('the console lists webhook endpoints and their deliveries, filters them, and sends a failed one again', async () => {
  // A receiver that answers 500 to everything: every delivery to it stays PENDING, retried.
  let received = 0;
  const receiver = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      received += 1;
      res.writeHead(500).end('no');
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const hookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;
  const page = await newPage();
  try {
    await page.goto(`${base}/console/`);
    await page.getByTestId('key').fill(ADMIN_KEY);
    await page.getByTestId('sign-in').click();
    await page.locator('table.campaigns').waitFor();

    // No endpoint yet: the empty state.
    await page.getByRole('link', { name: 'Webhooks', exact: true }).click();
    await page.getByTestId('webhooks-empty').getByText('No webhook endpoints yet').waitFor();

    // A partner's endpoint for its allocations, and an operator's for closes (which never come here).
    const partner = await server.createPartner('Hook partner');
    const CREATE = 'mutation($input: CreateWebhookInput!) { createWebhook(input: $input) { endpoint { id } } }';
    const created = await server.gql<{ createWebhook: { endpoint: { id: string } } }>(ADMIN_KEY, CREATE, {
      input: { url: hookUrl, events: ['ALLOCATION_CREATED'], partnerId: partner.id },
    });
    expect(created.body.errors).toBeUndefined();
    const endpointId = created.body.data!.createWebhook.endpoint.id;
    const operator = await server.gql<{ createWebhook: { endpoint: { id: string } } }>(ADMIN_KEY, CREATE, { input: { url: hookUrl, events: ['CAMPAIGN_CLOSED'] } });
    expect(operator.body.errors).toBeUndefined();
    const operatorId = operator.body.data!.createWebhook.endpoint.id;

    // 21 claims: 21 deliveries, one more than a page. Wait until each has been tried (and got 500).
    const campaignId = await server.openCampaignWith(25);
    for (let i = 0; i < 21; i += 1) {
      const res = await server.gql(partner.apiKey, CLAIM, { input: { campaignId, holder: `hook-fan-${i}` } });
      expect(res.body.data?.claimTicket.allocation).toBeTruthy();
    }
    await until(
      async () =>
        (
          await server.sql.query<{ n: number }>(
            'SELECT count(*)::int AS n FROM webhook_deliveries WHERE endpoint_id = $1 AND attempts >= 1 AND last_status_code = 500',
            [endpointId],
          )
        ).rows[0]!.n === 21,
      { message: 'the 21 deliveries to have been tried once', timeoutMs: 30_000, intervalMs: 200 },
    );
    expect(received).toBeGreaterThanOrEqual(21);

    // The list shows both endpoints.
    await page.reload();
    const partnerRow = page.getByTestId(`webhook-${endpointId}`);
    await partnerRow.getByText('Hook partner').waitFor();
    expect(await partnerRow.textContent()).toContain('ALLOCATION_CREATED');
    expect(await partnerRow.textContent()).toContain(hookUrl);
    await page.getByTestId(`webhook-${operatorId}`).getByText('operator (every partner)').waitFor();
    await screenshot(page, 'console-webhooks');

    // The operator endpoint has no delivery.
    await page.getByTestId(`webhook-${operatorId}`).getByRole('link').click();
    await page.getByTestId('deliveries-empty').getByText('No deliveries yet').waitFor();

    // The partner endpoint: 20 newest first, then "More".
    await page.getByRole('link', { name: 'Webhooks', exact: true }).click();
    await partnerRow.getByRole('link').click();
    await page.waitForURL(`**/#/webhooks/${endpointId}`);
    const rows = page.getByTestId('deliveries').locator('tbody tr');
    await page.getByTestId('delivery-count').getByText('21 deliveries').waitFor();
    expect(await rows.count()).toBe(20);
    await page.getByTestId('more').click();
    await page.waitForFunction(() => document.querySelectorAll("[data-testid='deliveries'] tbody tr").length === 21);
    expect(await page.getByTestId('more').isHidden()).toBe(true);

    // The newest: PENDING, tried at least once, last answer 500.
    const newest = rows.first();
    const deliveryId = (await newest.getAttribute('data-testid'))!.replace(/^delivery-/, '');
    expect(await newest.getByTestId('delivery-status').textContent()).toBe('PENDING');
    expect(Number(await newest.getByTestId('attempts').textContent())).toBeGreaterThanOrEqual(1);
    expect(await newest.getByTestId('last-status-code').textContent()).toBe('500');
    expect(await newest.textContent()).toContain('ALLOCATION_CREATED');
    expect(await newest.getByRole('button').count()).toBe(0);
    await screenshot(page, 'console-webhook-deliveries');

    // The filter: none DELIVERED; PENDING is every one.
    await page.getByTestId('status-filter').selectOption('DELIVERED');
    await page.getByTestId('deliveries-empty').getByText('No DELIVERED deliveries').waitFor();
    await page.getByTestId('status-filter').selectOption('PENDING');
    await page.getByTestId('delivery-count').getByText('21 PENDING deliveries').waitFor();

    // Its retries given up (in SQL, while no attempt holds it), it is FAILED; "Send again" makes it PENDING.
    await until(
      async () =>
        (
          await server.sql.query(
            `UPDATE webhook_deliveries SET status = 'FAILED', lease_until = NULL
              WHERE id = $1 AND status = 'PENDING' AND (lease_until IS NULL OR lease_until <= now())`,
            [deliveryId],
          )
        ).rowCount === 1,
      { message: 'the delivery to be between attempts', timeoutMs: 15_000, intervalMs: 100 },
    );
    await page.getByTestId('status-filter').selectOption('FAILED');
    await page.getByTestId('delivery-count').getByText('1 FAILED delivery').waitFor();
    const failed = page.getByTestId(`delivery-${deliveryId}`);
    expect(await failed.getByTestId('delivery-status').textContent()).toBe('FAILED');
    await page.getByTestId(`redeliver-${deliveryId}`).click();
    await failed.getByTestId('delivery-status').getByText('PENDING').waitFor();
    expect(await page.getByTestId(`redeliver-${deliveryId}`).count()).toBe(0);
    const { rows: after } = await server.sql.query('SELECT status FROM webhook_deliveries WHERE id = $1', [deliveryId]);
    expect(after[0].status).toBe('PENDING');

    // An endpoint that does not exist: a problem, not a stack.
    await page.goto(`${base}/console/#/webhooks/${randomUUID()}`);
    await page.getByRole('alert').getByText('NOT_FOUND').first().waitFor();
    expect(pageErrors).toEqual([]);
  } finally {
    await page.context().close();
    receiver.closeAllConnections();
    await new Promise((resolve) => receiver.close(resolve));
  }
});
