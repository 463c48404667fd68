import type { TSchema } from '@sinclair/typebox';
import * as agentSchemas from './agent-schemas.ts';
import * as contextSchemas from './context-schemas.ts';
import * as eventSchemas from './event-schemas.ts';
import { EVENT_PAYLOADS, webhookMessage } from './event-schemas.ts';
import * as idSchema from './id-schema.ts';
import { PathParam } from './id-schema.ts';
import * as impactSchemas from './impact-schemas.ts';
import * as memorySchemas from './memory-schemas.ts';
import { SchemaComponents } from './openapi-components.ts';
import { paramNames, ROUTES } from './route-table.ts';
import type { ResponseHeader, RouteDef, RouteResponse } from './route.ts';
import * as auditRoute from './routes/audit.ts';
import * as decisionResultRoute from './routes/decision-results.ts';
import * as heldRoute from './routes/held.ts';
import * as policyRoute from './routes/policies.ts';
import * as sessionRoute from './routes/sessions.ts';
import * as signingKeySchemas from './routes/signing-key-schemas.ts';
import * as schemas from './schemas.ts';
import * as webhookSchemas from './webhook-schemas.ts';
import { SESSION_COOKIE } from './http/session-cookie.ts';
import { CSRF_HEADER } from './stages/session-auth.ts';

/**
 * The OpenAPI 3.1 document, built from the route table and the TypeBox schemas that validate
 * requests (TypeBox schemas are JSON Schema, which OpenAPI 3.1 uses as is). Every schema a
 * schema module exports is a shared component, referenced where routes use it.
 */
const SCHEMA_MODULES = [
  schemas,
  idSchema,
  agentSchemas,
  contextSchemas,
  impactSchemas,
  memorySchemas,
  webhookSchemas,
  signingKeySchemas,
  eventSchemas,
  auditRoute,
  decisionResultRoute,
  heldRoute,
  policyRoute,
  sessionRoute,
];

const TAGS: Record<string, string> = {
  decisions: 'Governed decisions: create, list, approve, reject, execute, cancel; results and held requests.',
  keys: 'API keys and the signing keys that sign their requests.',
  sessions: 'Console sessions: a key exchanged for a cookie.',
  policies: 'The loaded policies.',
  audit: 'The hash-chained audit log.',
  impact: 'Traces of decisions and what inputs and objectives influenced.',
  memory: 'Versioned memory items, their edges, and retrieval.',
  context: 'Layered context synthesis (beta).',
  objectives: 'Objectives and the decisions linked to them.',
  webhooks: 'Webhook endpoints, deliveries and replay.',
  agents: 'Governed agents: tools, runs, tool calls, replay and rollback.',
  streaming: 'The WebSocket event stream.',
  ops: 'Liveness, readiness, metrics and this document.',
  console: 'The approvals console.',
};

function tagOf(path: string): string {
  const segment = /^\/v1\/([a-z]+)/.exec(path)?.[1];
  if (segment && segment in TAGS) return segment;
  return path === '/' || path.startsWith('/console') ? 'console' : 'ops';
}

const header = (description: string, schema: object) => ({ description, schema });

const HEADERS = {
  'Request-Id': header('The id of this request, also in its audit entry and problem documents.', { type: 'string' }),
  'RateLimit-Limit': header('The burst of the caller’s token bucket.', { type: 'integer' }),
  'RateLimit-Remaining': header('Requests left in the bucket.', { type: 'integer' }),
  'RateLimit-Reset': header('Seconds until the bucket is full again.', { type: 'integer' }),
  'Retry-After': header('Seconds to wait before retrying.', { type: 'integer' }),
  'Idempotent-Replayed': header('`true` when this is the stored response to an earlier request with the same Idempotency-Key.', { type: 'string', enum: ['true'] }),
  Location: header('Where the resource this response names lives.', { type: 'string', format: 'uri-reference' }),
  'Set-Cookie': header(`The \`${SESSION_COOKIE}\` session cookie (HttpOnly, SameSite=Strict).`, { type: 'string' }),
} satisfies Record<string, unknown> & Record<ResponseHeader, unknown>;

