// Issue 27, item 8, in Chromium: what the API lets an operator set, the console offers. A new campaign
// takes its release policy, longest hold, low-stock alert and waitlist offer time (read back through
// the API), and shows each mode's and policy's fields only for them; the edit form says what is fixed
// at creation (updateCampaign cannot change the release policy). Webhook endpoints are created (the
// signing secret shown once, with a copy button, and it signs the deliveries) and deleted (asked
// first). A ballot's ranking and a waitlist are paged past their first page.
/// <reference lib="dom" />
import { createHmac } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, Page } from 'playwright-core';
import { ADMIN_KEY, CLAIM, startTestServer, type TestServer } from '../helpers/testServer';
import { until } from '../helpers/time';
import { answer, consolePage, launch, screenshot, signInTo } from './browser';

let server: TestServer;
let browser: Browser;
let base: string;

beforeAll(async () => {
  server = await startTestServer();
  base = server.url.replace(/\/graphql$/, '');
  browser = await launch();
});
afterAll(async () => {
  await browser?.close();
  await server?.stop();
});

/** A signed-in OWNER's page at 1280 px; `dialogs` records any browser dialog (the console asks in the page, so none). */
async function ownerPage(width = 1280): Promise<{ page: Page; errors: string[]; outside: string[]; dialogs: string[] }> {
  const { page, errors, outside } = await consolePage(browser, base, { width });
  const dialogs: string[] = [];
  page.on('dialog', (dialog) => {
    dialogs.push(dialog.message());
    void dialog.dismiss();
  });
  await signInTo(page, base, ADMIN_KEY);
  return { page, errors, outside, dialogs };
}

const campaignIdOf = (page: Page) => /#\/campaigns\/([0-9a-f-]{36})/.exec(page.url())![1]!;

const SETTINGS = 'query($id: ID!) { campaign(id: $id) { name mode releasePolicy maxHoldSeconds lowStockThreshold waitlistOfferSeconds ballotConfirmSeconds } }';

test('a new campaign takes its release policy, longest hold, low-stock alert and waitlist offer time, as the API reads them back', async () => {
  const { page, errors, outside } = await ownerPage();
  await page.goto(`${base}/console/#/new`);
  await page.getByTestId('campaign-name').fill('Resale with a waitlist');
  await page.getByTestId('campaign-release-policy').selectOption('WAITLIST_FIRST');
  await page.getByTestId('campaign-offer-seconds').fill('600');
  await page.getByTestId('campaign-max-hold').fill('3600');
  await page.getByTestId('campaign-low-stock').fill('25');
  await screenshot(page, 'console-new-campaign-settings-1280');
  await page.getByTestId('create-campaign').click();
  await page.getByTestId('status').getByText('DRAFT').waitFor();
  const waitlistId = campaignIdOf(page);
  const made = await server.gql(ADMIN_KEY, SETTINGS, { id: waitlistId });
  expect(made.body.data!.campaign).toEqual({
    name: 'Resale with a waitlist',
    mode: 'FIRST_COME',
    releasePolicy: 'WAITLIST_FIRST',
    maxHoldSeconds: 3600,
    lowStockThreshold: 25,
    waitlistOfferSeconds: 600,
    ballotConfirmSeconds: null,
  });
  expect(await page.getByTestId('release-policy').textContent()).toBe('go to the waitlist first');
  await page.getByTestId('waitlist-summary').getByText('each held 600 s').waitFor();

  // VOID with only a hold cap: the offer time is left to the server (900, capped by the longest hold).
  await page.goto(`${base}/console/#/new`);
  await page.getByTestId('campaign-name').fill('Retire returns');
  await page.getByTestId('campaign-release-policy').selectOption('VOID');
  expect(await page.getByTestId('campaign-offer-seconds').isVisible()).toBe(false);
  await page.getByTestId('campaign-max-hold').fill('120');
  await page.getByTestId('create-campaign').click();
  await page.getByTestId('status').getByText('DRAFT').waitFor();
  const voidCampaign = await server.gql(ADMIN_KEY, SETTINGS, { id: campaignIdOf(page) });
  expect(voidCampaign.body.data!.campaign).toMatchObject({ releasePolicy: 'VOID', maxHoldSeconds: 120, lowStockThreshold: null, waitlistOfferSeconds: 120 });

  // A ballot with its own settings and a hold cap: the ballot's fields reach the API too.
  await page.goto(`${base}/console/#/new`);
  await page.getByTestId('campaign-name').fill('Ballot with a cap');
  await page.getByTestId('campaign-mode').selectOption('BALLOT');
  await page.getByTestId('ballot-confirm-seconds').fill('300');
  await page.getByTestId('campaign-max-hold').fill('600');
  await page.getByTestId('campaign-low-stock').fill('3');
  await page.getByTestId('create-campaign').click();
  await page.getByTestId('status').getByText('DRAFT').waitFor();
  const ballot = await server.gql(ADMIN_KEY, SETTINGS, { id: campaignIdOf(page) });
  expect(ballot.body.data!.campaign).toMatchObject({ mode: 'BALLOT', releasePolicy: 'POOL', maxHoldSeconds: 600, lowStockThreshold: 3, ballotConfirmSeconds: 300 });
  expect(errors).toEqual([]);
  expect(outside).toEqual([]);
  await page.context().close();
});

