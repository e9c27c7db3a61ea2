// Test mode in the console (issue 31), in Chromium: the header's Test mode switch shows test
// campaigns and their figures, marked as such on every page (a banner, a striped header, a TEST
// mark on test campaigns); a campaign made while it is on is a test campaign; a test campaign's page
// has its rehearsal controls (advance the clock with an in-page form, reset) and its chart says
// what its holds are; a live campaign's page makes a test copy; the test campaigns list purges test
// data after a confirmation in the page; and a partner's page shows its test key by its prefix,
// issued and rotated there with the new key shown once. No browser dialog is ever opened: the
// console asks in the page.
/// <reference lib="dom" />
import type { Browser, Page } from 'playwright-core';
import { ADMIN_KEY, startTestServer, type TestServer } from '../helpers/testServer';
import { answer, consolePage, launch, screenshot, signInTo } from './browser';

let server: TestServer;
let browser: Browser;
let base: string;
let live: string;
let testCampaign: string;

beforeAll(async () => {
  server = await startTestServer();
  base = server.url.replace(/\/graphql$/, '');
  browser = await launch();
  live = await server.openCampaignWith(3, { name: 'Live drop' });
  testCampaign = await server.openCampaignWith(3, { name: 'Rehearsal drop', test: true });
});
afterAll(async () => {
  await browser?.close();
  await server?.stop();
});

/** The browser dialogs the console opened (it asks in the page: none), each dismissed. */
const dialogs: string[] = [];

async function ownerPage(): Promise<{ page: Page; errors: string[]; outside: string[] }> {
  const { page, errors, outside } = await consolePage(browser, base, { width: 1280 });
  page.on('dialog', (dialog) => (dialogs.push(dialog.type()), void dialog.dismiss()));
  await signInTo(page, base, ADMIN_KEY);
  return { page, errors, outside };
}

const listed = async (page: Page) => (await page.locator('table.campaigns tbody tr a').allTextContents()).sort();

test('the switch shows test campaigns, marked on every page, and live ones again when off', async () => {
  const { page, errors, outside } = await ownerPage();
  await page.getByText('Live drop').waitFor();
  expect(await listed(page)).toEqual(['Live drop']);
  expect(await page.getByTestId('test-mode-banner').count()).toBe(0);

  await page.getByTestId('test-mode').click();
  await page.getByText('Rehearsal drop').waitFor();
  expect(await listed(page)).toEqual(['Rehearsal drop']);
  expect(await page.getByTestId('test-mode').getAttribute('aria-pressed')).toBe('true');
  await page.getByTestId('test-mode-banner').waitFor();
  expect(await page.locator('table.campaigns [data-testid="test-mark"]').count()).toBe(1);
  await screenshot(page, 'test-mode-campaigns');

  // Every page carries the banner while the switch is on.
  for (const hash of ['#/partners', '#/audit', '#/webhooks', `#/campaigns/${testCampaign}`]) {
    await page.goto(`${base}/console/${hash}`);
    await page.getByTestId('test-mode-banner').waitFor();
  }
  // A test campaign's page: its TEST mark and clock, and the rehearsal controls.
  await page.getByTestId('test-clock').waitFor();
  expect(await page.locator('h1 [data-testid="test-mark"]').textContent()).toBe('TEST');
  await screenshot(page, 'test-mode-campaign');

  await page.goto(`${base}/console/#/campaigns`);
  await page.getByTestId('test-mode').click();
  await page.getByText('Live drop').waitFor();
  expect(await listed(page)).toEqual(['Live drop']);
  expect(await page.getByTestId('test-mode-banner').count()).toBe(0);
  // A live campaign's page has no rehearsal control.
  await page.goto(`${base}/console/#/campaigns/${live}`);
  await page.getByTestId('status').waitFor();
  expect(await page.getByTestId('advance-clock').count()).toBe(0);
  expect(await page.getByTestId('test-mark').count()).toBe(0);
  expect({ errors, outside }).toEqual({ errors: [], outside: [] });
  await page.context().close();
});

