import t, { type Test } from 'tap';
import { bundledEngine } from './helpers/policies.ts';
import { call, issueKey, startTestServer, type Answer } from './helpers/gatehouse.ts';

// POST /v1/context/synthesis end to end: a real server over LMDB, decisions under the bundled
// Rego policies recorded into memory, the real offline word-vector model for query subjects.

t.setTimeout(600_000);
const engine = await bundledEngine();
t.teardown(() => engine.close());

const SCOPES = ['decisions:read', 'decisions:write', 'decisions:approve', 'decisions:execute', 'memory:read', 'memory:write', 'context:read'];

/** A decision with inputs, a context value and an objective; an input rewritten after it was decided. */
async function setup(t: Test) {
  const { url, admin, server } = await startTestServer(t, { policies: engine });
  const creator = await issueKey(url, admin, { env: 'sandbox', scopes: SCOPES });
  const approver = await issueKey(url, admin, { env: 'sandbox', scopes: SCOPES, roles: ['finance-approver'] });
  const as = (key: { key: string }) => (method: string, path: string, body?: unknown) => call(url, method, path, { key: key.key, ...(body === undefined ? {} : { body }) });
  const write = async (body: unknown) => {
    const answer = await as(creator)('POST', '/v1/memory', body);
    if (answer.status !== 201) throw new Error(`memory write failed: ${answer.status} ${answer.text}`);
    return answer.json as { id: string; version: number };
  };
  const budget = await write({ namespace: 'finance', key: 'budget_q3', text: 'The Q3 marketing budget is 50,000 EUR. Agencies are paid from it.', attributes: { amount: 50000, currency: 'EUR' } });
  await write({ namespace: 'vendor', key: 'acme', text: 'Acme Media runs our newsletter campaigns. Their invoices are due in 30 days.', attributes: { rating: 4 } });
  const decision = await as(creator)('POST', '/v1/decisions', {
    title: 'Pay the agency invoice',
    policy: 'spend-approval-v1',
    context: [{ source: 'finance:amount', value: 4200 }],
    inputs: ['finance:budget_q3', 'vendor:acme'],
    objectives: ['Grow the newsletter audience'],
  });
  if (decision.status !== 200) throw new Error(`decision failed: ${decision.status} ${decision.text}`);
  // Rewritten after the decision: the decision's context must still cite version 1.
  await write({ namespace: 'finance', key: 'budget_q3', text: 'The Q3 marketing budget is 35,000 EUR after the cut.', attributes: { amount: 35000, currency: 'EUR' } });
  const synthesize = (body: unknown) => as(creator)('POST', '/v1/context/synthesis', body);
  return { server, creator, approver, as, synthesize, budget, decisionId: decision.json.id as string };
}

const ok = (t: Test, answer: Answer, what: string) => {
  t.equal(answer.status, 200, `${what}: ${answer.status === 200 ? 'ok' : answer.text}`);
  return answer.json;
};

interface Cited {
  where: string;
  lineage: Array<{ id: string; version: number }>;
  /** What the cited version must hold for the statement to be true to it. */
  holds: (item: { text: string; attributes: Record<string, unknown>; version: number }) => boolean;
}

/** Every statement of every layer, with what its cited version must hold. */
function citedStatements(answer: any): Cited[] {
  const quoted = (statement: { text: string; truncated: boolean }) => (item: { text: string }) =>
    statement.truncated ? item.text.includes(statement.text.slice(0, -1)) : item.text.includes(statement.text);
  const cited: Cited[] = [];
  const { executive, detailed, raw } = answer.layers;
  for (const s of executive?.summary ?? []) cited.push({ where: 'executive summary', lineage: s.lineage, holds: quoted(s) });
  for (const f of executive?.figures ?? []) cited.push({ where: `figure ${f.label} ${f.attribute}`, lineage: f.lineage, holds: (item) => item.attributes[f.attribute] === f.value });
  for (const group of detailed?.groups ?? []) {
    for (const fact of group.facts) cited.push({ where: `fact of ${group.source.key}`, lineage: fact.lineage, holds: quoted(fact) });
    for (const v of group.values) {
      cited.push({ where: `value ${group.source.key}.${v.attribute}`, lineage: v.lineage, holds: (item) => JSON.stringify(item.attributes[v.attribute]) === JSON.stringify(v.value) });
    }
  }
  for (const signal of raw?.signals ?? []) {
    cited.push({
      where: `raw ${signal.key}`,
      lineage: signal.lineage,
      holds: (item) => item.version === signal.version && JSON.stringify(item.attributes) === JSON.stringify(signal.attributes) && quoted(signal)(item),
    });
  }
  return cited;
}

