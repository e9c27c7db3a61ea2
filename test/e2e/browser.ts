// Chromium for the browser tests: the system's (Debian package `chromium`, installed by .ci/run),
// driven by playwright-core — Playwright's own browser download cannot work on a closed network.
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';

export const SCREENSHOTS = path.resolve(__dirname, '../../test-results/screenshots');

export async function launch(): Promise<Browser> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  return chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    headless: true,
    // As root, without a GPU, on a machine whose network only reaches localhost: no sandbox, and
    // none of the background connections Chromium would otherwise keep trying.
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

export async function screenshot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: true });
}

/**
 * A console page at `width` (and optionally in another time zone) whose requests may only reach
 * the server at `base`: `outside` collects any other (aborted), `errors` the page's uncaught errors.
 */
export async function consolePage(
  browser: Browser,
  base: string,
  options: { width: number; height?: number; timezoneId?: string },
): Promise<{ page: Page; outside: string[]; errors: string[] }> {
  const context = await browser.newContext({ viewport: { width: options.width, height: options.height ?? 900 }, timezoneId: options.timezoneId });
  // Done with it: `await page.context().close()`, which closes the page too. (Closing the context
  // from the page's 'close' event raced page.close() itself: in one CI run every test of a file
  // failed at its end with "Target page, context or browser has been closed".)
  const page = await context.newPage();
  const outside: string[] = [];
  const errors: string[] = [];
  page.on('pageerror', (error) => errors.push(String(error)));
  await page.route('**/*', (route) => {
    const url = route.request().url();
    if (url.startsWith(base) || url.startsWith(base.replace('http', 'ws')) || url.startsWith('blob:') || url.startsWith('data:')) return route.continue();
    outside.push(url);
    return route.abort();
  });
  return { page, outside, errors };
}

/** Signs in to the console with `key` and waits for the campaigns list. */
export async function signInTo(page: Page, base: string, key: string): Promise<void> {
  await page.goto(`${base}/console/`);
  await page.getByTestId('key').fill(key);
  await page.getByTestId('sign-in').click();
  await page.locator('table.campaigns').waitFor();
}

/**
 * Answers the console's in-page question (ui.ts ask(): a modal dialog with role alertdialog) with
 * its named button, or Cancel, and waits for it to go; returns the question.
 */
export async function answer(page: Page, yes = true): Promise<string> {
  const dialog = page.getByRole('alertdialog');
  await dialog.waitFor();
  const question = (await dialog.locator('p').textContent()) ?? '';
  await dialog.getByTestId(yes ? 'confirm-yes' : 'confirm-no').click();
  await dialog.waitFor({ state: 'detached' });
  return question;
}
