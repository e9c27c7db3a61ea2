// Issue 27, item 9, in Chromium, measured rather than eyeballed: at 1280 px the webhook deliveries
// and the audit log's arguments are whole on the screen (element boxes against the viewport and their
// scroll boxes, no sideways scroll); each audit filter's label stays with its field; at 390 px the
// campaign list shows Allocated and Total; the sign-in card is centred; placeholders fit their fields;
// forms keep apart from tables; every time on every page is in one format, seconds and zone included
// (in a browser set to Europe/Berlin); and a reload of the same codes says what happened.
/// <reference lib="dom" />
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, Page } from 'playwright-core';
import { ADMIN_KEY, CLAIM, startTestServer, type TestServer } from '../helpers/testServer';
import { until } from '../helpers/time';
import { consolePage, launch, screenshot, signInTo } from './browser';

let server: TestServer;
let browser: Browser;
let base: string;
let receiver: http.Server;
let stadiumId: string;
let waitlistId: string;
let ballotId: string;
let partnerId: string;
let endpointId: string;

/** Every console page, with what shows it is there. */
const PAGES = (): { name: string; hash: string; ready: string }[] => [
  { name: 'campaigns', hash: '#/campaigns', ready: 'table.campaigns tbody tr' },
  { name: 'new-campaign', hash: '#/new', ready: "[data-testid='create-campaign']" },
  { name: 'campaign', hash: `#/campaigns/${stadiumId}`, ready: "[data-testid='figure-allocated']" },
  { name: 'waitlist-campaign', hash: `#/campaigns/${waitlistId}`, ready: "[data-testid='waitlist'] tr" },
  { name: 'ballot-campaign', hash: `#/campaigns/${ballotId}`, ready: "[data-testid='ballot-entries'] tr" },
  { name: 'partners', hash: '#/partners', ready: "[data-testid='partners'] tr" },
  { name: 'partner', hash: `#/partners/${partnerId}`, ready: "[data-testid='terms'] tr" },
  { name: 'audit-log', hash: '#/audit', ready: "[data-testid='audit'] tr" },
  { name: 'webhooks', hash: '#/webhooks', ready: "[data-testid='webhooks'] tbody tr" },
  { name: 'webhook-deliveries', hash: `#/webhooks/${endpointId}`, ready: "[data-testid='deliveries'] tbody tr" },
  { name: 'operator-keys', hash: '#/operators', ready: "[data-testid='operator-keys'] tr" },
];