test('the new-campaign form shows each mode’s and release policy’s fields only for them', async () => {
  const { page, errors } = await ownerPage();
  await page.goto(`${base}/console/#/new`);
  await page.getByTestId('create-campaign').waitFor();
  const visible = (testid: string) => page.getByTestId(testid).isVisible();
  // First come, back to the pool: neither the ballot's fields nor the waitlist's.
  expect(await page.getByTestId('campaign-mode').inputValue()).toBe('FIRST_COME');
  const ballotFieldset = page.locator('fieldset', { has: page.locator('legend', { hasText: 'Ballot' }) });
  expect(await ballotFieldset.isVisible()).toBe(false);
  expect(await visible('ballot-confirm-seconds')).toBe(false);
  expect(await page.getByLabel(/Entries close at/).isVisible()).toBe(false);
  expect(await visible('campaign-offer-seconds')).toBe(false);
  await screenshot(page, 'console-new-campaign-first-come-1280');
  // A waitlist policy: its offer time appears.
  await page.getByTestId('campaign-release-policy').selectOption('WAITLIST_FIRST');
  expect(await visible('campaign-offer-seconds')).toBe(true);
  // A ballot: its fields appear, and a ballot cannot have a waitlist (the API refuses it).
  await page.getByTestId('campaign-mode').selectOption('BALLOT');
  expect(await visible('ballot-fields')).toBe(true);
  expect(await visible('ballot-confirm-seconds')).toBe(true);
  expect(await page.getByTestId('campaign-release-policy').inputValue()).toBe('POOL');
  expect(await page.locator("[data-testid='campaign-release-policy'] option[value='WAITLIST_FIRST']").isDisabled()).toBe(true);
  expect(await visible('campaign-offer-seconds')).toBe(false);
  await screenshot(page, 'console-new-campaign-ballot-1280');
  // Back to first come: the ballot's fields go again.
  await page.getByTestId('campaign-mode').selectOption('FIRST_COME');
  expect(await visible('ballot-fields')).toBe(false);
  expect(errors).toEqual([]);
  await page.context().close();
});

