import t from 'tap';
import { ROUTES } from '../proxy/route-table.ts';
import { CreateDecisionBody, CreateKeyBody } from '../proxy/schemas.ts';
import { call, startTestServer } from './helpers/gatehouse.ts';

t.test('the OpenAPI document describes every route from the validating schemas', async (t) => {
  const { url } = await startTestServer(t);
  const answer = await call(url, 'GET', '/v1/openapi.json');
  t.equal(answer.status, 200);
  const doc = answer.json;
  t.equal(doc.openapi, '3.1.0');
  for (const route of ROUTES) {
    const operation = doc.paths[route.path]?.[route.method.toLowerCase()];
    t.ok(operation, `${route.method} ${route.path} is described`);
    t.equal(operation.operationId, route.operationId);
    if (route.scope) t.same(operation.security, [{ bearer: [route.scope] }], `${route.path} names its scope`);
  }
  t.same(doc.paths['/v1/decisions'].post.requestBody.content['application/json'].schema, JSON.parse(JSON.stringify(CreateDecisionBody)));
  t.same(doc.paths['/v1/keys'].post.requestBody.content['application/json'].schema, JSON.parse(JSON.stringify(CreateKeyBody)));
  t.ok(doc.paths['/v1/decisions'].post.parameters.some((p: { name: string }) => p.name === 'Idempotency-Key'));
  t.same(
    doc.paths['/v1/decisions'].get.parameters.map((p: { name: string }) => p.name),
    ['status', 'policy', 'gate', 'nextAction', 'q', 'order', 'limit', 'cursor'],
  );
  t.ok(doc.paths['/v1/decisions/{id}/approve'].post.responses['409']);
});