beforeAll(async () => {
  server = await startTestServer();
  base = server.url.replace(/\/graphql$/, '');
  browser = await launch();
  // A receiver that accepts every other delivery: DELIVERED rows (with "Send again" and a delivery
  // time) and PENDING ones (an error and a next attempt).
  let answered = 0;
  receiver = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      answered += 1;
      res.writeHead(answered % 2 ? 200 : 500).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  // A long URL: its createWebhook entry in the audit log has long arguments.
  const hookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks/${'a-rather-long-path-segment/'.repeat(6)}deliveries`;
  const hook = await server.gql(ADMIN_KEY, 'mutation($url: String!) { createWebhook(input: { url: $url, events: [ALLOCATION_CREATED, ALLOCATION_RELEASED, HOLD_CREATED, HOLD_CONFIRMED, CAMPAIGN_CLOSED] }) { endpoint { id } } }', { url: hookUrl });
  endpointId = hook.body.data!.createWebhook.endpoint.id;

  const partner = await server.createPartner('Box office');
  partnerId = partner.id;
  // A big campaign with a window, allocations, refusals and an allotment that lapses.
  const closesAt = new Date(Date.now() + 7 * 86_400_000).toISOString();
  stadiumId = await server.createCampaign({ name: 'Stadium', perHolderLimit: 1, closesAt });
  await server.gql(ADMIN_KEY, 'mutation($id: ID!) { generateTickets(campaignId: $id, count: 25000) { loaded } }', { id: stadiumId });
  await server.openCampaign(stadiumId);
  for (let i = 0; i < 8; i += 1) await server.gql(partner.apiKey, CLAIM, { input: { campaignId: stadiumId, holder: `fan-${i % 6}` } });
  const lapsesAt = new Date(Date.now() + 86_400_000).toISOString();
  const allotted = await server.gql(ADMIN_KEY, 'mutation($c: ID!, $p: ID!, $l: DateTime) { setPartnerAllotment(campaignId: $c, partnerId: $p, size: 5, lapsesAt: $l) { id } }', { c: stadiumId, p: partner.id, l: lapsesAt });
  expect(allotted.body.errors).toBeUndefined();

  // A waitlist with an offer out, on a sold-out campaign.
  waitlistId = await server.openCampaignWith(1, { name: 'Waitlist night', releasePolicy: 'WAITLIST_FIRST' });
  const claimed = await server.gql<{ claimTicket: { allocation: { id: string } } }>(partner.apiKey, CLAIM, { input: { campaignId: waitlistId, holder: 'first' } });
  for (const holder of ['ada', 'bob']) await server.gql(partner.apiKey, 'mutation($input: JoinWaitlistInput!) { joinWaitlist(input: $input) { entry { id } } }', { input: { campaignId: waitlistId, holder } });
  await server.gql(partner.apiKey, 'mutation($id: ID!) { releaseAllocation(allocationId: $id) { allocation { id } } }', { id: claimed.body.data!.claimTicket.allocation.id });

  // A drawn ballot whose winners hold their tickets.
  const entriesCloseAt = new Date(Date.now() + 86_400_000).toISOString();
  ballotId = await server.createCampaign({ name: 'Ballot drop', mode: 'BALLOT', entriesCloseAt });
  await server.loadTickets(ballotId, 2);
  await server.openCampaign(ballotId);
  for (const holder of ['cy', 'dee', 'eve']) await server.gql(partner.apiKey, 'mutation($input: EnterBallotInput!) { enterBallot(input: $input) { entry { id } } }', { input: { campaignId: ballotId, holder } });
  await server.gql(ADMIN_KEY, 'mutation($id: ID!) { drawBallot(campaignId: $id) { ballot { drawnAt } } }', { id: ballotId });

  // An operator key, used once (its "last used" is a time).
  const operator = await server.gql(ADMIN_KEY, 'mutation { createOperatorKey(input: { name: "night shift", role: OPERATOR }) { apiKey } }');
  await server.gql(operator.body.data!.createOperatorKey.apiKey, '{ viewer { role } }');

  // Every delivery tried once.
  await until(
    async () =>
      (await server.sql.query<{ n: number }>('SELECT count(*)::int AS n FROM webhook_deliveries WHERE endpoint_id = $1 AND attempts = 0', [endpointId])).rows[0]!.n === 0 &&
      (await server.sql.query<{ n: number }>("SELECT count(*)::int AS n FROM webhook_deliveries WHERE endpoint_id = $1 AND status = 'DELIVERED'", [endpointId])).rows[0]!.n > 0,
    { message: 'every delivery to have been tried', timeoutMs: 30_000, intervalMs: 200 },
  );
});
afterAll(async () => {
  await browser?.close();
  receiver?.closeAllConnections();
  await new Promise((resolve) => receiver?.close(resolve));
  await server?.stop();
});

async function signedIn(width: number, timezoneId?: string): Promise<{ page: Page; errors: string[]; outside: string[] }> {
  const opened = await consolePage(browser, base, { width, timezoneId });
  await signInTo(opened.page, base, ADMIN_KEY);
  return opened;
}

async function visit(page: Page, p: { hash: string; ready: string }): Promise<void> {
  await page.goto(`${base}/console/${p.hash}`);
  await page.locator(p.ready).first().waitFor({ timeout: 15_000 });
  await page.waitForTimeout(300); // late parts of the page (the chart, a second query)
}

/** How far the page scrolls sideways (0: not at all). */
const pageOverflow = (page: Page) => page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);

/**
 * Elements (by selector) not wholly visible: reaching past the viewport's right edge, or past the
 * right edge of a box around them that clips or scrolls, or clipping their own content.
 */
function hiddenParts(page: Page, selector: string): Promise<string[]> {
  return page.evaluate((sel) => {
    const problems: string[] = [];
    for (const el of Array.from(document.querySelectorAll<HTMLElement>(sel))) {
      if (!el.checkVisibility()) continue;
      const box = el.getBoundingClientRect();
      const name = `${sel} "${(el.textContent ?? '').trim().slice(0, 40)}"`;
      if (box.right > document.documentElement.clientWidth + 0.5) problems.push(`${name} ends at ${Math.round(box.right)} px, past the viewport's ${document.documentElement.clientWidth}`);
      if (el.scrollWidth > el.clientWidth + 1) problems.push(`${name} clips its content (${el.scrollWidth} > ${el.clientWidth} px)`);
      for (let up = el.parentElement; up; up = up.parentElement) {
        const overflow = getComputedStyle(up).overflowX;
        if (overflow === 'visible') continue;
        const outer = up.getBoundingClientRect();
        if (box.right > outer.right + 0.5 || box.left < outer.left - 0.5) problems.push(`${name} reaches outside its ${overflow} box (${Math.round(box.left)}–${Math.round(box.right)} in ${Math.round(outer.left)}–${Math.round(outer.right)})`);
        if (up.scrollWidth > up.clientWidth + 1) problems.push(`${name} sits in a box that scrolls sideways (${up.scrollWidth} > ${up.clientWidth} px)`);
      }
    }
    return problems;
  }, selector);
}