test('the edit form changes the release policy while DRAFT, and the hold cap, low-stock alert and offer time while OPEN; once open the policy is shown fixed', async () => {
  const { page, errors } = await ownerPage();
  await page.goto(`${base}/console/#/new`);
  await page.getByTestId('campaign-name').fill('Policy to change');
  await page.getByTestId('campaign-release-policy').selectOption('VOID');
  await page.getByText('Can be changed until the campaign opens').first().waitFor();
  await page.getByTestId('create-campaign').click();
  await page.getByTestId('status').getByText('DRAFT').waitFor();
  const id = campaignIdOf(page);

  // DRAFT: the policy changes, with its offer time, the hold cap and the alert.
  await page.getByTestId('edit').click();
  expect(await page.getByTestId('edit-waitlist-fields').isVisible()).toBe(false);
  await page.getByTestId('edit-release-policy').selectOption('WAITLIST_FIRST');
  await page.getByTestId('edit-offer-seconds').fill('300');
  await page.getByTestId('edit-max-hold').fill('600');
  await page.getByTestId('edit-low-stock').fill('7');
  await page.getByTestId('edit-name').fill('Policy to change (renamed)');
  await screenshot(page, 'console-edit-settings-1280');
  await page.getByTestId('save').click();
  await page.locator('h1', { hasText: 'Policy to change (renamed)' }).waitFor();
  const draft = await server.gql(ADMIN_KEY, SETTINGS, { id });
  expect(draft.body.data!.campaign).toMatchObject({ name: 'Policy to change (renamed)', releasePolicy: 'WAITLIST_FIRST', waitlistOfferSeconds: 300, maxHoldSeconds: 600, lowStockThreshold: 7 });

  // OPEN: the policy is shown fixed; the cap, the alert and the offer time still change.
  await page.getByTestId('open').click();
  await answer(page);
  await page.getByTestId('status').getByText('OPEN').waitFor();
  await page.getByTestId('edit').click();
  expect(await page.getByTestId('edit-release-policy').count()).toBe(0);
  expect(await page.getByTestId('fixed-settings').getByTestId('fixed-release-policy').textContent()).toBe('go to the waitlist first');
  await page.getByTestId('edit-offer-seconds').fill('120');
  await page.getByTestId('edit-max-hold').fill('240');
  await page.getByTestId('edit-low-stock').fill('');
  await page.getByTestId('save').click();
  await until(async () => (await server.gql(ADMIN_KEY, SETTINGS, { id })).body.data!.campaign.maxHoldSeconds === 240, { message: 'the edit to be saved' });
  expect((await server.gql(ADMIN_KEY, SETTINGS, { id })).body.data!.campaign).toMatchObject({ releasePolicy: 'WAITLIST_FIRST', waitlistOfferSeconds: 120, maxHoldSeconds: 240, lowStockThreshold: null });

  // A closed campaign cannot be changed at all: no Edit.
  await page.getByTestId('close').click();
  await answer(page);
  await page.getByTestId('status').getByText('CLOSED').waitFor();
  expect(await page.getByTestId('edit').count()).toBe(0);
  expect(errors).toEqual([]);
  await page.context().close();
});

