import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { EVENT_KINDS } from '../core/events/event.ts';
import { ROUTES } from '../proxy/route-table.ts';
import { call, startTestServer, tempDir } from './helpers/gatehouse.ts';

const { url } = await startTestServer(t);
const doc = (await call(url, 'GET', '/v1/openapi.json')).json;

/** The value a local `$ref` points at, or undefined. */
function resolve(ref: string): any {
  return ref
    .slice(2)
    .split('/')
    .reduce((node, part) => node?.[part.replace(/~1/g, '/').replace(/~0/g, '~')], doc);
}

function refsIn(node: unknown, found: string[] = []): string[] {
  if (Array.isArray(node)) node.forEach((item) => refsIn(item, found));
  else if (node && typeof node === 'object') {
    for (const [key, value] of Object.entries(node)) {
      if (key === '$ref' && typeof value === 'string') found.push(value);
      else refsIn(value, found);
    }
  }
  return found;
}

t.test('the OpenAPI document describes every route', async (t) => {
  t.equal(doc.openapi, '3.1.0');
  for (const route of ROUTES) {
    const operation = doc.paths[route.path]?.[route.method.toLowerCase()];
    t.ok(operation, `${route.method} ${route.path} is described`);
    t.equal(operation.operationId, route.operationId);
    t.ok(doc.tags.some((tag: { name: string }) => tag.name === operation.tags[0]), `${route.operationId} has a declared tag`);
    if (route.scope) t.same(operation.security, [{ bearer: [route.scope] }, { session: [route.scope] }], `${route.path} names its scope`);
  }
  t.same(
    doc.paths['/v1/decisions'].get.parameters.map((p: { name?: string; $ref?: string }) => p.name ?? p.$ref),
    [
      'status',
      'policy',
      'gate',
      'nextAction',
      'q',
      'order',
      'limit',
      'cursor',
      '#/components/parameters/Signature',
      '#/components/parameters/SignatureInput',
      '#/components/parameters/ContentDigest',
    ],
  );
  t.ok(doc.paths['/v1/decisions/{id}/approve'].post.responses['409']);
});

t.test('shared schemas are components, referenced where routes use them', async (t) => {
  const create = doc.paths['/v1/decisions'].post;
  t.same(create.requestBody.content['application/json'].schema, { $ref: '#/components/schemas/CreateDecisionBody' });
  t.same(doc.components.schemas.CreateDecisionBody.properties.context, { $ref: '#/components/schemas/Context' });
  t.same(doc.components.schemas.CreateDecisionBody.properties.inputs.items, { $ref: '#/components/schemas/Label' });
  t.same(create.responses['200'].content['application/json'].schema, { $ref: '#/components/schemas/Decision' });
  t.same(doc.paths['/v1/decisions'].get.parameters[0].schema, { $ref: '#/components/schemas/DecisionStatusName' }, 'an optional member is still the shared schema');
  const refs = refsIn(doc);
  t.ok(refs.length > 500);
  t.same(refs.filter((ref) => resolve(ref) === undefined), [], 'every $ref resolves');
  t.ok(JSON.stringify(doc).length < 200_000, 'shared parts are not inlined');
});

t.test('servers, security schemes, headers and webhooks', async (t) => {
  t.same(doc.servers, [{ url: '/', description: 'The Gatehouse serving this document.' }]);
  t.same(Object.keys(doc.components.securitySchemes), ['bearer', 'session']);
  t.match(doc.components.securitySchemes.session, { type: 'apiKey', in: 'cookie', name: 'gatehouse_session' });
  const create = doc.paths['/v1/decisions'].post;
  t.same(Object.keys(create.responses['200'].headers), ['Request-Id', 'RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset', 'Idempotent-Replayed']);
  t.ok(resolve(create.responses['429'].$ref).headers['Retry-After']);
  t.same(
    create.parameters.map((p: { $ref: string }) => resolve(p.$ref).name),
    ['Idempotency-Key', 'Signature', 'Signature-Input', 'Content-Digest', 'x-gatehouse-csrf'],
  );
  t.ok(doc.paths['/v1/agents/runs/{runId}/tool-calls'].post.responses['202'].headers.Location);
  t.ok(doc.paths['/v1/sessions'].post.responses['201'].headers['Set-Cookie']);
  t.same(Object.keys(doc.webhooks).sort(), [...EVENT_KINDS, 'webhook.test'].sort(), 'every event kind is a webhook');
  const approved = doc.webhooks['decision.approved'].post;
  t.same(approved.parameters.map((p: { name: string }) => p.name), ['webhook-id', 'webhook-timestamp', 'webhook-signature']);
  const message = approved.requestBody.content['application/json'].schema;
  t.same(message.properties.type, { const: 'decision.approved', type: 'string' });
  t.same(message.properties.data, { $ref: '#/components/schemas/Decision' });
});

/**
 * Operations that cannot answer as the recommended rules expect: public probes and pages that
 * refuse nothing (no 4xx), the WebSocket upgrade (101) and the redirect to the console (302).
 */
const EXPECTED_WARNINGS = [
  'operation-2xx-response #/paths/~1v1~1streaming/get/responses',
  'operation-4xx-response #/paths/~1healthz/get/responses',
  'operation-4xx-response #/paths/~1readyz/get/responses',
  'operation-4xx-response #/paths/~1metrics/get/responses',
  'operation-4xx-response #/paths/~1v1~1openapi.json/get/responses',
  'operation-4xx-response #/paths/~1console/get/responses',
  'operation-4xx-response #/paths/~1/get/responses',
  'operation-2xx-response #/paths/~1/get/responses',
];

t.test("Redocly's recommended rules pass the served document", async (t) => {
  const file = join(tempDir(t), 'openapi.json');
  writeFileSync(file, JSON.stringify(doc));
  const cli = createRequire(import.meta.url).resolve('@redocly/cli/bin/cli.js');
  const env = { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' };
  const { stdout } = await promisify(execFile)(process.execPath, [cli, 'lint', file, '--extends=recommended', '--format=json'], { env, timeout: 60_000 }).catch(
    (failure: { stdout: string }) => failure,
  );
  const report = JSON.parse(stdout) as { totals: { errors: number }; problems: { ruleId: string; severity: string; message: string; location: { pointer: string }[] }[] };
  t.equal(report.totals.errors, 0, report.problems.filter((p) => p.severity === 'error').map((p) => `${p.ruleId}: ${p.message}`).join('\n'));
  t.same(
    report.problems.map((p) => `${p.ruleId} ${p.location[0]!.pointer}`),
    EXPECTED_WARNINGS,
    'no ambiguous paths and no other warning',
  );
});
