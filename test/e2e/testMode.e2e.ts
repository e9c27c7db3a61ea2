// Test mode in the console (issue 31), in Chromium: the header's Test mode switch shows test
// campaigns and their figures, marked as such on every page (a banner, a striped header, a TEST
// mark on test campaigns); a campaign made while it is on is a test campaign; a test campaign's page
// has its rehearsal controls (advance the clock, reset); and a partner's page shows its test key by
// its prefix, issued and rotated there with the new key shown once.
/// <reference lib="dom" />
import type { Browser, Page } from 'playwright-core';
import { ADMIN_KEY, startTestServer, type TestServer } from '../helpers/testServer';
import { consolePage, launch, screenshot, signInTo } from './browser';

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

async function ownerPage(): Promise<{ page: Page; errors: string[]; outside: string[] }> {
  const { page, errors, outside } = await consolePage(browser, base, { width: 1280 });
  page.on('dialog', (dialog) => void (dialog.type() === 'prompt' ? dialog.accept('600') : dialog.accept()));
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

test('a campaign made with the switch on is a test campaign; advance clock and reset work from its page', async () => {
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
  await page.goto(`${base}/console/#/campaigns/${testCampaign}`);
  await page.getByTestId('advance-clock').click();
  await page.getByText('The clock moved 600 s forward.').waitFor();
  const stats = await server.gql(ADMIN_KEY, 'query($c: ID!) { campaign(id: $c) { stats { held available } } }', { c: testCampaign });
  expect(stats.body.data!.campaign.stats).toEqual({ held: 0, available: 3 });
  await page.getByTestId('reset-test').click();
  await page.getByText('The test campaign is back to its opening.').waitFor();
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
  await page.getByTestId('test-api-key-once').waitFor();
  const shown = await page.getByTestId('test-api-key').inputValue();
  expect(shown).toMatch(/tsp_test_[0-9a-f]{12}_/);
  await screenshot(page, 'test-mode-partner');
  expect(errors).toEqual([]);
  await page.context().close();
});
