import { createRequire } from 'node:module';
import type { Page } from 'playwright-core';
import t from 'tap';
import { call, issueKey, startTestServer } from './helpers/gatehouse.ts';
import { bundledEngine } from './helpers/policies.ts';
import { launchBrowser, signIn } from './helpers/browser.ts';

// The console checked for accessibility in a real Chromium: axe-core's WCAG 2.1 A and AA rules
// (labels, names, roles, landmarks, colour contrast, …) on every page, at desktop and phone
// sizes, and a decision approved with the keyboard alone.

t.setTimeout(300_000);
const engine = await bundledEngine();
t.teardown(() => engine.close());

const AXE = createRequire(import.meta.url).resolve('axe-core/axe.min.js');
const REVIEWER = ['decisions:read', 'decisions:write', 'decisions:approve', 'decisions:execute', 'stream:subscribe', 'impact:read'];

interface Violation {
  id: string;
  help: string;
  nodes: Array<{ target: string[] }>;
}

/** axe-core's WCAG 2.1 A/AA violations on the page as it is now, one line each. */
async function violations(page: Page): Promise<string[]> {
  await page.addScriptTag({ path: AXE });
  const found = await page.evaluate(async () => {
    const axe = (window as unknown as { axe: { run(context: Document, options: object): Promise<{ violations: Violation[] }> } }).axe;
    const result = await axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] } });
    return result.violations.map((v) => ({ id: v.id, help: v.help, nodes: v.nodes.map((n) => ({ target: n.target })) }));
  });
  return found.map((v) => `${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).join(', ')})`);
}

t.test('every page passes axe-core WCAG 2.1 AA, on a desktop and on a phone', async (t) => {
  const { url, admin } = await startTestServer(t, { policies: engine });
  const alice = await issueKey(url, admin, { env: 'sandbox', scopes: REVIEWER, name: 'alice' });
  const created = await call(url, 'POST', '/v1/decisions', {
    key: alice.key,
    body: { title: 'Open the firewall', policy: 'decision-gate-v1', context: [{ source: 'risk:score', value: 95 }] },
  });
  t.equal(created.status, 200, created.text);
  const id = created.json.id as string;
  const browser = await launchBrowser(t);
  for (const viewport of [
    { width: 1280, height: 800 },
    { width: 390, height: 844 },
  ]) {
    // axe is injected as a script of its own, which the console's CSP would refuse: this context
    // alone bypasses it (test/console.test.ts checks the CSP holds).
    const context = await browser.newContext({ viewport, bypassCSP: true });
    const page = await context.newPage();
    page.setDefaultTimeout(10_000);
    await page.goto(`${url}/console`);
    await page.getByRole('button', { name: 'Sign in' }).waitFor();
    t.same(await violations(page), [], `the sign-in page, ${viewport.width} px wide`);
    await signIn(page, url, alice.key);
    const pages: Array<[string, string, () => Promise<unknown>]> = [
      ['#/', 'the inbox', () => page.getByRole('link', { name: 'Open the firewall' }).waitFor()],
      [`#/decisions/${id}`, 'a decision', () => page.getByRole('heading', { name: 'Impact trace' }).waitFor()],
      ['#/audit', 'audit and policies', () => page.getByRole('link', { name: 'spend-approval-v1' }).waitFor()],
      ['#/policies/decision-gate-v1', "a policy's page", () => page.getByLabel('Rego source decision-gate-v1.rego').waitFor()],
    ];
    for (const [hash, name, ready] of pages) {
      await page.goto(`${url}/console${hash}`);
      await ready();
      t.same(await violations(page), [], `${name}, ${viewport.width} px wide`);
    }
    await context.close();
  }
});

t.test('a reviewer approves a decision with the keyboard alone', async (t) => {
  const { url, admin } = await startTestServer(t, { policies: engine });
  const alice = await issueKey(url, admin, { env: 'sandbox', scopes: REVIEWER, name: 'alice' });
  const bob = await issueKey(url, admin, { env: 'sandbox', scopes: REVIEWER, name: 'bob' });
  const created = await call(url, 'POST', '/v1/decisions', {
    key: alice.key,
    body: { title: 'Open the firewall', policy: 'decision-gate-v1', context: [{ source: 'risk:score', value: 95 }] },
  });
  const id = created.json.id as string;
  const browser = await launchBrowser(t);
  const page = await (await browser.newContext()).newPage();
  page.setDefaultTimeout(10_000);
  await signIn(page, url, bob.key);
  await page.goto(`${url}/console#/decisions/${id}`);
  await page.getByRole('heading', { name: 'Open the firewall', level: 1 }).waitFor();

  /** Presses Tab until the focused element is `wanted` (an id, or a button's name), at most 80 times; false if never. */
  const tabTo = async (wanted: { id: string } | { button: string }): Promise<boolean> => {
    for (let i = 0; i < 80; i++) {
      await page.keyboard.press('Tab');
      const reached = await page.evaluate((w) => {
        const el = document.activeElement;
        return 'id' in w ? el?.id === w.id : el?.tagName === 'BUTTON' && el.textContent === w.button;
      }, wanted);
      if (reached) return true;
    }
    return false;
  };
  await page.evaluate(() => (document.activeElement as HTMLElement | null)?.blur());
  await page.keyboard.press('Tab');
  t.equal(await page.evaluate(() => document.activeElement?.textContent), 'Skip to content', 'the first Tab stop skips to the content');
  t.ok(await tabTo({ id: 'comment' }), 'the comment field is reached with Tab');
  await page.keyboard.type('reviewed from the keyboard');
  t.ok(await tabTo({ button: 'Approve' }), 'and then the Approve button');
  await page.keyboard.press('Enter');
  await page.getByRole('status').filter({ hasText: 'Approved. Status: approved.' }).waitFor();
  const stored = await call(url, 'GET', `/v1/decisions/${id}`, { key: bob.key });
  t.match(stored.json, { status: 'approved', approvals: [{ keyId: bob.id, comment: 'reviewed from the keyboard' }] }, 'approved, as the API confirms');
});