test('a webhook endpoint is created from the console, its secret shown once (and it signs the deliveries), then deleted after a confirmation', async () => {
  const bodies: { signature: string; body: string }[] = [];
  const receiver = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      bodies.push({ signature: String(req.headers['tessera-signature'] ?? ''), body: Buffer.concat(chunks).toString('utf8') });
      res.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const hookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/tessera-hooks`;
  const partner = await server.createPartner('Hook owner');
  const { page, errors, outside, dialogs } = await ownerPage();
  try {
    await page.goto(`${base}/console/#/webhooks`);
    await page.getByTestId('webhooks-empty').waitFor();
    // No event chosen: said, nothing created.
    await page.getByTestId('webhook-url').fill(hookUrl);
    await page.getByTestId('create-webhook').click();
    await page.getByRole('alert').getByText('Choose at least one event').waitFor();
    // An operator endpoint for openings.
    await page.getByTestId('webhook-event-CAMPAIGN_OPENED').check();
    await page.getByTestId('create-webhook').click();
    const secret = await page.getByTestId('webhook-secret').inputValue();
    expect(secret).toMatch(/^whsec_/);
    await page.getByTestId('webhook-secret-copy').waitFor();
    await page.getByTestId('key-once').getByText('shown once').waitFor();
    await screenshot(page, 'console-webhook-created-1280');
    const listed = await server.gql<{ webhooks: { id: string; url: string; events: string[]; partner: { id: string } | null }[] }>(ADMIN_KEY, '{ webhooks { id url events partner { id } } }');
    expect(listed.body.data!.webhooks).toEqual([{ id: expect.any(String), url: hookUrl, events: ['CAMPAIGN_OPENED'], partner: null }]);
    const endpointId = listed.body.data!.webhooks[0]!.id;
    await page.getByTestId(`webhook-${endpointId}`).getByText('operator (every partner)').waitFor();

    // The secret shown is the one that signs: a delivery's Tessera-Signature checks out with it.
    await server.openCampaignWith(1);
    await until(async () => bodies.length > 0, { message: 'a CAMPAIGN_OPENED delivery', timeoutMs: 15_000, intervalMs: 100 });
    const { signature, body } = bodies[0]!;
    const t = /(?:^|,)t=(\d+)/.exec(signature)![1]!;
    const v1 = /(?:^|,)v1=([0-9a-f]+)/.exec(signature)![1]!;
    expect(createHmac('sha256', secret).update(`${t}.${body}`).digest('hex')).toBe(v1);

    // Shown once: after a reload, the secret is nowhere on the page.
    await page.reload();
    await page.getByTestId(`webhook-${endpointId}`).waitFor();
    expect(await page.getByTestId('webhook-secret').count()).toBe(0);
    expect(await page.content()).not.toContain(secret);

    // A partner's endpoint, chosen from the partners.
    await page.getByTestId('webhook-url').fill(`${hookUrl}/partner`);
    await page.getByTestId('webhook-partner').selectOption({ label: "Hook owner's endpoint" });
    await page.getByTestId('webhook-event-ALLOCATION_CREATED').check();
    await page.getByTestId('webhook-event-HOLD_EXPIRED').check();
    await page.getByTestId('create-webhook').click();
    await page.getByTestId('webhook-secret').waitFor();
    const both = await server.gql<{ webhooks: { id: string; events: string[]; partner: { id: string } | null }[] }>(ADMIN_KEY, '{ webhooks { id events partner { id } } }');
    const partnerHook = both.body.data!.webhooks.find((w) => w.partner?.id === partner.id)!;
    expect(partnerHook.events).toEqual(['ALLOCATION_CREATED', 'HOLD_EXPIRED']);

    // Delete: asked first, in the page; "Cancel" keeps it, "Delete" deletes it.
    await page.getByTestId(`delete-${endpointId}`).click();
    const question = await answer(page, false);
    expect(question).toContain(hookUrl);
    expect(question).toContain('cannot be undone');
    expect((await server.gql(ADMIN_KEY, '{ webhooks { id } }')).body.data!.webhooks).toHaveLength(2);
    await page.getByTestId(`delete-${endpointId}`).click();
    await answer(page);
    await page.getByTestId('webhook-deleted').waitFor();
    await page.getByTestId(`webhook-${endpointId}`).waitFor({ state: 'detached' });
    const left = await server.gql<{ webhooks: { id: string }[] }>(ADMIN_KEY, '{ webhooks { id } }');
    expect(left.body.data!.webhooks.map((w) => w.id)).toEqual([partnerHook.id]);
    const audit = await server.gql(ADMIN_KEY, '{ auditLog(first: 5, operation: "deleteWebhook") { totalCount } }');
    expect(audit.body.data!.auditLog.totalCount).toBe(1);
    expect(dialogs).toEqual([]);
    expect(errors).toEqual([]);
    expect(outside).toEqual([]);
  } finally {
    await page.context().close();
    receiver.closeAllConnections();
    await new Promise((resolve) => receiver.close(resolve));
  }
});