/** Fetches every cited id@version over HTTP and checks the statement against it. */
async function checkLineage(t: Test, answer: any, get: (path: string) => Promise<Answer>) {
  const cited = citedStatements(answer);
  t.ok(cited.length > 0, 'there are statements to check');
  const fetched = new Map<string, any>();
  for (const statement of cited) {
    t.equal(statement.lineage.length, 1, `${statement.where}: one source`);
    const [{ id, version }] = statement.lineage;
    const key = `${id}@${version}`;
    if (!fetched.has(key)) fetched.set(key, ok(t, await get(`/v1/memory/${id}?version=${version}`), key));
    t.ok(statement.holds(fetched.get(key)), `${statement.where} is what ${key} holds`);
  }
  return cited;
}

/** Tokens as the budget counts them: ⌈characters / 4⌉ of each content piece. */
function contentTokens(answer: any): number {
  const tokens = (text: string) => Math.ceil(text.length / 4);
  const { executive, detailed, raw } = answer.layers;
  let total = 0;
  for (const s of executive?.summary ?? []) total += tokens(s.text);
  for (const f of executive?.figures ?? []) total += tokens(`${f.label} ${f.attribute} ${String(f.value)}`);
  for (const group of detailed?.groups ?? []) {
    for (const fact of group.facts) total += tokens(fact.text);
    for (const v of group.values) total += tokens(`${v.attribute} ${JSON.stringify(v.value)}`);
  }
  for (const signal of raw?.signals ?? []) total += tokens(signal.text) + tokens(JSON.stringify(signal.attributes));
  return total;
}

t.test('every layer’s statements cite item versions that hold them; the beta header is sent', async (t) => {
  const { creator, as, synthesize, budget, decisionId } = await setup(t);
  const answer = await synthesize({ subject: { decisionId }, role: 'analyst', budget: 20_000 });
  const body = ok(t, answer, 'synthesis');
  t.equal(answer.headers.get('gatehouse-beta'), 'context-synthesis', 'marked beta');
  t.same(Object.keys(body.layers), ['executive', 'detailed', 'raw'], 'all three layers by default');
  t.match(body, { subject: { decisionId }, role: 'analyst', revision: Number, budget: { unit: 'tokens', total: 20_000 } });

  const cited = await checkLineage(t, body, (path) => as(creator)('GET', path));
  const budgetCitations = cited.flatMap((c) => c.lineage).filter((l) => l.id === budget.id);
  t.ok(budgetCitations.length > 0, 'the budget input is cited');
  t.ok(budgetCitations.every((l) => l.version === 1), 'at the version the decision saw (1), not the rewritten one (2)');
  t.ok(body.layers.detailed.groups.some((g: any) => g.facts.some((f: any) => f.text === 'The Q3 marketing budget is 50,000 EUR.')), 'a fact quoted from the version seen');
  t.ok(body.layers.executive.figures.some((f: any) => f.label === 'finance:amount' && f.attribute === 'value' && f.value === 4200), 'the context value is a key figure');
  t.same(
    body.sources.map((s: { namespace: string; key: string }) => `${s.namespace}:${s.key}`).slice(0, 3).sort(),
    ['finance:amount', 'finance:budget_q3', 'vendor:acme'],
    'an analyst reads the evidence first',
  );
  t.same(
    body.layers.raw.signals.map((s: { id: string; version: number }) => `${s.id}@${s.version}`),
    body.sources.map((s: { id: string; version: number }) => `${s.id}@${s.version}`),
    'with room, every source is a raw signal, in the role’s order',
  );
  t.ok(body.layers.raw.signals.every((s: { truncated: boolean }) => !s.truncated));

  const query = ok(t, await synthesize({ subject: { query: 'marketing budget for agencies' }, role: 'executive' }), 'query subject');
  t.ok(query.sources.some((s: { id: string }) => s.id === budget.id), 'the query finds the budget');
  t.equal(query.sources.find((s: { id: string }) => s.id === budget.id).version, 2, 'a query reads the current version');
  await checkLineage(t, query, (path) => as(creator)('GET', path));
});

