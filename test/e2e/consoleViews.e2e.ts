// What the console shows, in Chromium: a VIEWER key sees no control it cannot use (no New campaign,
// no editing, loading or releasing, no forms on partners' pages — their settings as text); the
// audit log names the campaigns its entries acted on, read in one request for the page; a drawn
// ballot's page leads with its ranking, without Load tickets or the claims chart; and at 390 px the
// latest allocations are cards in which Status and Release are on the screen.
/// <reference lib="dom" />
import type { Browser, Page } from 'playwright-core';
import { ADMIN_KEY, CLAIM, startTestServer, type TestServer } from '../helpers/testServer';
import { answer, consolePage, launch, screenshot, signInTo } from './browser';

let server: TestServer;
let browser: Browser;
let base: string;
let viewerKey: string;
let concertId: string;
let ballotId: string;
let partnerId: string;

beforeAll(async () => {
  server = await startTestServer();
  base = server.url.replace(/\/graphql$/, '');
  browser = await launch();
  const viewer = await server.gql(ADMIN_KEY, 'mutation { createOperatorKey(input: { name: "wallboard", role: VIEWER }) { apiKey } }');
  viewerKey = viewer.body.data!.createOperatorKey.apiKey;
  const partner = await server.createPartner('Box office');
  partnerId = partner.id;
  concertId = await server.openCampaignWith(20, { name: 'Harbour concert' });
  for (let i = 0; i < 3; i += 1) await server.gql(partner.apiKey, CLAIM, { input: { campaignId: concertId, holder: `fan-with-a-rather-long-holder-name-${i}` } });
  // A drawn ballot whose winners hold their tickets.
  ballotId = await server.createCampaign({ name: 'Ballot drop', mode: 'BALLOT' });
  await server.loadTickets(ballotId, 2);
  await server.openCampaign(ballotId);
  for (const holder of ['cy', 'dee', 'eve']) await server.gql(partner.apiKey, 'mutation($input: EnterBallotInput!) { enterBallot(input: $input) { entry { id } } }', { input: { campaignId: ballotId, holder } });
  const drawn = await server.gql(ADMIN_KEY, 'mutation($id: ID!) { drawBallot(campaignId: $id) { ballot { drawnAt } } }', { id: ballotId });
  expect(drawn.body.errors).toBeUndefined();
});
afterAll(async () => {
  await browser?.close();
  await server?.stop();
});

async function signedIn(key: string, width = 1280): Promise<{ page: Page; errors: string[]; outside: string[] }> {
  const opened = await consolePage(browser, base, { width });
  await signInTo(opened.page, base, key);
  return opened;
}

/** The page's buttons and fields that are neither read-only nor for reading (search, paging, copy, the header's switch). */
const changeControls = (page: Page) =>
  page.evaluate(() =>
    Array.from(document.querySelectorAll<HTMLElement>('main button, main input, main select, main textarea'))
      .filter((el) => el.checkVisibility())
      .filter((el) => !el.closest('[role="search"]') && !el.hasAttribute('data-read') && !el.dataset.testid?.endsWith('-copy') && !(el as HTMLInputElement).readOnly)
      .map((el) => el.dataset.testid ?? el.outerHTML.slice(0, 80)),
  );

test('a VIEWER sees no control it cannot use: no New campaign or Operator keys, nothing to edit, load, release or copy, and partners\' settings as text', async () => {
  const { page, errors, outside } = await signedIn(viewerKey);
  const nav = page.getByRole('navigation', { name: 'Console' });
  await nav.getByRole('link', { name: 'Campaigns' }).waitFor();
  expect(await nav.getByRole('link', { name: 'New campaign' }).count()).toBe(0);
  expect(await nav.getByRole('link', { name: 'Operator keys' }).count()).toBe(0);
  await page.getByTestId('read-only-banner').waitFor();
  expect(await changeControls(page)).toEqual([]);

  // Reached by its address, the new-campaign page says why there is no form.
  await page.goto(`${base}/console/#/new`);
  await page.getByTestId('read-only').getByText('A VIEWER key cannot create campaigns').waitFor();
  expect(await page.getByTestId('create-campaign').count()).toBe(0);

  await page.goto(`${base}/console/#/campaigns/${concertId}`);
  await page.getByTestId('latest').locator('tr').nth(2).waitFor();
  for (const testid of ['edit', 'close', 'open', 'test-copy', 'advance-clock', 'reset-test', 'load-section', 'codes']) expect(await page.getByTestId(testid).count()).toBe(0);
  expect(await page.getByTestId('latest').getByRole('button').count()).toBe(0);
  expect(await page.getByTestId('latest-section').locator('th').allTextContents()).toEqual(['#', 'Code', 'Holder', 'Partner', 'Status']);
  expect(await changeControls(page)).toEqual([]);
  // Reading still works: the search finds a holder's allocation, with nothing to release it by.
  await page.getByTestId('search-value').fill('fan-with-a-rather-long-holder-name-1');
  await page.getByTestId('search').click();
  await page.getByTestId('search-count').getByText('1 found').waitFor();
  expect(await page.getByTestId('search-results').getByRole('button').count()).toBe(0);
  await screenshot(page, 'views-viewer-campaign');

  for (const [hash, ready] of [['#/partners', "[data-testid='partners'] tr"], ['#/webhooks', 'h1'], [`#/partners/${partnerId}`, "[data-testid='rate-limit-text']"]] as const) {
    await page.goto(`${base}/console/${hash}`);
    await page.locator(ready).first().waitFor();
    await page.waitForTimeout(300);
    expect({ hash, controls: await changeControls(page) }).toEqual({ hash, controls: [] });
  }
  expect(await page.getByTestId('rate-limit-text').textContent()).toContain('the server default');
  expect(await page.getByTestId('scope-text').textContent()).toBe('Every campaign, including future ones.');
  await screenshot(page, 'views-viewer-partner');
  expect({ errors, outside }).toEqual({ errors: [], outside: [] });
  await page.context().close();
});