test("a ballot's ranking is paged past its first page, 20 at a time", async () => {
  const partner = await server.createPartner('Ballot desk');
  const campaignId = await server.createCampaign({ name: 'Big ballot', mode: 'BALLOT' });
  await server.loadTickets(campaignId, 5);
  await server.openCampaign(campaignId);
  const ENTER = 'mutation($input: EnterBallotInput!) { enterBallot(input: $input) { entry { id } error { code } } }';
  for (let i = 1; i <= 25; i += 1) {
    const entered = await server.gql(partner.apiKey, ENTER, { input: { campaignId, holder: `entrant-${String(i).padStart(2, '0')}` } });
    expect(entered.body.data!.enterBallot.error).toBeNull();
  }
  const { page, errors } = await ownerPage();
  await page.goto(`${base}/console/#/campaigns/${campaignId}`);
  const rows = page.getByTestId('ballot-entries').locator('tr');
  // Before the draw: in entry order, 20 a page.
  await page.getByTestId('ballot-entries-range').getByText('1–20 of 25').waitFor();
  expect(await rows.count()).toBe(20);
  expect(await page.getByTestId('ballot').textContent()).not.toMatch(/and \d+ more/);
  await page.getByTestId('ballot-entries-next').click();
  await page.getByTestId('ballot-entries-range').getByText('21–25 of 25').waitFor();
  expect(await rows.locator('td:nth-child(2)').allTextContents()).toEqual(['entrant-21', 'entrant-22', 'entrant-23', 'entrant-24', 'entrant-25']);
  expect(await page.getByTestId('ballot-entries-next').isDisabled()).toBe(true);

  // The draw: the ranking starts again at its first page, ranks 1–20, then 21–25.
  await page.getByTestId('draw').click();
  await answer(page);
  await page.getByTestId('ballot-count').getByText('5 winners').waitFor();
  await page.getByTestId('ballot-entries-range').getByText('1–20 of 25').waitFor();
  expect((await rows.allTextContents()).map((r) => Number(/^\d+/.exec(r)![0]))).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
  await page.getByTestId('ballot-entries-next').click();
  await page.getByTestId('ballot-entries-range').getByText('21–25 of 25').waitFor();
  expect((await rows.allTextContents()).map((r) => Number(/^\d+/.exec(r)![0]))).toEqual([21, 22, 23, 24, 25]);
  // The page stays where it is while the figures refresh (the detail polls every 5 s).
  await page.waitForTimeout(5_500);
  expect(await page.getByTestId('ballot-entries-range').textContent()).toBe('21–25 of 25');
  await screenshot(page, 'console-ballot-page-2-1280');
  await page.getByTestId('ballot-entries-previous').click();
  await page.getByTestId('ballot-entries-range').getByText('1–20 of 25').waitFor();
  expect(errors).toEqual([]);
  await page.context().close();
});

