import t, { type Test } from 'tap';
import { call, issueKey, startTestServer } from './helpers/gatehouse.ts';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { BUNDLED_POLICIES, bundledEngine } from './helpers/policies.ts';
import { freshPage, launchBrowser, signIn } from './helpers/browser.ts';

// The approvals console in a real Chromium against a real server: two reviewers, each in a
// fresh browser context, take a decision created through the API from the inbox to executed;
// a policy's refusal shows its reasons; attacker-supplied text stays text; a signed-out page
// shows nothing; the session never reaches page script or storage.

t.setTimeout(300_000);
const engine = await bundledEngine();
t.teardown(() => engine.close());

const REVIEWER = ['decisions:read', 'decisions:write', 'decisions:approve', 'decisions:execute', 'stream:subscribe', 'impact:read'];

async function setup(t: Test) {
  const { url, admin } = await startTestServer(t, { policies: engine });
  const alice = await issueKey(url, admin, { env: 'sandbox', scopes: REVIEWER, name: 'alice' });
  const bob = await issueKey(url, admin, { env: 'sandbox', scopes: REVIEWER, name: 'bob' });
  const browser = await launchBrowser(t);
  const create = async (title: string, score: number) => {
    const answer = await call(url, 'POST', '/v1/decisions', { key: alice.key, body: { title, policy: 'decision-gate-v1', context: [{ source: 'risk:score', value: score }] } });
    if (answer.status !== 200) throw new Error(`create failed: ${answer.status} ${answer.text}`);
    return answer.json as { id: string };
  };
  return { url, admin, alice, bob, browser, create };
}

t.test('a decision goes from the inbox to executed: live, approved by a second reviewer, executed', async (t) => {
  const { url, alice, bob, browser, create } = await setup(t);
  const first = await freshPage(browser);
  await signIn(first.page, url, alice.key);
  await first.page.getByText('Live', { exact: true }).waitFor();

  const cookies = await first.context.cookies();
  t.match(cookies.find((c) => c.name === 'gatehouse_session'), { httpOnly: true, sameSite: 'Strict', path: '/' }, 'the session cookie is HttpOnly and SameSite=Strict');
  t.equal(await first.page.evaluate(() => document.cookie), '', 'page script cannot read the session');
  const storage = await first.page.evaluate(() => JSON.stringify({ ...localStorage }) + JSON.stringify({ ...sessionStorage }));
  t.notOk(storage.includes(alice.key), 'the key is in neither localStorage nor sessionStorage');
  t.equal(storage, '{}{}', 'nothing is stored at all');
  t.notOk(first.page.url().includes(alice.key), 'nor in the URL');

  t.match(await first.page.locator('main .env').innerText(), /Environment: sandbox/, "the inbox says which environment it lists: the key's");
  const { id } = await create('Deploy web to production', 82);
  const item = first.page.locator(`li[data-id="${id}"]`);
  await item.waitFor();
  t.pass('the decision created through the API appeared without a reload');
  t.match(await item.innerText(), /human_approval:approve/, 'labelled <gate>:<nextAction>');
  t.match(await first.page.getByRole('button', { name: /Awaiting approval/ }).innerText(), /Awaiting approval: 1/, 'and counted');

  await item.getByRole('link', { name: 'Deploy web to production' }).click();
  await first.page.getByRole('heading', { name: 'Deploy web to production', level: 1 }).waitFor();
  t.ok(await first.page.getByRole('button', { name: 'Execute' }).isDisabled(), 'execute waits for the approval the policy asks for');
  t.match(await first.page.locator('.why').innerText(), /Execute: not possible while created \(next: approve\)/, 'and says why');
  await first.page.getByRole('button', { name: 'Approve' }).click();
  const refusal = first.page.locator('.outcome [role="alert"]');
  await refusal.waitFor();
  t.match(await refusal.innerText(), /the creator of a decision may not approve it/, "the policy's refusal shows its reasons");
  t.equal((await call(url, 'GET', `/v1/decisions/${id}`, { key: alice.key })).json.approvals.length, 0, 'and nothing was recorded');

  const second = await freshPage(browser);
  await signIn(second.page, url, bob.key);
  await second.page.goto(`${url}/console#/decisions/${id}`);
  await second.page.getByRole('heading', { name: 'Deploy web to production', level: 1 }).waitFor();
  await second.page.getByLabel('Comment').fill('checked the rollout plan');
  await second.page.getByRole('button', { name: 'Approve' }).click();
  await second.page.getByRole('status').filter({ hasText: 'Approved. Status: approved.' }).waitFor();
  t.ok(await second.page.getByRole('button', { name: 'Approve' }).isDisabled(), 'approve is no longer offered');
  t.ok(await second.page.getByRole('button', { name: 'Reject' }).isDisabled(), 'nor reject');

  await first.page.locator('.facts .status', { hasText: 'approved' }).waitFor();
  t.pass("the first reviewer's page updated live");
  t.match(await first.page.locator('.approvals').innerText(), new RegExp(`${bob.id}.*checked the rollout plan`), 'who approved, with the comment');
  await first.page.getByRole('button', { name: 'Execute' }).click();
  await first.page.getByRole('status').filter({ hasText: 'Executed. Status: executed.' }).waitFor();
  for (const name of ['Approve', 'Reject', 'Execute', 'Cancel']) t.ok(await first.page.getByRole('button', { name }).isDisabled(), `${name} is off once executed`);
  await first.page.locator('table.entries td', { hasText: `/v1/decisions/${id}/execute` }).first().waitFor();
  t.pass('the audit entries show the execution');

  const stored = await call(url, 'GET', `/v1/decisions/${id}`, { key: bob.key });
  t.match(stored.json, { status: 'executed', approvals: [{ keyId: bob.id, comment: 'checked the rollout plan' }] }, 'executed, as the API confirms');
  t.same(first.errors, [], 'no script errors');
  t.same(second.errors, [], 'no script errors for the second reviewer');
});

