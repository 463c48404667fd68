import puppeteer, { type Browser, type Page } from 'puppeteer-core';
import t, { type Test } from 'tap';
import { call, issueKey, startTestServer } from './helpers/gatehouse.ts';
import { bundledEngine } from './helpers/policies.ts';

// The console in Debian's Firefox ESR, driven over WebDriver BiDi by puppeteer-core (no browser
// is downloaded): the console is plain ES modules with no build step, so what Chromium runs
// (test/console.test.ts) must run unchanged in Firefox. A decision created through the API
// appears live, a second reviewer approves it in a separate profile, the first executes it, and
// the policy's Rego is shown; attacker-supplied text stays text.

t.setTimeout(300_000);
const FIREFOX = process.env.FIREFOX_PATH ?? '/usr/bin/firefox-esr';
const engine = await bundledEngine();
t.teardown(() => engine.close());

const REVIEWER = ['decisions:read', 'decisions:write', 'decisions:approve', 'decisions:execute', 'stream:subscribe', 'impact:read'];

async function launchFirefox(t: Test): Promise<Browser> {
  const browser = await puppeteer.launch({ browser: 'firefox', executablePath: FIREFOX, headless: true, timeout: 60_000 });
  t.teardown(() => browser.close());
  return browser;
}

/** A page in a fresh profile-like context; page errors are collected in `errors`. */
async function freshPage(browser: Browser): Promise<{ page: Page; errors: string[] }> {
  const context = await browser.createBrowserContext();
  const page = await context.newPage();
  page.setDefaultTimeout(15_000);
  const errors: string[] = [];
  page.on('pageerror', (error) => errors.push(String((error as Error).message ?? error)));
  return { page, errors };
}

/** Waits until an element matching `selector` has text matching `text`, and returns that text. */
async function textOf(page: Page, selector: string, text: RegExp): Promise<string> {
  const handle = await page.waitForFunction(
    (sel, source, flags) => {
      const pattern = new RegExp(source, flags);
      return [...document.querySelectorAll<HTMLElement>(sel)].map((e) => e.innerText).find((s) => pattern.test(s));
    },
    {},
    selector,
    text.source,
    text.flags,
  );
  return (await handle.jsonValue()) as string;
}

async function signIn(page: Page, url: string, key: string): Promise<void> {
  await page.goto(`${url}/console`);
  await page.locator('#key').fill(key);
  await page.locator('form button[type="submit"]').click();
  await textOf(page, 'h1', /^Inbox$/);
}

/** Clicks the enabled action button `action` (approve, execute, …) of a decision page. */
async function act(page: Page, action: string): Promise<void> {
  await page.waitForSelector(`button.action-${action}:not([disabled])`);
  await page.click(`button.action-${action}`);
}

t.test('in Firefox: a decision appears live, is approved by a second reviewer and executed', async (t) => {
  const { url, admin } = await startTestServer(t, { policies: engine });
  const alice = await issueKey(url, admin, { env: 'sandbox', scopes: REVIEWER, name: 'alice' });
  const bob = await issueKey(url, admin, { env: 'sandbox', scopes: REVIEWER, name: 'bob' });
  const browser = await launchFirefox(t);
  t.match(await browser.version(), /^firefox\//i, 'the browser is Firefox');

  const first = await freshPage(browser);
  await signIn(first.page, url, alice.key);
  await textOf(first.page, '.live', /^Live$/);
  t.equal(await first.page.evaluate(() => document.cookie), '', 'page script cannot read the session');

  const title = 'Deploy <script>window.__pwned = 1</script> to production';
  const created = await call(url, 'POST', '/v1/decisions', {
    key: alice.key,
    body: { title, policy: 'decision-gate-v1', context: [{ source: 'risk:score', value: 82 }] },
  });
  t.equal(created.status, 200, created.text);
  const id = created.json.id as string;
  t.match(await textOf(first.page, `li[data-id="${id}"]`, /human_approval:approve/), title, 'the decision created through the API appeared without a reload, its title as text');

  const second = await freshPage(browser);
  await signIn(second.page, url, bob.key);
  await second.page.goto(`${url}/console#/decisions/${id}`);
  await textOf(second.page, 'h1', /^Deploy/);
  await second.page.locator('#comment').fill('checked the rollout plan');
  await act(second.page, 'approve');
  await textOf(second.page, '[role="status"]', /Approved\. Status: approved\./);

  await first.page.click(`li[data-id="${id}"] a`);
  await textOf(first.page, '.facts .status', /^approved$/);
  await act(first.page, 'execute');
  await textOf(first.page, '[role="status"]', /Executed\. Status: executed\./);
  t.equal(await first.page.evaluate(() => (window as { __pwned?: number }).__pwned), undefined, 'no script from the title ran');

  const stored = await call(url, 'GET', `/v1/decisions/${id}`, { key: bob.key });
  t.match(stored.json, { status: 'executed', approvals: [{ keyId: bob.id, comment: 'checked the rollout plan' }] }, 'executed, as the API confirms');

  await first.page.click('a[href="#/policies/decision-gate-v1"]');
  t.match(await textOf(first.page, 'pre.source', /package gatehouse\.decision_gate\.v1/), /default gate := "auto"/, "the policy's Rego");
  t.same(first.errors, [], 'no script errors');
  t.same(second.errors, [], 'no script errors for the second reviewer');
});
