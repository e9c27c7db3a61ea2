// In a real browser: GraphiQL runs a query; the console signs in, creates and loads a campaign,
// opens it, and its fill bar moves while claims arrive from another client. Screenshots are kept
// in test-results/screenshots.
/// <reference lib="dom" />
import type { Browser, Page } from 'playwright-core';
import { ADMIN_KEY, CLAIM, startTestServer, type TestServer } from '../helpers/testServer';
import { launch, screenshot } from './browser';

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
  await page.close();
});

test('the console signs in, creates and loads a campaign, and its fill bar moves as claims arrive', async () => {
  const page = await newPage();
  page.on('dialog', (dialog) => void dialog.accept());
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
  await page.getByTestId('load-status').getByText('120 loaded').waitFor();
  await page.getByTestId('codes-file').setInputFiles({
    name: 'codes.csv',
    mimeType: 'text/csv',
    buffer: Buffer.from(['code', ...Array.from({ length: 80 }, (_, i) => `BALCONY-${i + 1}`), 'SEAT-1'].join('\n')),
  });
  await page.getByTestId('load').click();
  await page.getByTestId('load-status').getByText('80 loaded, 1 duplicates skipped').waitFor();

  // Open it (the confirmation is accepted).
  await page.getByTestId('open').click();
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
  await page.getByTestId('status').getByText('CLOSED').waitFor();
  expect(pageErrors).toEqual([]);
  await page.close();
});

test('a wrong key is refused at sign-in', async () => {
  const page = await newPage();
  await page.goto(`${base}/console/`);
  await page.getByTestId('key').fill('not-the-admin-key-at-all');
  await page.getByTestId('sign-in').click();
  await page.getByRole('alert').getByText('UNAUTHENTICATED').waitFor();
  await page.close();
});
