// The console for the whole job (issue 18), in Chromium: every page driven as an OWNER and as a
// VIEWER, at 1400 px and at 390 px, each page checked with axe-core (no serious or critical
// violation) and screenshotted; the first load's script measured against its budget with nothing
// leaving the machine; and the operator's work done through it — partners and their keys, operator
// keys, the audit log with filters, editing a campaign, finding, releasing and exporting
// allocations, and the claims-and-refusals chart.
/// <reference lib="dom" />
import { readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import type { Browser, Page } from 'playwright-core';
import { ADMIN_KEY, CLAIM, startTestServer, type TestServer } from '../helpers/testServer';
import { answer, launch, screenshot } from './browser';

const AXE = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
/** The first load of /console may bring at most this much script, gzipped. */
const SCRIPT_BUDGET_BYTES = 150 * 1024;

let server: TestServer;
let browser: Browser;
let base: string;
let viewerKey: string;
let campaignId: string;
let partnerId: string;
let endpointId: string;
const pageErrors: string[] = [];

beforeAll(async () => {
  server = await startTestServer({ config: { refusalFlushMs: 200 } });
  base = server.url.replace(/\/graphql$/, '');
  browser = await launch();
  const viewer = await server.gql(ADMIN_KEY, 'mutation { createOperatorKey(input: { name: "dashboard", role: VIEWER }) { apiKey } }');
  viewerKey = viewer.body.data!.createOperatorKey.apiKey;
  // A campaign with allocations, refusals and a big total (the axis labels must not clip).
  campaignId = await server.createCampaign({ name: 'Stadium', perHolderLimit: 1 });
  await server.gql(ADMIN_KEY, 'mutation($id: ID!) { generateTickets(campaignId: $id, count: 25000) { loaded } }', { id: campaignId });
  await server.openCampaign(campaignId);
  const partner = await server.createPartner('Box office');
  partnerId = partner.id;
  for (let i = 0; i < 30; i += 1) await server.gql(partner.apiKey, CLAIM, { input: { campaignId, holder: `fan-${i % 20}` } });
  // An operator endpoint nobody listens on: its deliveries page has rows or an empty state.
  const hook = await server.gql(ADMIN_KEY, 'mutation { createWebhook(input: { url: "http://127.0.0.1:9/hook", events: [CAMPAIGN_CLOSED] }) { endpoint { id } } }');
  endpointId = hook.body.data!.createWebhook.endpoint.id;
});
afterAll(async () => {
  await browser?.close();
  await server?.stop();
});

/** A page at `width` whose requests may only reach the server; `outside` collects any other. */
async function newPage(width: number): Promise<{ page: Page; outside: string[] }> {
  const page = await browser.newPage({ viewport: { width, height: 900 } });
  const outside: string[] = [];
  page.on('pageerror', (error) => pageErrors.push(String(error)));
  await page.route('**/*', (route) => {
    const url = route.request().url();
    if (url.startsWith(base) || url.startsWith(base.replace('http', 'ws')) || url.startsWith('blob:') || url.startsWith('data:')) return route.continue();
    outside.push(url);
    return route.abort();
  });
  return { page, outside };
}

async function signIn(page: Page, key: string): Promise<void> {
  await page.goto(`${base}/console/`);
  await page.getByTestId('key').fill(key);
  await page.getByTestId('sign-in').click();
  await page.locator('table.campaigns').waitFor();
}

/** axe-core on the page as it is: the serious and critical violations, with where. */
async function axeViolations(page: Page): Promise<string[]> {
  // Through the DevTools protocol, not a <script>: the console's CSP (script-src 'self') stays on.
  await page.evaluate(AXE);
  const violations = await page.evaluate(async () => {
    const axe = (window as unknown as { axe: { run(context: Document, options: unknown): Promise<{ passes: unknown[]; violations: { id: string; impact: string | null; nodes: { target: string[] }[] }[] }> } }).axe;
    const result = await axe.run(document, { resultTypes: ['violations'] });
    if (result.passes.length === 0) throw new Error('axe-core checked nothing');
    return result.violations.map((v) => ({ id: v.id, impact: v.impact, targets: v.nodes.slice(0, 3).map((n) => n.target.join(' ')) }));
  });
  return violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id} (${v.impact}) at ${v.targets.join(', ')}`);
}

/** Every page of the console, with what shows it is there. */
const PAGES = (): { name: string; hash: string; ready: string }[] => [
  { name: 'campaigns', hash: '#/campaigns', ready: 'table.campaigns' },
  // A VIEWER reaching it by its address is told it cannot create campaigns (no form).
  { name: 'new-campaign', hash: '#/new', ready: "[data-testid='create-campaign'], [data-testid='read-only']" },
  { name: 'campaign', hash: `#/campaigns/${campaignId}`, ready: "[data-testid='figure-allocated']" },
  { name: 'partners', hash: '#/partners', ready: "[data-testid='partners'] tr" },
  { name: 'partner', hash: `#/partners/${partnerId}`, ready: "[data-testid='terms'] tr" },
  { name: 'audit-log', hash: '#/audit', ready: "[data-testid='audit'] tr" },
  { name: 'webhooks', hash: '#/webhooks', ready: "[data-testid='webhooks'] tbody tr" },
  { name: 'webhook-deliveries', hash: `#/webhooks/${endpointId}`, ready: "[data-testid='deliveries-empty']:not([hidden]), [data-testid='deliveries'] tbody tr" },
  { name: 'operator-keys', hash: '#/operators', ready: "[data-testid='operator-keys'] tr" },
];

