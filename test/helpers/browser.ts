import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { expect } from 'vitest';
import { CHROMIUM_PATH } from './chromium.ts';

// Headless Chromium (Debian's package, installed by the test global setup) driven by playwright-core.
// Every page is watched for script errors, Content-Security-Policy violations and requests to any
// origin but the service's own (aborted and recorded).

export const launchChromium = (): Promise<Browser> => chromium.launch({ executablePath: CHROMIUM_PATH, headless: true });

export type ConsolePage = { context: BrowserContext; page: Page; problems: string[]; foreign: string[] };

export async function openConsole(browser: Browser, baseUrl: string): Promise<ConsolePage> {
  const context = await browser.newContext({ baseURL: baseUrl, viewport: { width: 1280, height: 860 }, locale: 'en-GB', timezoneId: 'UTC' });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: baseUrl });
  const problems: string[] = [];
  const foreign: string[] = [];
  const origin = new URL(baseUrl).origin;
  await context.route('**/*', async (route) => {
    const url = route.request().url();
    if (new URL(url).origin === origin) return route.continue();
    foreign.push(url);
    return route.abort();
  });
  const page = await context.newPage();
  page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
  page.on('console', (m) => {
    // A 4xx answer the page handles is logged by Chromium as "Failed to load resource"; anything else
    // at error level (CSP refusals included) is a problem.
    if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) problems.push(`console: ${m.text()}`);
  });
  page.on('dialog', (d) => void d.accept());
  return { context, page, problems, foreign };
}

/** Signs in through the console's form, with the keyboard. */
export async function signInThroughConsole(page: Page, account: { email: string; password: string }, at = '/') {
  await page.goto(at);
  await page.getByLabel('Email').fill(account.email);
  await page.getByLabel('Password').fill(account.password);
  await page.getByLabel('Password').press('Enter');
  await expect.poll(() => page.getByRole('navigation', { name: 'Console' }).isVisible().catch(() => false), { timeout: 10_000 }).toBe(true);
}

/** `npm run screenshots` sets SCREENSHOTS_DIR; normal runs take none. */
export async function screenshot(page: Page, name: string) {
  const dir = process.env.SCREENSHOTS_DIR;
  if (!dir) return;
  await mkdir(dir, { recursive: true });
  await page.screenshot({ path: path.join(dir, `${name}.png`), fullPage: true, animations: 'disabled', caret: 'hide' });
}
