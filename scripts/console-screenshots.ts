/**
 * Screenshots of the approvals console for docs/console.md, taken from the real page: starts a
 * server on a temporary data directory with the bundled policies, creates sample decisions
 * through the API, signs in as a reviewer in Debian's Chromium and saves the inbox (desktop and
 * phone) and a decision page into docs/console/.
 *
 *   node --import=./scripts/register-typescript.js scripts/console-screenshots.ts
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { PolicyEngine } from '../policies/engine/index.ts';
import { startServer } from '../proxy/server.ts';
import { CHROMIUM } from '../test/helpers/browser.ts';

const OUT = fileURLToPath(new URL('../docs/console/', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'gatehouse-screenshots-'));
const engine = await PolicyEngine.open({ sourceDir: fileURLToPath(new URL('../policies/rego', import.meta.url)), buildDir: join(dir, 'policies') });
// Signatures off: the bootstrap admin issues the sample keys without a signing key of its own.
const server = await startServer({ dataDir: join(dir, 'data'), policies: engine, port: 0, signatures: 'off' });

async function call(key: string, method: string, path: string, body?: unknown): Promise<any> {
  const response = await fetch(server.url + path, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const answer = await response.json();
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${JSON.stringify(answer)}`);
  return answer;
}

const SCOPES = ['decisions:read', 'decisions:write', 'decisions:approve', 'decisions:execute', 'stream:subscribe', 'impact:read'];
const admin = server.adminKey.generated!;
const requester = await call(admin, 'POST', '/v1/keys', { env: 'sandbox', scopes: SCOPES, name: 'deploy-bot' });
const reviewer = await call(admin, 'POST', '/v1/keys', { env: 'sandbox', scopes: SCOPES, roles: ['finance-approver'], name: 'Dana (finance)' });
const other = await call(admin, 'POST', '/v1/keys', { env: 'sandbox', scopes: SCOPES, roles: ['cfo'], name: 'Chris (CFO)' });

const create = (title: string, policy: string, context: unknown, inputs: string[] = []) => call(requester.key, 'POST', '/v1/decisions', { title, policy, context, inputs });
const act = (key: string, id: string, action: string, comment?: string) => call(key, 'POST', `/v1/decisions/${id}/${action}`, comment ? { comment } : {});

const rollout = await create('Roll out checkout v2 to 100% of traffic', 'decision-gate-v1', [{ source: 'risk:score', value: 78 }, { source: 'risk:blast_radius', value: 71 }, { source: 'tests:passed', value: 1482 }], ['repo:checkout', 'ci:run-5521']);
const invoice = await create('Pay invoice INV-2291 to Acme Corp', 'spend-approval-v1', [{ source: 'finance:amount', value: 72000 }], ['finance:budget_q3']);
await act(reviewer.key, invoice.id, 'approve', 'Matches the signed PO 4471; budget line confirmed.');
const laptops = await create('Buy 12 laptops for the new support team', 'spend-approval-v1', [{ source: 'finance:amount', value: 14400 }]);
await act(reviewer.key, laptops.id, 'approve', 'Within the hardware budget.');
await create('Rotate the payments database credentials', 'decision-gate-v1', [{ source: 'risk:score', value: 40 }]);
const dns = await create('Move api.example.com to the new load balancer', 'decision-gate-v1', [{ source: 'risk:score', value: 88 }]);
await act(other.key, dns.id, 'reject', 'Not during the freeze.');
await create('Renew the TLS certificate for status.example.com', 'decision-gate-v1', 'Routine renewal, 30 days before expiry.');
const refund = await create('Refund order 88120 (duplicate charge)', 'spend-approval-v1', [{ source: 'finance:amount', value: 2300 }]);
await act(other.key, refund.id, 'approve', 'Duplicate confirmed with the processor.');
await act(requester.key, refund.id, 'execute');

const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'] });
try {
  const shoot = async (key: string, viewport: { width: number; height: number }, hash: string, file: string, ready: string) => {
    const context = await browser.newContext({ viewport, deviceScaleFactor: 1 });
    const page = await context.newPage();
    page.setDefaultTimeout(10_000);
    await page.goto(`${server.url}/console`);
    await page.getByLabel('API key').fill(key);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByText('Live', { exact: true }).waitFor();
    await page.goto(`${server.url}/console${hash}`);
    await page.getByText(ready).first().waitFor();
    await page.screenshot({ path: join(OUT, file), fullPage: true });
    await context.close();
    console.log(`wrote docs/console/${file}`);
  };
  await shoot(reviewer.key, { width: 1280, height: 800 }, '#/', 'inbox.png', rollout.title);
  await shoot(reviewer.key, { width: 390, height: 844 }, '#/', 'inbox-phone.png', rollout.title);
  // The CFO's view: the second approval the invoice waits for is theirs to give.
  await shoot(other.key, { width: 1280, height: 800 }, `#/decisions/${invoice.id}`, 'decision.png', 'Impact trace');
  await shoot(reviewer.key, { width: 1280, height: 800 }, '#/policies/spend-approval-v1', 'policy.png', 'spend-approval-v1.rego');
} finally {
  await browser.close();
  await server.close();
  await engine.close();
  rmSync(dir, { recursive: true, force: true });
}