test("at 1280 px the webhook deliveries fit: the last column, every date and each \"Send again\" are fully visible, and nothing scrolls sideways", async () => {
  const { page, errors } = await signedIn(1280);
  await visit(page, { hash: `#/webhooks/${endpointId}`, ready: "[data-testid='deliveries'] tbody tr" });
  await screenshot(page, 'layout-webhook-deliveries-1280');
  expect(await page.getByRole('button', { name: 'Send again' }).count()).toBeGreaterThan(0);
  expect(await page.locator("[data-testid='deliveries'] tbody tr", { hasText: 'next' }).count()).toBeGreaterThan(0);
  const problems = [
    ...(await hiddenParts(page, "[data-testid='deliveries'] th:last-child")),
    ...(await hiddenParts(page, "[data-testid='deliveries'] td:last-child")),
    ...(await hiddenParts(page, "[data-testid='deliveries'] td time")),
    ...(await hiddenParts(page, "[data-testid='deliveries'] button")),
  ];
  expect(problems).toEqual([]);
  expect(await pageOverflow(page)).toBeLessThanOrEqual(0);
  expect(errors).toEqual([]);
  await page.context().close();
});

test("the audit log's arguments can be read whole at 1280 px, and each filter's label stays with its field at 1280 and 390 px", async () => {
  const entries = await server.gql<{ auditLog: { edges: { node: { arguments: unknown } }[] } }>(ADMIN_KEY, '{ auditLog(first: 50) { edges { node { arguments } } } }');
  const expected = entries.body.data!.auditLog.edges.map((e) => e.node.arguments);
  expect(expected.some((a) => JSON.stringify(a).length > 200)).toBe(true);
  for (const width of [1280, 390]) {
    const { page, errors } = await signedIn(width);
    await visit(page, { hash: '#/audit', ready: "[data-testid='audit'] tr" });
    // Each label sits beside its field on the same line, or just above it.
    const apart = await page.evaluate(() =>
      Array.from(document.querySelectorAll<HTMLLabelElement>('form.filters label[for]')).flatMap((label) => {
        const field = document.getElementById(label.htmlFor)!;
        const l = label.getBoundingClientRect();
        const f = field.getBoundingClientRect();
        const beside = Math.abs((l.top + l.bottom) / 2 - (f.top + f.bottom) / 2) < 12 && f.left - l.right >= 0 && f.left - l.right <= 24;
        const above = f.top - l.bottom >= -1 && f.top - l.bottom <= 12 && Math.abs(f.left - l.left) <= 4;
        return beside || above ? [] : [`"${label.textContent}" at (${Math.round(l.left)}, ${Math.round(l.top)}), its field at (${Math.round(f.left)}, ${Math.round(f.top)})`];
      }),
    );
    expect(apart).toEqual([]);
    if (width === 1280) {
      // Long arguments open from their summary; then every argument is on the screen, whole.
      for (const summary of await page.locator("[data-testid='audit'] td details > summary").all()) await summary.click();
      await screenshot(page, 'layout-audit-arguments-1280');
      expect(await hiddenParts(page, "[data-testid='audit-arguments']")).toEqual([]);
      const shown = await page.getByTestId('audit-arguments').allTextContents();
      expect(shown.map((text) => JSON.parse(text) as unknown)).toEqual(expected);
      expect(await pageOverflow(page)).toBeLessThanOrEqual(0);
    } else {
      await screenshot(page, 'layout-audit-390');
    }
    expect(errors).toEqual([]);
    await page.context().close();
  }
});