test('a waitlist is paged past its first page: offers out, then who waits, and each status on its own', async () => {
  const owner = await server.createPartner('Venue desk');
  const waiter = await server.createPartner('Queue desk');
  const campaignId = await server.openCampaignWith(1, { name: 'Long queue', releasePolicy: 'WAITLIST_FIRST' });
  const claimed = await server.gql<{ claimTicket: { allocation: { id: string } } }>(owner.apiKey, CLAIM, { input: { campaignId, holder: 'first' } });
  const JOIN = 'mutation($input: JoinWaitlistInput!) { joinWaitlist(input: $input) { entry { id } error { code } } }';
  for (let i = 1; i <= 25; i += 1) {
    const joined = await server.gql(waiter.apiKey, JOIN, { input: { campaignId, holder: `q-${String(i).padStart(2, '0')}` } });
    expect(joined.body.data!.joinWaitlist.error).toBeNull();
  }
  // One release: q-01 is offered the ticket; 24 wait.
  await server.gql(owner.apiKey, 'mutation($id: ID!) { releaseAllocation(allocationId: $id) { allocation { id } } }', { id: claimed.body.data!.claimTicket.allocation.id });
  const { page, errors } = await ownerPage();
  await page.goto(`${base}/console/#/campaigns/${campaignId}`);
  await page.getByTestId('waitlist-summary').getByText('24 waiting · 1 offers out').waitFor();
  const holders = () => page.getByTestId('waitlist').locator('tr td:nth-child(2)').allTextContents();
  const q = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => `q-${String(from + i).padStart(2, '0')}`);
  await page.getByTestId('waitlist-range').getByText('1–20 of 25').waitFor();
  expect(await holders()).toEqual(q(1, 20));
  expect(await page.getByTestId('waitlist').locator('tr').first().textContent()).toContain('offered until');
  await page.getByTestId('waitlist-next').click();
  await page.getByTestId('waitlist-range').getByText('21–25 of 25').waitFor();
  expect(await holders()).toEqual(q(21, 25));
  // Positions carry on across the pages: q-25 is 24th in the queue.
  expect(await page.getByTestId('waitlist').locator('tr').last().textContent()).toMatch(/^24q-25/);
  await screenshot(page, 'console-waitlist-page-2-1280');

  // Only who waits: 24, in two pages.
  await page.getByTestId('waitlist-view').selectOption('WAITING');
  await page.getByTestId('waitlist-range').getByText('1–20 of 24').waitFor();
  expect(await holders()).toEqual(q(2, 21));
  await page.getByTestId('waitlist-next').click();
  await page.getByTestId('waitlist-range').getByText('21–24 of 24').waitFor();
  expect(await holders()).toEqual(q(22, 25));
  await page.getByTestId('waitlist-previous').click();
  await page.getByTestId('waitlist-range').getByText('1–20 of 24').waitFor();
  // Only the offers: one, and no pager.
  await page.getByTestId('waitlist-view').selectOption('OFFERED');
  await page.getByTestId('waitlist').locator('tr', { hasText: 'q-01' }).waitFor();
  expect(await holders()).toEqual(['q-01']);
  expect(await page.getByTestId('waitlist-pager').isVisible()).toBe(false);
  expect(errors).toEqual([]);
  await page.context().close();
});

test("the campaign page numbers allocations by the API's per-campaign sequence and says sold out as the API defines it", async () => {
  const partner = await server.createPartner('Numbered');
  // Another campaign's claims first: the sequence is the campaign's own, so this one still starts at 1.
  const other = await server.openCampaignWith(2);
  await server.gql(partner.apiKey, CLAIM, { input: { campaignId: other, holder: 'elsewhere' } });
  const campaignId = await server.openCampaignWith(2);
  for (const holder of ['first', 'second']) await server.gql(partner.apiKey, CLAIM, { input: { campaignId, holder } });
  const read = await server.gql(ADMIN_KEY, 'query($id: ID!) { campaign(id: $id) { stats { soldOut soldOutAt } allocations(first: 5) { edges { node { id sequence holder } } } } }', { id: campaignId });
  const campaign = read.body.data!.campaign;
  expect(campaign.stats.soldOut).toBe(true);
  const { page, errors, outside } = await ownerPage();
  await page.goto(`${base}/console/#/campaigns/${campaignId}`);
  for (const { node } of campaign.allocations.edges) {
    const row = page.getByTestId(`allocation-${node.id}`);
    await row.waitFor();
    expect(await row.locator('td').first().textContent()).toBe(String(node.sequence));
  }
  expect(campaign.allocations.edges.map(({ node }: { node: { sequence: number } }) => node.sequence).sort()).toEqual([1, 2]);
  await until(async () => /^yes, since \d{1,2} \w{3} \d{4}, \d{2}:\d{2}:\d{2} /.test((await page.getByTestId('figure-sold-out').textContent()) ?? ''), {
    message: 'the sold-out figure with its time',
    timeoutMs: 10_000,
  });
  // A release ends the sell-out; the figure says so, and keeps when it first sold out.
  await server.gql(ADMIN_KEY, 'mutation($id: ID!) { releaseAllocation(allocationId: $id) { allocation { id } } }', { id: campaign.allocations.edges[0].node.id });
  await until(async () => /^no \(first sold out /.test((await page.getByTestId('figure-sold-out').textContent()) ?? ''), {
    message: 'the sold-out figure to follow the release',
    timeoutMs: 10_000,
  });
  expect(errors).toEqual([]);
  expect(outside).toEqual([]);
});