describe.each([
  ['OWNER', () => ADMIN_KEY],
  ['VIEWER', () => viewerKey],
])('every console page as %s', (role, key) => {
  test.each([1400, 390])('at %i px: no serious or critical accessibility violation, nothing from outside, nothing wider than the screen, controls as the role allows', async (width) => {
    const { page, outside } = await newPage(width);
    const problems: string[] = [];
    // The sign-in page first.
    await page.goto(`${base}/console/`);
    await page.getByTestId('key').waitFor();
    for (const v of await axeViolations(page)) problems.push(`sign-in: ${v}`);
    await screenshot(page, `console-signin-${width}`);
    await signIn(page, key());
    for (const p of PAGES()) {
      await page.goto(`${base}/console/${p.hash}`);
      await page.locator(p.ready).first().waitFor({ timeout: 15_000 });
      await page.waitForTimeout(300); // late parts of the page (the chart, a second query)
      await screenshot(page, `console-${role.toLowerCase()}-${p.name}-${width}`);
      for (const v of await axeViolations(page)) problems.push(`${p.name}: ${v}`);
      // Nothing is wider than the screen but what scrolls in its own box.
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
      if (overflow > 2) problems.push(`${p.name}: the page is ${overflow} px wider than the screen`);
      if (role === 'VIEWER') {
        // No control that changes something is shown (the banner says why once); any disabled one says why.
        const enabled = await page.evaluate(() =>
          Array.from(document.querySelectorAll('main button, main input, main select, main textarea'))
            .filter((el) => !(el as HTMLInputElement).disabled)
            .filter((el) => !el.closest('[role="search"]') && !(el as HTMLElement).hasAttribute('data-read') && !(el as HTMLElement).dataset.testid?.endsWith('-copy') && !(el as HTMLInputElement).readOnly)
            .map((el) => (el as HTMLElement).dataset.testid ?? el.outerHTML.slice(0, 80)),
        );
        if (enabled.length) problems.push(`${p.name}: enabled controls for a VIEWER: ${enabled.join(', ')}`);
        await page.getByTestId('read-only-banner').waitFor();
        const disabled = page.locator('main button:disabled').first();
        if ((await disabled.count()) > 0) expect(await disabled.getAttribute('title')).toMatch(/VIEWER|OWNER/);
      }
    }
    expect(problems).toEqual([]);
    expect(outside).toEqual([]);
    expect(pageErrors).toEqual([]);
    await page.context().close();
  });
});