test('at 390 px the campaign list shows each campaign with its Allocated and Total', async () => {
  const { page, errors } = await signedIn(390);
  await visit(page, { hash: '#/campaigns', ready: `table.campaigns tbody tr` });
  await screenshot(page, 'layout-campaigns-390');
  const problems = [
    ...(await hiddenParts(page, 'table.campaigns th')),
    ...(await hiddenParts(page, 'table.campaigns td:nth-child(4)')),
    ...(await hiddenParts(page, 'table.campaigns td:nth-child(5)')),
  ];
  expect(problems).toEqual([]);
  expect(await page.locator('table.campaigns th').allTextContents()).toEqual(['Name', 'Status', 'Fill', 'Allocated', 'Total']);
  expect(await page.locator('table.campaigns tr', { hasText: 'Stadium' }).locator('td').nth(4).textContent()).toBe('25,000');
  expect(errors).toEqual([]);
  await page.context().close();
});

test('the sign-in card is centred at 1280 and 390 px', async () => {
  for (const width of [1280, 390]) {
    const { page } = await consolePage(browser, base, { width });
    await page.goto(`${base}/console/`);
    await page.getByTestId('key').waitFor();
    await screenshot(page, `layout-signin-${width}`);
    const offCentre = await page.evaluate(() => {
      const card = document.querySelector('form.signin')!.getBoundingClientRect();
      return Math.abs((card.left + card.right) / 2 - document.documentElement.clientWidth / 2);
    });
    expect(offCentre).toBeLessThanOrEqual(2);
    await page.context().close();
  }
});

test.each([1280, 390])('on every page at %i px: placeholders fit their fields, forms keep apart from tables, and tables fit at 1280', async (width) => {
  const { page, errors, outside } = await signedIn(width);
  const problems: string[] = [];
  for (const p of PAGES()) {
    await visit(page, p);
    await screenshot(page, `layout-${p.name}-${width}`);
    const found = await page.evaluate((checkTables) => {
      const out: string[] = [];
      const canvas = document.createElement('canvas').getContext('2d')!;
      // A placeholder wider than its field is cut ("server defau").
      for (const input of Array.from(document.querySelectorAll<HTMLInputElement>('main input[placeholder]'))) {
        if (!input.checkVisibility() || !input.placeholder) continue;
        const style = getComputedStyle(input);
        canvas.font = `${style.fontStyle} ${style.fontWeight} ${style.fontSize} ${style.fontFamily}`;
        const text = canvas.measureText(input.placeholder).width;
        const room = input.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight) - (input.type === 'number' ? 16 : 0);
        if (text > room) out.push(`the placeholder "${input.placeholder}" needs ${Math.ceil(text)} px, its field has ${Math.floor(room)}`);
      }
      // A form and a table one above the other keep at least 8 px apart.
      const forms = Array.from(document.querySelectorAll<HTMLElement>('main form')).filter((f) => f.checkVisibility());
      const tables = Array.from(document.querySelectorAll<HTMLElement>('main .scroll')).filter((t) => t.checkVisibility());
      for (const form of forms) {
        for (const box of tables) {
          if (form.contains(box) || box.contains(form)) continue;
          const f = form.getBoundingClientRect();
          const t = box.getBoundingClientRect();
          if (Math.min(f.right, t.right) - Math.max(f.left, t.left) <= 0) continue;
          const gap = Math.max(t.top - f.bottom, f.top - t.bottom);
          if (gap < 8) out.push(`a form and a table (${box.getAttribute('aria-label') ?? box.querySelector('th')?.textContent}) are ${Math.round(gap)} px apart`);
        }
      }
      // At 1280 px no table needs to scroll sideways.
      if (checkTables) {
        for (const box of tables) {
          if (box.scrollWidth > box.clientWidth + 1) out.push(`the table (${box.getAttribute('aria-label') ?? box.querySelector('th')?.textContent}) scrolls sideways: ${box.scrollWidth} > ${box.clientWidth} px`);
        }
      }
      if (document.documentElement.scrollWidth > document.documentElement.clientWidth) out.push(`the page scrolls sideways by ${document.documentElement.scrollWidth - document.documentElement.clientWidth} px`);
      return out;
    }, width >= 1280);
    problems.push(...found.map((f) => `${p.name}: ${f}`));
  }
  expect(problems).toEqual([]);
  expect(errors).toEqual([]);
  expect(outside).toEqual([]);
  await page.context().close();
});