t.test('titles and context are shown as text: no script runs', async (t) => {
  const { url, alice, browser } = await setup(t);
  const title = `<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">`;
  const created = await call(url, 'POST', '/v1/decisions', {
    key: alice.key,
    body: { title, policy: 'decision-gate-v1', context: '<b onmouseover="window.__pwned = 3">hover</b><script>window.__pwned = 4</script>' },
  });
  t.equal(created.status, 200, created.text);
  const { page, errors } = await freshPage(browser);
  await signIn(page, url, alice.key);
  const link = page.getByRole('link', { name: title });
  await link.waitFor();
  t.equal(await link.innerText(), title, 'the inbox shows the title as written');
  await link.click();
  const heading = page.getByRole('heading', { level: 1 });
  await heading.filter({ hasText: '<script>' }).waitFor();
  t.equal(await heading.innerText(), title, 'so does the decision page');
  t.equal(await page.locator('main script, main img').count(), 0, 'no element was made from it');
  t.match(await page.locator('pre.text').innerText(), /<script>window.__pwned = 4<\/script>/, 'the context text too');
  t.equal(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned), undefined, 'no script ran');
  t.same(errors, []);
});

t.test('signed out, the console shows nothing but the sign-in form', async (t) => {
  const { url, alice, browser, create } = await setup(t);
  const { id } = await create('Quarterly budget transfer', 90);

  const stranger = await freshPage(browser);
  await stranger.page.goto(`${url}/console#/decisions/${id}`);
  await stranger.page.getByRole('button', { name: 'Sign in' }).waitFor();
  const shown = await stranger.page.locator('body').innerText();
  t.notMatch(shown, /Quarterly budget transfer/, 'no decision is shown without a session');
  t.notMatch(shown, /Inbox|Audit/, 'nor the navigation');
  await stranger.page.getByLabel('API key').fill('gh_test_not_a_key');
  await stranger.page.getByRole('button', { name: 'Sign in' }).click();
  await stranger.page.getByRole('alert').filter({ hasText: 'not known' }).waitFor();
  t.equal(await stranger.page.getByLabel('API key').inputValue(), '', 'a refused key is wiped from the form too');

  const { page, context } = await freshPage(browser);
  await signIn(page, url, alice.key);
  t.equal(await page.getByLabel('API key').count(), 0, 'the key field is gone once signed in');
  await page.getByRole('link', { name: 'Quarterly budget transfer' }).waitFor();
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.getByRole('button', { name: 'Sign in' }).waitFor();
  t.notMatch(await page.locator('body').innerText(), /Quarterly budget transfer/, 'signing out removes what was shown');
  t.equal((await context.cookies()).filter((c) => c.name === 'gatehouse_session').length, 0, 'and the cookie');
  await page.reload();
  await page.getByRole('button', { name: 'Sign in' }).waitFor();
  t.notMatch(await page.locator('body').innerText(), /Quarterly budget transfer/, 'a reload after signing out shows nothing either');
});

t.test('audit and policies: loaded policies and their Rego, the chain verified, a trace found by decision id', async (t) => {
  const { url, admin, browser, create } = await setup(t);
  const { id } = await create('Open the firewall', 95);
  // The bootstrap admin is a production key, which signs in only with a code (test/console-production.test.ts): a sandbox admin is quicker here.
  const operator = await issueKey(url, admin, { env: 'sandbox', scopes: ['admin'], name: 'operator' });
  const { page, errors } = await freshPage(browser, { viewport: { width: 390, height: 844 } });
  await signIn(page, url, operator.key);
  await page.getByRole('link', { name: 'Audit & policies' }).click();
  const row = page.locator('tr', { has: page.locator('td:first-child', { hasText: /^spend-approval-v1$/ }) });
  await row.waitFor();
  t.match(await row.innerText(), new RegExp(engine.info('spend-approval-v1').moduleHash), 'each policy with its module hash');
  await row.getByRole('link', { name: 'spend-approval-v1' }).click();
  const own = page.getByLabel('Rego source spend-approval-v1.rego');
  await own.waitFor();
  t.equal((await own.innerText()).trim(), readFileSync(join(BUNDLED_POLICIES, 'spend-approval-v1.rego'), 'utf8').trim(), "the policy's own Rego, as compiled");
  const library = page.locator('details', { has: page.locator('summary', { hasText: /^lib\// }) }).first();
  t.equal(await library.getAttribute('open'), null, 'the libraries it was compiled with are listed, folded');
  await page.getByRole('link', { name: '← Audit & policies' }).click();
  await page.getByRole('button', { name: 'Verify the chain' }).click();
  await page.locator('.chain').filter({ hasText: 'Intact' }).waitFor();
  t.match(await page.locator('.chain').innerText(), /Last verified entry\s+#\d+/, 'the last verified entry');
  await page.getByLabel('Trace reference or decision id').fill(id);
  await page.getByRole('search').getByRole('button', { name: 'Search' }).click();
  await page.getByRole('link', { name: 'Open the firewall' }).waitFor();
  t.ok(await page.locator('table.entries td', { hasText: 'POST /v1/decisions' }).count(), "the decision's audit entries");
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
  t.ok(overflow <= 0, 'the page fits a phone-sized screen without sideways scrolling');
  t.same(errors, []);
});