t.test('the same request against the same memory answers the same bytes; asOf pins the memory state', async (t) => {
  const { server, approver, as, synthesize, decisionId } = await setup(t);
  await server.services.memory.settled();
  for (const body of [
    { subject: { decisionId }, role: 'operator', budget: 400 },
    { subject: { query: 'newsletter campaigns invoices' }, role: 'analyst', budget: 600 },
  ]) {
    const first = await synthesize(body);
    const second = await synthesize(body);
    t.equal(first.status, 200, first.text);
    t.equal(second.text, first.text, `${Object.keys(body.subject)[0]}: identical bytes`);
  }

  const before = ok(t, await synthesize({ subject: { decisionId }, role: 'executive' }), 'before the approval');
  ok(t, await as(approver)('POST', `/v1/decisions/${decisionId}/approve`), 'approve');
  const after = ok(t, await synthesize({ subject: { decisionId }, role: 'executive' }), 'after');
  t.ok(after.revision > before.revision, 'memory moved on');
  t.ok(after.layers.executive.figures.some((f: any) => f.attribute === 'status' && f.value === 'approved'), 'the approval shows');
  const pinned = await synthesize({ subject: { decisionId }, role: 'executive', asOf: before.revision });
  t.equal(pinned.text, JSON.stringify(before), 'asOf the earlier revision answers the earlier bytes');
});

t.test('the budget is respected, layers share it, and a cut never loses its lineage', async (t) => {
  const { creator, as, synthesize, decisionId } = await setup(t);
  for (const role of ['executive', 'analyst', 'operator']) {
    const body = ok(t, await synthesize({ subject: { decisionId }, role, budget: 100 }), `${role} at 100`);
    t.ok(body.budget.used <= 100, `${role}: ${body.budget.used} tokens used of 100`);
    t.equal(contentTokens(body), body.budget.used, `${role}: the content costs what the answer says`);
    const layers = Object.values(body.layers) as Array<{ allotted: number; carried: number; used: number; omitted: number }>;
    t.ok(layers.every((layer) => layer.used <= layer.allotted), `${role}: no layer over its allowance`);
    t.ok(layers.reduce((sum, layer) => sum + layer.omitted, 0) > 0, `${role}: something had to be left out`);
    await checkLineage(t, body, (path) => as(creator)('GET', path));
  }
  const big = ok(t, await synthesize({ subject: { decisionId }, role: 'analyst', budget: 20_000 }), 'roomy');
  t.ok(big.budget.used > 100 && big.budget.used <= 20_000, 'a larger budget shows more');
  t.ok(Object.values(big.layers).every((layer: any) => layer.omitted === 0), 'and leaves nothing out');

  const rawOnly = ok(t, await synthesize({ subject: { decisionId }, role: 'executive', layers: ['raw'], budget: 150 }), 'raw only');
  t.same(Object.keys(rawOnly.layers), ['raw'], 'only the layer asked for');
  t.equal(rawOnly.layers.raw.allotted, 150, 'which gets the whole budget');
  const cut = rawOnly.layers.raw.signals.filter((s: { truncated: boolean }) => s.truncated);
  t.ok(cut.every((s: { text: string }) => s.text.endsWith('…')), 'a cut text says so');
  await checkLineage(t, rawOnly, (path) => as(creator)('GET', path));

  const split = ok(t, await synthesize({ subject: { decisionId }, role: 'operator', layers: ['executive', 'raw'], budget: 1000 }), 'two layers');
  t.same(Object.keys(split.layers), ['executive', 'raw']);
  t.same([split.layers.executive.allotted, split.layers.raw.allotted - split.layers.raw.carried], [230, 769], 'shares renormalised over the layers asked for (15:50)');
});