test('every time on every page is in one format with seconds and its zone, in a browser set to Europe/Berlin; the chart and time inputs name the zone', async () => {
  const { page, errors } = await signedIn(1280, 'Europe/Berlin');
  const FORMAT = /^\d{1,2} (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4}, \d{2}:\d{2}:\d{2} (CET|CEST)$/;
  const problems: string[] = [];
  const seen = new Set<string>();
  for (const p of PAGES()) {
    await visit(page, p);
    const found = await page.evaluate(() => {
      const times = Array.from(document.querySelectorAll<HTMLElement>('main time')).filter((t) => t.checkVisibility()).map((t) => ({ text: t.textContent ?? '', datetime: t.getAttribute('datetime') }));
      // A clock time anywhere else (outside <time>, codes and fields) is a time without its zone.
      const bare: string[] = [];
      const walker = document.createTreeWalker(document.querySelector('main')!, NodeFilter.SHOW_TEXT);
      while (walker.nextNode()) {
        const node = walker.currentNode;
        const el = node.parentElement;
        if (!el || el.closest('time, code, pre, .code, select, option, textarea') || !el.checkVisibility()) continue;
        if (/\b\d{1,2}:\d{2}\b/.test(node.textContent ?? '')) bare.push((node.textContent ?? '').trim());
      }
      const zoneLabels = Array.from(document.querySelectorAll<HTMLInputElement>('main input[type="datetime-local"]'))
        .filter((i) => i.checkVisibility())
        .map((i) => document.querySelector(`label[for="${i.id}"]`)?.textContent ?? `(no label for #${i.id})`);
      return { times, bare, zoneLabels, chartZone: document.querySelector("[data-testid='timeline-zone']:not([hidden])")?.textContent ?? null };
    });
    for (const t of found.times) {
      seen.add(p.name);
      if (!FORMAT.test(t.text)) problems.push(`${p.name}: "${t.text}" is not in the one format`);
      if (!t.datetime) problems.push(`${p.name}: "${t.text}" has no datetime`);
    }
    for (const text of found.bare) problems.push(`${p.name}: a time without its zone: "${text}"`);
    for (const label of found.zoneLabels) if (!label.includes('Europe/Berlin')) problems.push(`${p.name}: the time field "${label}" does not name the zone`);
    if (p.name === 'campaign' && !found.chartZone?.includes('Europe/Berlin')) problems.push(`campaign: the chart does not name its zone (${found.chartZone})`);
  }
  expect(problems).toEqual([]);
  // The pages with times had them to check.
  expect([...seen].sort()).toEqual(['audit-log', 'ballot-campaign', 'campaign', 'operator-keys', 'partner', 'partners', 'waitlist-campaign', 'webhook-deliveries', 'webhooks']);
  expect(errors).toEqual([]);
  await page.context().close();
});

test('loading the same codes again says what happened: loaded 0 new tickets, every code a duplicate skipped', async () => {
  const id = await server.createCampaign({ name: 'Reload' });
  const { page, errors } = await signedIn(1280);
  // Each load sends the 20,000 codes in two loadTickets calls; the message is read once both answered.
  let answered = 0;
  page.on('response', (response) => {
    if (response.url().endsWith('/graphql') && response.request().postData()?.includes('loadTickets')) answered += 1;
  });
  const loadAndRead = async (calls: number) => {
    await page.getByTestId('codes-file').setInputFiles(file);
    await page.getByTestId('load').click();
    await until(() => answered >= calls, { message: `${calls} loadTickets answers`, timeoutMs: 30_000 });
    await page.waitForTimeout(300);
    return page.getByTestId('load-status').textContent();
  };
  const file = { name: 'codes.csv', mimeType: 'text/csv', buffer: Buffer.from(['code', ...Array.from({ length: 20_000 }, (_, i) => `R-${i + 1}`)].join('\n')) };
  await page.goto(`${base}/console/#/campaigns/${id}`);
  expect(await loadAndRead(2)).toBe('Done: loaded 20,000 new tickets, 0 duplicates skipped. The campaign has 20,000 tickets.');
  expect(await loadAndRead(4)).toBe('Done: loaded 0 new tickets, 20,000 duplicates skipped (already in the campaign, or repeated in the list). The campaign has 20,000 tickets.');
  await screenshot(page, 'layout-reload-1280');
  const stats = await server.gql(ADMIN_KEY, 'query($id: ID!) { campaign(id: $id) { stats { total } } }', { id });
  expect(stats.body.data!.campaign.stats.total).toBe(20_000);
  expect(errors).toEqual([]);
  await page.context().close();
});