test('the audit log names the campaigns its entries acted on, linked, with the id beside the name, read in one request for the page', async () => {
  const other = await server.createCampaign({ name: 'Riverside matinee' });
  await server.gql(ADMIN_KEY, 'mutation($id: ID!) { updateCampaign(id: $id, input: { perHolderLimit: 2 }) { campaign { id } } }', { id: other });
  await server.gql(ADMIN_KEY, 'mutation($id: ID!, $p: ID!) { setPartnerQuota(campaignId: $id, partnerId: $p, quota: 5) { campaign { id } } }', { id: concertId, p: partnerId });
  const { page, errors } = await signedIn(ADMIN_KEY);
  const nameReads: string[] = [];
  page.on('request', (request) => {
    const body = request.postData() ?? '';
    if (request.url().endsWith('/graphql') && body.includes('campaign(id:')) nameReads.push(body);
  });
  await page.goto(`${base}/console/#/audit`);
  const updated = page.getByTestId('audit').locator('tr', { hasText: 'updateCampaign' });
  await updated.getByTestId('audit-campaign').getByRole('link', { name: 'Riverside matinee' }).waitFor();
  expect(await updated.getByRole('link', { name: 'Riverside matinee' }).getAttribute('title')).toBe(`Campaign id ${other}`);
  expect(await updated.getByTestId('audit-campaign-id').textContent()).toBe(other);
  const quota = page.getByTestId('audit').locator('tr', { hasText: 'setPartnerQuota' });
  expect(await quota.getByTestId('audit-campaign').getByRole('link').textContent()).toBe('Harbour concert');
  // Every campaign of the page in one request.
  expect(nameReads).toHaveLength(1);
  await screenshot(page, 'views-audit-campaign-names');
  // The name leads to the campaign.
  await updated.getByRole('link', { name: 'Riverside matinee' }).click();
  await page.locator('h1', { hasText: 'Riverside matinee' }).waitFor();
  expect(errors).toEqual([]);
  await page.context().close();
});

test("a drawn ballot's page leads with its ranking and has no Load tickets and no claims chart", async () => {
  const { page, errors } = await signedIn(ADMIN_KEY);
  await page.goto(`${base}/console/#/campaigns/${ballotId}`);
  await page.getByTestId('ballot-count').getByText('2 winners').waitFor();
  await page.getByTestId('ballot-entries').locator('tr').nth(2).waitFor();
  expect(await page.getByTestId('load-section').count()).toBe(0);
  expect(await page.getByTestId('timeline-section').count()).toBe(0);
  expect(await page.getByTestId('timeline-empty').count()).toBe(0);
  // The ranking comes first, then the figures.
  const order = await page.evaluate(() => {
    const ballot = document.querySelector("[data-testid='ballot']")!;
    const figures = document.querySelector("[data-testid='figures']")!;
    return ballot.compareDocumentPosition(figures) & Node.DOCUMENT_POSITION_FOLLOWING;
  });
  expect(order).toBeTruthy();
  await screenshot(page, 'views-ballot-drawn');
  // An open campaign still has both.
  await page.goto(`${base}/console/#/campaigns/${concertId}`);
  await page.getByTestId('load-section').waitFor();
  await page.getByTestId('timeline-section').waitFor();
  expect(errors).toEqual([]);
  await page.context().close();
});

test('at 390 px each latest allocation is a card whose Status and Release are on the screen, labelled, and nothing scrolls sideways', async () => {
  const { page, errors } = await signedIn(ADMIN_KEY, 390);
  await page.goto(`${base}/console/#/campaigns/${concertId}`);
  const section = page.getByTestId('latest-section');
  await section.locator('tbody tr').nth(2).waitFor();
  await section.scrollIntoViewIfNeeded();
  await screenshot(page, 'views-latest-allocations-390');
  const cells = await page.evaluate(() =>
    Array.from(document.querySelectorAll<HTMLElement>("[data-testid='latest'] td")).map((td) => {
      const box = td.getBoundingClientRect();
      const label = getComputedStyle(td, '::before').content;
      return { label: td.dataset.label ?? '', shown: label, right: box.right, left: box.left, visible: td.checkVisibility() };
    }),
  );
  const width = await page.evaluate(() => document.documentElement.clientWidth);
  for (const column of ['#', 'Code', 'Holder', 'Partner', 'Status', 'Release']) {
    const these = cells.filter((c) => c.label === column && c.visible);
    expect({ column, rows: these.length }).toEqual({ column, rows: 3 });
    for (const c of these) {
      expect(c.shown).toBe(`"${column}"`);
      expect(c.left).toBeGreaterThanOrEqual(0);
      expect(c.right).toBeLessThanOrEqual(width + 0.5);
    }
  }
  expect(await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth)).toBeLessThanOrEqual(0);
  // The Release button works from the card.
  await section.locator('tbody tr').first().getByRole('button', { name: /^Release / }).click();
  expect(await answer(page)).toContain('It goes back as the release policy says.');
  await section.locator('tbody tr').first().getByText('RELEASED').waitFor();
  // At 1280 px it is a table again, its headings on show.
  await page.setViewportSize({ width: 1280, height: 900 });
  expect(await section.locator('th', { hasText: 'Status' }).isVisible()).toBe(true);
  expect(errors).toEqual([]);
  await page.context().close();
});
