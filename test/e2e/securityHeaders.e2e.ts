// In a real browser, under the Content-Security-Policy of src/securityHeaders.ts: GraphiQL loads,
// runs a query and opens its dialogs, and the console signs in, loads a campaign and follows it live
// over graphql-ws — with no CSP violation reported. The policy is enforced (an injected inline script
// does not run) and neither page can be framed.
/// <reference lib="dom" />
import type { Browser, Page } from 'playwright-core';
import { ADMIN_KEY, CLAIM, startTestServer, type TestServer } from '../helpers/testServer';
import { until } from '../helpers/time';
import { answer, launch, screenshot } from './browser';

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

interface WatchedPage {
  page: Page;
  /** Every CSP violation: the page's securitypolicyviolation events and Chromium's console reports. */
  violations(): Promise<string[]>;
  pageErrors: string[];
}

async function watchedPage(): Promise<WatchedPage> {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const reported: string[] = [];
  const pageErrors: string[] = [];
  page.on('console', (message) => {
    if (/Content Security Policy/i.test(message.text())) reported.push(message.text());
  });
  page.on('pageerror', (error) => pageErrors.push(String(error)));
  await page.addInitScript(() => {
    const seen: string[] = [];
    (window as unknown as { __cspViolations: string[] }).__cspViolations = seen;
    document.addEventListener('securitypolicyviolation', (e) => seen.push(`${e.effectiveDirective} ${e.blockedURI} ${e.sample}`));
  });
  const violations = async () => [...reported, ...(await page.evaluate(() => (window as unknown as { __cspViolations: string[] }).__cspViolations))];
  return { page, violations, pageErrors };
}

test('GraphiQL runs a query and opens its dialogs under the policy, with no violation', async () => {
  const { page, violations, pageErrors } = await watchedPage();
  const response = await page.goto(`${base}/graphql#admin-key=${encodeURIComponent(ADMIN_KEY)}`);
  const csp = response!.headers()['content-security-policy']!;
  expect(csp).toMatch(/script-src 'self' 'sha256-[A-Za-z0-9+/]+=*'(;|$)/);
  expect(csp).not.toContain('unsafe-inline');
  await page.locator('.graphiql-execute-button').click();
  await page.locator('.result-window').getByText('"campaigns"').waitFor({ timeout: 15_000 });
  // The dialogs add <style> elements (react-remove-scroll-bar): allowed by the page's nonce.
  for (const dialog of ['Open settings dialog', 'Open short keys dialog']) {
    await page.getByLabel(dialog).click();
    await page.getByRole('dialog').waitFor();
    await page.keyboard.press('Escape');
    await page.getByRole('dialog').waitFor({ state: 'detached' });
  }
  await page.getByLabel('Show Documentation Explorer').click();
  await page.locator('.graphiql-doc-explorer').getByText('Query', { exact: true }).first().waitFor();
  await screenshot(page, 'graphiql-csp');
  expect(await violations()).toEqual([]);
  expect(pageErrors).toEqual([]);

  // The policy is enforced: an inline script without the hash does not run, and is reported.
  await page.evaluate(() => {
    const script = document.createElement('script');
    script.textContent = 'window.__injected = true;';
    document.body.append(script);
  });
  expect(await page.evaluate(() => (window as unknown as { __injected?: boolean }).__injected)).toBeUndefined();
  await until(async () => (await violations()).some((v) => /^script-src-elem inline/.test(v)), { message: 'the injected script to be reported as a violation' });
  await page.context().close();
});

test('the console signs in, loads and opens a campaign and follows it live over graphql-ws, with no violation', async () => {
  const { page, violations, pageErrors } = await watchedPage();
  const sockets: string[] = [];
  page.on('websocket', (ws) => sockets.push(ws.url()));
  await page.goto(`${base}/console/`);
  await page.getByTestId('key').fill(ADMIN_KEY);
  await page.getByTestId('sign-in').click();
  await page.locator('table.campaigns').waitFor();
  await page.goto(`${base}/console/#/new`);
  await page.getByTestId('campaign-name').fill('CSP concert');
  await page.getByTestId('create-campaign').click();
  await page.getByTestId('status').getByText('DRAFT').waitFor();
  const campaignId = /#\/campaigns\/([0-9a-f-]{36})/.exec(page.url())![1]!;
  await page.getByTestId('codes').fill(Array.from({ length: 40 }, (_, i) => `CSP-${i + 1}`).join('\n'));
  await page.getByTestId('load').click();
  await page.getByTestId('load-status').getByText('loaded 40 new tickets').waitFor();
  await page.getByTestId('open').click();
  await answer(page);
  await page.getByTestId('status').getByText('OPEN').waitFor();

  const partner = await server.createPartner('CSP box office');
  await Promise.all(Array.from({ length: 10 }, (_, i) => server.gql(partner.apiKey, CLAIM, { input: { campaignId, holder: `csp-${i}` } })));
  await page.waitForFunction(() => document.querySelector("[data-testid='live-bar'] .fill")?.getAttribute('data-allocated') === '10', undefined, { timeout: 10_000 });
  // The fill bar's width is a style attribute: allowed (style-src-attr), so it is drawn.
  const width = await page.locator("[data-testid='live-bar'] .fill-allocated").evaluate((el) => el.getBoundingClientRect().width);
  const full = await page.locator("[data-testid='live-bar'] .fill").evaluate((el) => el.getBoundingClientRect().width);
  expect(width / full).toBeCloseTo(0.25, 1);
  expect(sockets).toEqual([`${base.replace('http', 'ws')}/graphql`]);
  await screenshot(page, 'console-csp');
  expect(await violations()).toEqual([]);
  expect(pageErrors).toEqual([]);
  await page.context().close();
});

test('neither GraphiQL nor the console can be framed by another page', async () => {
  const { page } = await watchedPage();
  // The framing page is another origin (localhost, not 127.0.0.1), served by the test itself.
  const framer = base.replace('127.0.0.1', 'localhost');
  await page.route(`${framer}/framer`, (route) =>
    route.fulfill({ contentType: 'text/html', body: `<iframe id="g" src="${base}/graphql"></iframe><iframe id="c" src="${base}/console/"></iframe>` }),
  );
  await page.goto(`${framer}/framer`);
  for (const id of ['g', 'c']) {
    const frame = await (await page.locator(`#${id}`).elementHandle())!.contentFrame();
    await until(() => /^chrome-error:/.test(frame!.url()), { message: `the framed page #${id} to be refused (its frame shows ${frame!.url()})` });
  }
  await page.context().close();
});