const headerParameter = (name: string, description: string) => ({ name, in: 'header', required: false, description, schema: { type: 'string' } });

const PARAMETERS = {
  IdempotencyKey: {
    ...headerParameter('Idempotency-Key', 'Retries with the same key and body get the first response again (`Idempotent-Replayed: true`); kept 24 h per API key.'),
    schema: { type: 'string', minLength: 1, maxLength: 255 },
  },
  Signature: headerParameter('Signature', 'RFC 9421 HTTP Message Signature; required of production keys by default (docs/signatures.md).'),
  SignatureInput: headerParameter('Signature-Input', 'RFC 9421 covered components and parameters: `@method`, `@target-uri`, `content-digest`, `created`, `keyid`.'),
  ContentDigest: headerParameter('Content-Digest', 'RFC 9530 digest of the body (`sha-256` or `sha-512`), covered by the signature.'),
  Csrf: headerParameter(CSRF_HEADER, 'Must be `1` on unsafe methods authenticated by the session cookie.'),
};
const ref = (kind: 'headers' | 'parameters', name: string) => ({ $ref: `#/components/${kind}/${name}` });

function responseHeaders(route: RouteDef, status: number, response: RouteResponse): Record<string, unknown> {
  const names: string[] = ['Request-Id'];
  if (route.scope && status !== 401) names.push('RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset');
  if (status === 429) names.push('Retry-After');
  if (route.idempotent && status < 300) names.push('Idempotent-Replayed');
  names.push(...(response.headers ?? []));
  return Object.fromEntries(names.map((name) => [name, ref('headers', name)]));
}

function operation(route: RouteDef, components: SchemaComponents) {
  const parameters: unknown[] = paramNames(route.path).map((name) => ({ name, in: 'path', required: true, schema: components.use(PathParam) }));
  const query = route.query as { properties?: Record<string, TSchema>; required?: string[] } | undefined;
  for (const [name, schema] of Object.entries(query?.properties ?? {})) {
    parameters.push({ name, in: 'query', required: query?.required?.includes(name) ?? false, schema: components.use(schema) });
  }
  if (route.idempotent) parameters.push(ref('parameters', 'IdempotencyKey'));
  if (route.scope) {
    parameters.push(ref('parameters', 'Signature'), ref('parameters', 'SignatureInput'), ref('parameters', 'ContentDigest'));
    if (route.method !== 'GET') parameters.push(ref('parameters', 'Csrf'));
  }
  const responses: Record<string, unknown> = {};
  for (const [status, response] of Object.entries(route.responses)) {
    responses[status] = {
      description: response.description,
      headers: responseHeaders(route, Number(status), response),
      ...(response.schema || response.contentType
        ? { content: { [response.contentType ?? 'application/json']: response.schema ? { schema: components.use(response.schema) } : {} } }
        : {}),
    };
  }
  return {
    operationId: route.operationId,
    summary: route.summary,
    tags: [tagOf(route.path)],
    ...(parameters.length ? { parameters } : {}),
    ...(route.body
      ? { requestBody: { required: !route.bodyOptional, content: { 'application/json': { schema: components.use(route.body) } } } }
      : {}),
    responses,
    security: route.scope ? [{ bearer: [route.scope] }, { session: [route.scope] }] : [],
    ...(route.scope ? { 'x-required-scope': route.scope } : {}),
    ...(route.selfService ? { 'x-self-service': 'The API key named by {id} may call this without the scope.' } : {}),
  };
}