test('the first load of /console stays within its script budget, with every request to this server', async () => {
  const { page, outside } = await newPage(1400);
  const scripts: string[] = [];
  page.on('response', (response) => {
    if (response.request().resourceType() === 'script') scripts.push(response.url());
  });
  await page.goto(`${base}/console/`);
  await page.getByTestId('key').waitFor();
  let gzipped = 0;
  for (const url of scripts) gzipped += gzipSync(Buffer.from(await (await fetch(url)).arrayBuffer())).length;
  expect(scripts.length).toBeGreaterThan(0);
  expect(gzipped).toBeLessThanOrEqual(SCRIPT_BUDGET_BYTES);
  expect(outside).toEqual([]);
  console.log(`console first load: ${scripts.length} script(s), ${(gzipped / 1024).toFixed(1)} KB gzipped (budget ${SCRIPT_BUDGET_BYTES / 1024} KB)`);
  await page.context().close();
});

test('an OWNER manages partners and operator keys, edits a campaign, finds, releases and exports allocations, and reads the audit log', async () => {
  const { page } = await newPage(1400);
  await signIn(page, ADMIN_KEY);
  await page.getByTestId('live-indicator').getByText('Live').waitFor();
  expect(await page.getByTestId('role').textContent()).toBe('OWNER');

  // A partner: its key shown once with a copy button; it works.
  await page.goto(`${base}/console/#/partners`);
  await page.getByTestId('partner-name').fill('Resale desk');
  await page.getByTestId('create-partner').click();
  const key = await page.getByTestId('api-key').inputValue();
  expect(key).toMatch(/^tsp_/);
  expect((await server.gql(key, '{ viewer { partner { name } } }')).body.data!.viewer.partner.name).toBe('Resale desk');
  await page.getByTestId('partners').getByRole('link', { name: 'Resale desk' }).click();
  // Rotate: a new key; the old one stops working. Scope, rate limit, quota and allotment.
  await page.getByTestId('rotate').click();
  expect(await answer(page)).toBe('Give Resale desk a new key? The current one stops working at once.');
  await page.getByTestId('key-once').waitFor();
  const rotated = await page.getByTestId('api-key').inputValue();
  expect(rotated).not.toBe(key);
  expect((await server.gql(key, '{ viewer { role } }')).status).toBe(401);
  await page.getByTestId('rate-limit').fill('50');
  await page.getByTestId('save-rate-limit').click();
  await page.getByText('Saved.').first().waitFor();
  await page.getByTestId('scope-every').uncheck();
  await page.getByTestId('scope-campaigns').getByLabel('Stadium').check();
  await page.getByTestId('save-scope').click();
  await page.getByText('the key can use 1 campaign').waitFor();
  await page.getByTestId('terms-campaign').selectOption({ label: 'Stadium' });
  await page.getByTestId('quota').fill('7');
  await page.getByTestId('save-quota').click();
  await page.getByTestId('terms').getByText('Stadium').waitFor();
  const partner = (await server.sql.query("SELECT id, rate_limit, scoped, campaign_scope::text[] AS scope FROM partners WHERE name = 'Resale desk'")).rows[0];
  expect(partner).toMatchObject({ rate_limit: 50, scoped: true, scope: [campaignId] });
  await screenshot(page, 'console-owner-partner-managed-1400');

  // An operator key, then its revocation.
  await page.goto(`${base}/console/#/operators`);
  await page.getByTestId('operator-name').fill('night shift');
  await page.getByTestId('operator-role').selectOption('OPERATOR');
  await page.getByTestId('create-operator-key').click();
  const operatorKey = await page.getByTestId('api-key').inputValue();
  expect((await server.gql(operatorKey, '{ viewer { role } }')).body.data!.viewer.role).toBe('OPERATOR');
  const row = page.getByTestId('operator-keys').locator('tr', { hasText: 'night shift' });
  await row.getByRole('button', { name: 'Revoke' }).click();
  // The in-page question passes axe-core as the pages do.
  await page.getByRole('alertdialog').waitFor();
  expect(await axeViolations(page)).toEqual([]);
  await answer(page);
  await row.getByText('revoked').waitFor();
  expect((await server.gql(operatorKey, '{ viewer { role } }')).status).toBe(401);

  // The campaign: id copyable, edited, allocations found, released, exported; the chart has refusals.
  await page.goto(`${base}/console/#/campaigns/${campaignId}`);
  expect(await page.getByTestId('campaign-id').inputValue()).toBe(campaignId);
  await page.getByTestId('edit').click();
  await page.getByTestId('edit-name').fill('Stadium (evening)');
  await page.getByTestId('save').click();
  await page.locator('h1', { hasText: 'Stadium (evening)' }).waitFor();
  await page.getByTestId('search-value').fill('fan-3');
  await page.getByTestId('search').click();
  await page.getByTestId('search-count').getByText('1 found').waitFor();
  await page.getByTestId('search-results').getByRole('button', { name: 'Release' }).click();
  expect(await answer(page)).toMatch(/^Release ticket \S+ of fan-3\?$/);
  await page.getByTestId('search-results').getByText('RELEASED').waitFor();
  const download = page.waitForEvent('download');
  await page.getByTestId('export').click();
  const csv = readFileSync((await (await download).path())!, 'utf8').trim().split('\n');
  expect(csv[0]).toMatch(/^sequence,allocation_id,ticket_code,holder/);
  expect(csv).toHaveLength(1 + 20);
  // 30 claims for 20 holders with a per-holder limit of 1: 10 refusals, on the chart's data.
  const timeline = await server.gql(ADMIN_KEY, 'query($id: ID!) { campaign(id: $id) { timeline(bucket: DAY) { refused } } }', { id: campaignId });
  expect(timeline.body.data!.campaign.timeline[0].refused).toBe(10);
  // The axis labels of a 25,000-ticket campaign are whole ("25,000"), not clipped.
  await page.getByTestId('timeline').locator('canvas').waitFor();
  expect(await page.getByTestId('timeline').textContent()).not.toContain('Value');
  await screenshot(page, 'console-owner-campaign-worked-1400');

  // The audit log names the console's changes, and filters them.
  await page.goto(`${base}/console/#/audit`);
  await page.getByTestId('filter-operation').fill('scopePartnerKey');
  await page.getByTestId('filter').click();
  await page.getByTestId('audit-count').getByText('1 entry').waitFor();
  await page.getByTestId('audit').getByText('scopePartnerKey').waitFor();
  await page.getByTestId('filter-operation').fill('');
  await page.getByTestId('filter-outcome').fill('OK');
  await page.getByTestId('filter-actor').fill('admin');
  await page.getByTestId('filter').click();
  await page.getByTestId('audit').getByText('updateCampaign').waitFor();
  expect(pageErrors).toEqual([]);
  await page.context().close();
});

test('a bad key is refused at sign-in in words, and a partner key is told it needs an operator key', async () => {
  const { page } = await newPage(390);
  await page.goto(`${base}/console/`);
  await page.getByTestId('key').fill('tso_000000000000_' + 'A'.repeat(43));
  await page.getByTestId('sign-in').click();
  await page.getByRole('alert').getByText('This key was not accepted').waitFor();
  const partner = await server.createPartner('not an operator');
  await page.getByTestId('key').fill(partner.apiKey);
  await page.getByTestId('sign-in').click();
  await page.getByRole('alert').getByText('needs an operator key').waitFor();
  await screenshot(page, 'console-signin-refused-390');
  await page.context().close();
});
