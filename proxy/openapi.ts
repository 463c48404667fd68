import { PathParam } from './id-schema.ts';
import { paramNames, ROUTES } from './route-table.ts';
import type { RouteDef } from './route.ts';

/**
 * The OpenAPI 3.1 document, built from the route table and the TypeBox schemas that validate
 * requests. TypeBox schemas are JSON Schema, which OpenAPI 3.1 uses as is.
 */
let cached: unknown;

function operation(route: RouteDef) {
  const parameters: unknown[] = paramNames(route.path).map((name) => ({ name, in: 'path', required: true, schema: PathParam }));
  const query = route.query as { properties?: Record<string, unknown>; required?: string[] } | undefined;
  for (const [name, schema] of Object.entries(query?.properties ?? {})) {
    parameters.push({ name, in: 'query', required: query?.required?.includes(name) ?? false, schema });
  }
  if (route.idempotent) {
    parameters.push({
      name: 'Idempotency-Key',
      in: 'header',
      required: false,
      description: 'Retries with the same key and body get the first response again (`Idempotent-Replayed: true`).',
      schema: { type: 'string', minLength: 1, maxLength: 255 },
    });
  }
  const responses: Record<string, unknown> = {};
  for (const [status, response] of Object.entries(route.responses)) {
    responses[status] = {
      description: response.description,
      ...(response.schema || response.contentType
        ? { content: { [response.contentType ?? 'application/json']: response.schema ? { schema: response.schema } : {} } }
        : {}),
    };
  }
  return {
    operationId: route.operationId,
    summary: route.summary,
    ...(parameters.length ? { parameters } : {}),
    ...(route.body
      ? { requestBody: { required: !route.bodyOptional, content: { 'application/json': { schema: route.body } } } }
      : {}),
    responses,
    security: route.scope ? [{ bearer: [route.scope] }] : [],
    ...(route.scope ? { 'x-required-scope': route.scope } : {}),
    ...(route.selfService ? { 'x-self-service': 'The API key named by {id} may call this without the scope.' } : {}),
  };
}

export function openApiDocument(): unknown {
  if (cached) return cached;
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of ROUTES) {
    (paths[route.path] ??= {})[route.method.toLowerCase()] = operation(route);
  }
  cached = JSON.parse(
    JSON.stringify({
      openapi: '3.1.0',
      info: {
        title: 'Gatehouse API',
        version: '1',
        description: 'Governed decisions behind policies compiled to WebAssembly, with a hash-chained audit log.',
      },
      jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'An API key.' } } },
      paths,
    }),
  );
  return cached;
}
