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