test('a campaign made with the switch on is a test campaign; its chart counts holds; advance clock (an in-page form that checks its number) and reset work from its page', async () => {
  const { page, errors } = await ownerPage();
  await page.getByTestId('test-mode').click();
  await page.goto(`${base}/console/#/new`);
  await page.getByRole('heading', { name: 'New test campaign' }).waitFor();
  await page.getByTestId('campaign-name').fill('Made in test mode');
  await page.getByTestId('create-campaign').click();
  await page.waitForURL(/#\/campaigns\/[0-9a-f-]{36}$/);
  const id = /#\/campaigns\/([0-9a-f-]{36})/.exec(page.url())![1]!;
  const read = await server.gql(ADMIN_KEY, 'query($id: ID!) { campaign(id: $id) { test } }', { id });
  expect(read.body.data!.campaign).toEqual({ test: true });

  // The rehearsal controls on the pre-made, open test campaign: a hold, then the clock moved past it.
  const partner = await server.gql(ADMIN_KEY, 'mutation { createPartner(input: { name: "Rehearser" }) { testApiKey } }');
  const testKey = partner.body.data!.createPartner.testApiKey;
  const held = await server.gql(testKey, 'mutation($c: ID!) { holdTicket(input: { campaignId: $c, holder: "h", ttlSeconds: 300 }) { allocation { id } } }', { c: testCampaign });
  expect(held.body.errors).toBeUndefined();
  const before = await server.gql(ADMIN_KEY, 'query($c: ID!) { campaign(id: $c) { testClock } }', { c: testCampaign });
  await page.goto(`${base}/console/#/campaigns/${testCampaign}`);
  // A hold is activity: the empty chart says it is there, not "No claims yet".
  await page.getByTestId('timeline-empty').getByText('1 ticket is held now').waitFor();
  expect(await page.getByTestId('timeline-empty').textContent()).not.toContain('No claims yet');
  await page.getByTestId('advance-clock').click();
  // The form checks the amount before anything is sent.
  await page.getByTestId('clock-amount').fill('0');
  await page.getByTestId('clock-submit').click();
  await page.getByTestId('clock-error').getByText('Enter a whole number, 1 or more.').waitFor();
  expect(await page.getByTestId('clock-amount').getAttribute('aria-invalid')).toBe('true');
  await page.getByTestId('clock-amount').fill('400');
  await page.getByTestId('clock-unit').selectOption('days');
  await page.getByTestId('clock-submit').click();
  await page.getByTestId('clock-error').getByText('At most 365 days (31,536,000 s) at a time.').waitFor();
  await screenshot(page, 'test-mode-clock-invalid');
  await page.getByTestId('clock-amount').fill('10');
  await page.getByTestId('clock-unit').selectOption('minutes');
  await page.getByTestId('clock-submit').click();
  await page.getByTestId('clock-moved').getByText('The clock moved 10 minutes (600 s) forward.').waitFor();
  expect(await page.getByTestId('clock-form').count()).toBe(0);
  const after = await server.gql(ADMIN_KEY, 'query($c: ID!) { campaign(id: $c) { testClock } }', { c: testCampaign });
  const moved = Date.parse(after.body.data!.campaign.testClock) - Date.parse(before.body.data!.campaign.testClock);
  expect(moved).toBeGreaterThanOrEqual(600_000);
  expect(moved).toBeLessThan(660_000);
  const stats = await server.gql(ADMIN_KEY, 'query($c: ID!) { campaign(id: $c) { stats { held available } } }', { c: testCampaign });
  expect(stats.body.data!.campaign.stats).toEqual({ held: 0, available: 3 });
  await page.getByTestId('reset-test').click();
  expect(await answer(page)).toContain('Reset this test campaign to just after its opening?');
  await page.getByText('The test campaign is back to its opening.').waitFor();
  expect(dialogs).toEqual([]);
  expect(errors).toEqual([]);
  await page.context().close();
});

test("a live campaign's page makes a test copy with the tickets asked for (checked: at most 1,000,000), and opens it in Test mode", async () => {
  const { page, errors } = await ownerPage();
  await page.goto(`${base}/console/#/campaigns/${live}`);
  await page.getByTestId('test-copy').click();
  await page.getByTestId('copy-tickets').fill('1000001');
  await page.getByTestId('copy-submit').click();
  await page.getByTestId('copy-error').getByText('At most 1,000,000 tickets.').waitFor();
  await page.getByTestId('copy-tickets').fill('2.5');
  await page.getByTestId('copy-submit').click();
  await page.getByTestId('copy-error').getByText('Enter a whole number of tickets').waitFor();
  const copies = async () => (await server.sql.query<{ n: number }>("SELECT count(*)::int AS n FROM campaigns WHERE name = 'Live drop (test copy)'")).rows[0]!.n;
  expect(await copies()).toBe(0);
  await page.getByTestId('copy-tickets').fill('5');
  await page.getByTestId('copy-submit').click();
  await page.getByTestId('copy-made').getByText('"Live drop (test copy)" is made: OPEN, 5 test tickets.').waitFor();
  await screenshot(page, 'test-mode-copy-made');
  expect(await copies()).toBe(1);
  await page.getByTestId('open-copy').click();
  await page.locator('h1 [data-testid="test-mark"]').waitFor();
  await page.getByTestId('test-mode-banner').waitFor();
  expect(await page.getByTestId('figure-total').textContent()).toBe('5');
  // A test campaign is not copied from its page: it has its clock and reset instead.
  expect(await page.getByTestId('test-copy').count()).toBe(0);
  expect(errors).toEqual([]);
  await page.context().close();
});

test('the test campaigns list purges test data after a confirmation in the page that names what goes; live campaigns stay', async () => {
  await server.openCampaignWith(2, { name: 'Old rehearsal', test: true });
  const { page, errors } = await ownerPage();
  // Live mode has no purge control: it is on the test campaigns' list.
  expect(await page.getByTestId('purge-open').count()).toBe(0);
  await page.getByTestId('test-mode').click();
  await page.getByText('Old rehearsal').waitFor();
  const tests = async () => (await server.sql.query<{ n: number }>('SELECT count(*)::int AS n FROM campaigns WHERE test')).rows[0]!.n;
  const testsBefore = await tests();
  expect(testsBefore).toBeGreaterThanOrEqual(2);
  await page.getByTestId('purge-open').click();
  await page.getByTestId('purge-before').fill('');
  await page.getByTestId('purge-review').click();
  await page.getByTestId('purge-error').getByText('Enter a date and time.').waitFor();
  // A moment from now: every test campaign so far. The question names those listed.
  await page.getByTestId('purge-open').click();
  await page.getByTestId('purge-review').click();
  const question = page.getByTestId('purge-question');
  await question.getByText('"Old rehearsal"').waitFor();
  expect(await question.textContent()).toContain('No live campaign or figure is touched. It cannot be undone.');
  await screenshot(page, 'test-mode-purge-question');
  // Back: nothing is deleted.
  await page.getByTestId('purge-cancel').click();
  expect(await question.count()).toBe(0);
  expect(await tests()).toBe(testsBefore);
  await page.getByTestId('purge-review').click();
  await page.getByTestId('purge-confirm').click();
  await page.getByTestId('purge-result').getByText(`Purged: ${testsBefore} test campaigns`).waitFor();
  await page.getByText('No test campaigns.').waitFor();
  await screenshot(page, 'test-mode-purged');
  expect(await tests()).toBe(0);
  const liveLeft = await server.gql(ADMIN_KEY, 'query($id: ID!) { campaign(id: $id) { name } }', { id: live });
  expect(liveLeft.body.data!.campaign).toEqual({ name: 'Live drop' });
  expect(dialogs).toEqual([]);
  expect(errors).toEqual([]);
  await page.context().close();
});

test("a partner's page shows its test key by its prefix, and rotates it with the new key shown once", async () => {
  const created = await server.gql(ADMIN_KEY, 'mutation { createPartner(input: { name: "Keyholder" }) { partner { id testKey { prefix } } } }');
  const { id, testKey } = created.body.data!.createPartner.partner;
  const { page, errors } = await ownerPage();
  await page.goto(`${base}/console/#/partners/${id}`);
  await page.getByTestId('test-key-prefix').waitFor();
  expect(await page.getByTestId('test-key-prefix').textContent()).toContain(testKey.prefix);
  await page.getByTestId('rotate-test').click();
  expect(await answer(page)).toBe('Give Keyholder a new test key? The current one stops working at once.');
  await page.getByTestId('test-api-key-once').waitFor();
  const shown = await page.getByTestId('test-api-key').inputValue();
  expect(shown).toMatch(/tsp_test_[0-9a-f]{12}_/);
  await screenshot(page, 'test-mode-partner');
  expect(errors).toEqual([]);
  await page.context().close();
});