/** Standard Webhooks deliveries, one entry per event kind. */
function webhooks(components: SchemaComponents) {
  const entries = Object.entries(EVENT_PAYLOADS).map(([kind, { data, summary }]) => [
    kind,
    {
      post: {
        operationId: `event.${kind}`,
        summary,
        tags: ['webhooks'],
        description: 'Signed per Standard Webhooks: `webhook-id` (the same on every retry), `webhook-timestamp` and `webhook-signature` (`v1,<base64 HMAC-SHA256>`, one per active secret).',
        parameters: ['webhook-id', 'webhook-timestamp', 'webhook-signature'].map((name) => ({ name, in: 'header', required: true, schema: { type: 'string' } })),
        requestBody: { required: true, content: { 'application/json': { schema: components.use(webhookMessage(kind, data)) } } },
        responses: {
          '2XX': { description: 'Received; any other answer, or none within the timeout, is retried on the schedule.' },
          '4XX': { description: 'Refused; retried like any failure, and counted toward disabling the endpoint.' },
        },
        security: [],
      },
    },
  ]);
  return Object.fromEntries(entries);
}

const REFUSALS: Record<number, string> = {
  400: 'InvalidRequest',
  401: 'Unauthenticated',
  403: 'Forbidden',
  404: 'NotFound',
  409: 'Conflict',
  413: 'PayloadTooLarge',
  415: 'UnsupportedMediaType',
  422: 'Unprocessable',
  429: 'RateLimited',
  503: 'NotReady',
};

/**
 * Refusals that several operations answer alike (the same status, description and headers) move to
 * `components/responses`, named after their status; variants of one status are numbered.
 */
function shareRefusals(paths: Record<string, Record<string, { responses: Record<string, unknown> }>>): Record<string, unknown> {
  const uses = new Map<string, number>();
  const each = (visit: (status: string, json: string, responses: Record<string, unknown>) => void) => {
    for (const methods of Object.values(paths)) {
      for (const { responses } of Object.values(methods)) {
        for (const [status, response] of Object.entries(responses)) if (REFUSALS[Number(status)]) visit(status, JSON.stringify(response), responses);
      }
    }
  };
  each((_, json) => uses.set(json, (uses.get(json) ?? 0) + 1));
  const names = new Map<string, string>();
  const shared: Record<string, unknown> = {};
  each((status, json, responses) => {
    if (uses.get(json)! < 2) return;
    let name = names.get(json);
    if (!name) {
      const family = REFUSALS[Number(status)]!;
      const variants = Object.keys(shared).filter((n) => n.replace(/\d+$/, '') === family).length;
      name = variants ? `${family}${variants + 1}` : family;
      names.set(json, name);
      shared[name] = JSON.parse(json);
    }
    responses[status] = { $ref: `#/components/responses/${name}` };
  });
  return shared;
}

let cached: unknown;

export function openApiDocument(): unknown {
  if (cached) return cached;
  const components = new SchemaComponents(SCHEMA_MODULES);
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of ROUTES) {
    (paths[route.path] ??= {})[route.method.toLowerCase()] = operation(route, components);
  }
  const responses = shareRefusals(paths as Parameters<typeof shareRefusals>[0]);
  const hooks = webhooks(components);
  cached = {
    openapi: '3.1.0',
    info: {
      title: 'Gatehouse API',
      version: '1',
      description: 'Governed decisions behind policies compiled to WebAssembly, with a hash-chained audit log. Errors are RFC 9457 problem documents.',
      license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
    },
    jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
    servers: [{ url: '/', description: 'The Gatehouse serving this document.' }],
    tags: Object.entries(TAGS).map(([name, description]) => ({ name, description })),
    paths,
    webhooks: hooks,
    components: {
      schemas: components.schemas(),
      responses,
      headers: HEADERS,
      parameters: PARAMETERS,
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', description: 'An API key (`gh_…`), or a JWT from a configured issuer. The scope listed is the one the operation needs.' },
        session: {
          type: 'apiKey',
          in: 'cookie',
          name: SESSION_COOKIE,
          description: `The console's session (POST /v1/sessions), same-origin only; unsafe methods also send \`${CSRF_HEADER}: 1\`.`,
        },
      },
    },
  };
  return cached;
}
