import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';

/**
 * Debian's Chromium driven by playwright-core: no browser is downloaded. Each test gets its own
 * browser, closed by its teardown, and each reviewer a fresh context (its own cookies and
 * storage, as a separate browser profile would have).
 */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

interface Teardown {
  teardown(fn: () => unknown): void;
}

/** `extraArgs`: more Chromium switches, for a test whose pages need them. */
export async function launchBrowser(t: Teardown, extraArgs: string[] = []): Promise<Browser> {
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: [...ARGS, ...extraArgs], timeout: 30_000 });
  t.teardown(() => browser.close());
  return browser;
}

/** A page in a fresh context; what the page logs as an error or throws is collected in `errors`. */
export async function freshPage(browser: Browser, options: { viewport?: { width: number; height: number } } = {}): Promise<{ context: BrowserContext; page: Page; errors: string[] }> {
  const context = await browser.newContext(options.viewport ? { viewport: options.viewport } : {});
  const page = await context.newPage();
  page.setDefaultTimeout(10_000);
  const errors: string[] = [];
  page.on('pageerror', (error) => errors.push(error.message));
  return { context, page, errors };
}

/** Opens the console and signs in with `key` through its form. */
export async function signIn(page: Page, url: string, key: string): Promise<void> {
  await page.goto(`${url}/console`);
  await page.getByLabel('API key').fill(key);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Inbox', level: 1 }).waitFor();
}