t.test('roles change what comes first, which figures count, and how the budget is shared', async (t) => {
  const { synthesize, decisionId } = await setup(t);
  const read = async (role: string) => ok(t, await synthesize({ subject: { decisionId }, role, budget: 2000 }), role);
  const executive = await read('executive');
  const analyst = await read('analyst');
  const operator = await read('operator');
  const kinds = (body: any) => body.sources.map((s: { kind: string }) => s.kind);
  t.equal(kinds(executive)[0], 'decision', 'an executive reads the decision first');
  t.equal(kinds(executive)[1], 'objective', 'then what it serves');
  t.equal(kinds(analyst)[0], 'evidence', 'an analyst reads the evidence first');
  t.same(kinds(operator).slice(0, 2), ['decision', 'policy'], 'an operator reads the decision, then its policy');
  t.same(
    [...kinds(executive)].sort(),
    [...kinds(analyst)].sort(),
    'the same sources, in another order',
  );
  t.equal(executive.layers.executive.summary[0].text, 'Pay the agency invoice', 'the executive summary leads with the decision');
  t.same(
    operator.layers.executive.figures.slice(0, 4).map((f: { attribute: string }) => f.attribute),
    ['status', 'gate', 'nextAction', 'moduleHash'],
    'an operator’s key figures are the decision’s state',
  );
  t.match(analyst.layers.executive.figures[0], { label: 'finance:budget_q3', attribute: 'amount', value: 50000 }, 'an analyst’s key figures start with the evidence’s values');
  const share = (layer: { allotted: number; carried: number }) => layer.allotted - layer.carried;
  t.same([share(executive.layers.executive), share(executive.layers.detailed), share(executive.layers.raw)], [1000, 700, 300], 'executive shares: 50/35/15%');
  t.same([share(operator.layers.executive), share(operator.layers.detailed), share(operator.layers.raw)], [300, 700, 1000], 'operator shares: 15/35/50%');
  t.same([share(analyst.layers.executive), share(analyst.layers.detailed), share(analyst.layers.raw)], [400, 1000, 600], 'analyst shares: 20/50/30%');
  t.equal(executive.layers.executive.carried, 0, 'the first layer has nothing carried in');
  t.equal(executive.layers.detailed.carried, executive.layers.executive.allotted - executive.layers.executive.used, 'what a layer leaves passes to the next');
});

t.test('bad requests are refused with a problem that says what is wrong', async (t) => {
  const { synthesize, decisionId } = await setup(t);
  const problem = async (body: unknown, status: number, detail: RegExp) => {
    const answer = await synthesize(body);
    t.equal(answer.status, status, JSON.stringify(body));
    t.equal(answer.headers.get('content-type'), 'application/problem+json');
    t.match(answer.json, { status, detail });
  };
  await problem({ subject: { decisionId, query: 'x' }, role: 'analyst' }, 400, /exactly one of decisionId or query/);
  await problem({ subject: {}, role: 'analyst' }, 400, /exactly one of decisionId or query/);
  await problem({ subject: { decisionId: 'nonsense' }, role: 'analyst' }, 400, /decisionId must be a decision id/);
  await problem({ subject: { decisionId }, role: 'ceo' }, 400, /does not match the schema/);
  await problem({ subject: { decisionId }, role: 'analyst', layers: [] }, 400, /does not match the schema/);
  await problem({ subject: { decisionId }, role: 'analyst', layers: ['summary'] }, 400, /does not match the schema/);
  await problem({ subject: { decisionId }, role: 'analyst', budget: 50 }, 400, /budget must be an integer from 100 to 20000/);
  await problem({ subject: { decisionId }, role: 'analyst', asOf: 'yesterday' }, 400, /asOf must be an ISO 8601 time/);
  await problem({ subject: { query: '   ' }, role: 'analyst' }, 400, /query is empty/);
  await problem({ subject: { decisionId: 'dec_0000000000000' }, role: 'analyst' }, 404, /no decision dec_0000000000000/);
});
