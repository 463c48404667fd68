import { newDelivery, type Delivery } from '../../core/webhooks/deliveries.ts';
import { endpointView, newSecret, withRotatedSecret, type WebhookEndpoint } from '../../core/webhooks/endpoint.ts';
import { webhookPayload } from '../../core/webhooks/payload.ts';
import { GatehouseError } from '../../core/errors.ts';
import { sortableId } from '../../core/ids.ts';
import { nextRevision } from '../../core/revision.ts';
import type { RequestContext } from '../context.ts';
import { json, type Reply } from '../http/reply.ts';
import { problemResponse, type RouteDef, type RouteResponse } from '../route.ts';
import {
  CreateWebhookBody,
  Delivery as DeliverySchema,
  DeliveryPage,
  ListDeliveriesQuery,
  RotateSecretBody,
  UpdateWebhookBody,
  WebhookEndpoint as EndpointSchema,
  WebhookEndpointList,
  WebhookEndpointWithSecret,
} from '../webhook-schemas.ts';
import { principal } from './principal.ts';

/**
 * Webhook configuration, `/v1/webhooks/config` (scope `webhooks:manage`; docs/webhooks.md).
 * Endpoints belong to the environment of the key that creates them and receive only that
 * environment's events. URLs pass the SSRF guard (core/ssrf-guard.ts) when set. Writes
 * commit with the call's audit entry; test messages and replays join the endpoint's queue behind
 * what is already pending, and the dispatcher is woken by the emit stage.
 */
const BASE = '/v1/webhooks/config';

const REFUSALS: Record<number, RouteResponse> = {
  401: problemResponse('Missing, unknown, revoked or unreviewed API key.'),
  403: problemResponse('The key lacks the webhooks:manage scope.'),
  429: problemResponse('Rate limited.'),
};
const NOT_FOUND = { 404: problemResponse('No such endpoint (or delivery) in this environment.') };

function load(ctx: RequestContext): WebhookEndpoint {
  return ctx.services.webhooks.endpoints.load(principal(ctx).env, ctx.params.id!);
}

function deliveryView(delivery: Delivery): Omit<Delivery, 'env'> {
  const { env: _env, ...view } = delivery;
  return view;
}

function assertEnabled(endpoint: WebhookEndpoint): void {
  if (!endpoint.enabled) throw new GatehouseError('conflict', `webhook endpoint ${endpoint.id} is disabled; enable it with PATCH {"enabled":true} first`);
}

/** The answers of a route that queues a message to one endpoint (`queueDelivery`). */
function queuedResponses(description: string): Record<number, RouteResponse> {
  return {
    202: { description, schema: DeliverySchema },
    ...REFUSALS,
    ...NOT_FOUND,
    409: problemResponse('The endpoint is disabled.'),
  };
}

/**
 * Queues the delivery `draft` makes for the call's endpoint behind its pending deliveries, in the
 * call's transaction, and answers 202 with it. A disabled endpoint is refused first: nothing
 * would drain its queue.
 */
function queueDelivery(ctx: RequestContext, draft: (endpoint: WebhookEndpoint) => Delivery): Reply {
  const { webhooks } = ctx.services;
  const endpoint = load(ctx);
  assertEnabled(endpoint);
  const delivery = draft(endpoint);
  ctx.writes.push(() => webhooks.deliveries.enqueueInTransaction(delivery));
  return json(202, deliveryView(delivery));
}

/** POST /v1/webhooks/config — create an endpoint; its signing secret is in this response only. */
const create: RouteDef = {
  method: 'POST',
  path: BASE,
  operationId: 'createWebhook',
  summary: 'Create a webhook endpoint for this environment\'s events; the response holds its signing secret, shown once.',
  scope: 'webhooks:manage',
  audited: true,
  body: CreateWebhookBody,
  responses: {
    201: { description: 'Created; `secret` (`whsec_…`) is shown only here.', schema: WebhookEndpointWithSecret },
    400: problemResponse('Invalid body, or a URL the SSRF guard refuses (`errors` says why).'),
    ...REFUSALS,
  },
  async handle(ctx) {
    const caller = principal(ctx);
    const body = ctx.body as CreateWebhookBody;
    const { webhooks, events } = ctx.services;
    await webhooks.guard.check(new URL(body.url), 'body/url');
    const now = new Date().toISOString();
    const secret = newSecret();
    const endpoint: WebhookEndpoint = {
      id: sortableId('whk_'),
      env: caller.env,
      url: body.url,
      events: body.events,
      description: body.description ?? null,
      enabled: true,
      disabledReason: null,
      secrets: [{ secret, createdAt: now, expiresAt: null }],
      consecutiveFailures: 0,
      sinceCursor: 0,
      createdBy: caller.keyId,
      createdAt: now,
      updatedAt: now,
    };
    ctx.writes.push(() => {
      webhooks.fanOut.skipToHeadInTransaction();
      // Read in the transaction: events committed before this one predate the endpoint.
      webhooks.endpoints.write({ ...endpoint, sinceCursor: events.head() });
    });
    return json(201, { ...endpointView(endpoint), secret });
  },
};

/** GET /v1/webhooks/config — this environment's endpoints. */
const list: RouteDef = {
  method: 'GET',
  path: BASE,
  operationId: 'listWebhooks',
  summary: 'List this environment\'s webhook endpoints (never their secrets).',
  scope: 'webhooks:manage',
  audited: true,
  responses: { 200: { description: 'The endpoints.', schema: WebhookEndpointList }, ...REFUSALS },
  handle(ctx) {
    return json(200, { data: ctx.services.webhooks.endpoints.list(principal(ctx).env).map((e) => endpointView(e)) });
  },
};

/** GET /v1/webhooks/config/{id} — one endpoint. */
const get: RouteDef = {
  method: 'GET',
  path: `${BASE}/{id}`,
  operationId: 'getWebhook',
  summary: 'Read one webhook endpoint.',
  scope: 'webhooks:manage',
  audited: true,
  responses: { 200: { description: 'The endpoint.', schema: EndpointSchema }, ...REFUSALS, ...NOT_FOUND },
  handle: (ctx) => json(200, endpointView(load(ctx))),
};

/** PATCH /v1/webhooks/config/{id} — change the URL, the events, the description, or enable/disable. */
const update: RouteDef = {
  method: 'PATCH',
  path: `${BASE}/{id}`,
  operationId: 'updateWebhook',
  summary: 'Change an endpoint\'s URL, events or description, or disable and enable it (enabling retries its next delivery at once).',
  scope: 'webhooks:manage',
  audited: true,
  body: UpdateWebhookBody,
  responses: {
    200: { description: 'The endpoint after the change.', schema: EndpointSchema },
    400: problemResponse('Invalid body, or a URL the SSRF guard refuses.'),
    ...REFUSALS,
    ...NOT_FOUND,
  },
  async handle(ctx) {
    const { webhooks } = ctx.services;
    const body = ctx.body as UpdateWebhookBody;
    const endpoint = load(ctx);
    if (body.url !== undefined) await webhooks.guard.check(new URL(body.url), 'body/url');
    const enabling = body.enabled === true && !endpoint.enabled;
    const updated: WebhookEndpoint = {
      ...endpoint,
      ...(body.url !== undefined ? { url: body.url } : {}),
      ...(body.events !== undefined ? { events: body.events } : {}),
      ...(body.description !== undefined ? { description: body.description } : {}),
      ...(body.enabled !== undefined ? { enabled: body.enabled, disabledReason: body.enabled ? null : `disabled by ${principal(ctx).keyId}` } : {}),
      ...(enabling ? { consecutiveFailures: 0 } : {}),
      updatedAt: new Date().toISOString(),
      revision: nextRevision(endpoint),
    };
    ctx.checks.push(() => webhooks.endpoints.assertCurrent(updated));
    ctx.writes.push(() => {
      webhooks.endpoints.write(updated);
      if (enabling) webhooks.deliveries.retryNowInTransaction(endpoint.id);
    });
    return json(200, endpointView(updated));
  },
};

/** DELETE /v1/webhooks/config/{id} — remove an endpoint with its queue and delivery log. */
const remove: RouteDef = {
  method: 'DELETE',
  path: `${BASE}/{id}`,
  operationId: 'deleteWebhook',
  summary: 'Delete a webhook endpoint; its pending deliveries are dropped with its delivery log.',
  scope: 'webhooks:manage',
  audited: true,
  responses: { 200: { description: 'The deleted endpoint.', schema: EndpointSchema }, ...REFUSALS, ...NOT_FOUND },
  handle(ctx) {
    const { webhooks } = ctx.services;
    const endpoint = load(ctx);
    ctx.checks.push(() => webhooks.endpoints.assertCurrent({ ...endpoint, revision: nextRevision(endpoint) }));
    ctx.writes.push(() => {
      webhooks.endpoints.remove(endpoint.id);
      webhooks.deliveries.removeEndpointInTransaction(endpoint.id);
    });
    return json(200, endpointView(endpoint));
  },
};

/** POST /v1/webhooks/config/{id}/rotate-secret — a new secret; the old one signs too for a grace period. */
const rotate: RouteDef = {
  method: 'POST',
  path: `${BASE}/{id}/rotate-secret`,
  operationId: 'rotateWebhookSecret',
  summary: 'Issue a new signing secret, shown once. Until the grace period ends, deliveries carry signatures by both secrets.',
  scope: 'webhooks:manage',
  audited: true,
  body: RotateSecretBody,
  bodyOptional: true,
  responses: { 200: { description: 'The endpoint and its new `secret`.', schema: WebhookEndpointWithSecret }, 400: problemResponse('Invalid body.'), ...REFUSALS, ...NOT_FOUND },
  handle(ctx) {
    const { webhooks } = ctx.services;
    const { graceSeconds } = ctx.body as RotateSecretBody;
    const secret = newSecret();
    const rotated = withRotatedSecret(load(ctx), secret, graceSeconds === undefined ? webhooks.options.rotationGraceMs : graceSeconds * 1000);
    ctx.checks.push(() => webhooks.endpoints.assertCurrent(rotated));
    ctx.writes.push(() => webhooks.endpoints.write(rotated));
    return json(200, { ...endpointView(rotated), secret });
  },
};

/** POST /v1/webhooks/config/{id}/test — queue a `webhook.test` message to the endpoint. */
const test: RouteDef = {
  method: 'POST',
  path: `${BASE}/{id}/test`,
  operationId: 'testWebhook',
  summary: 'Send the endpoint a `webhook.test` message, signed and retried like any other; follow it in the delivery log.',
  scope: 'webhooks:manage',
  audited: true,
  responses: queuedResponses('Queued behind the endpoint\'s pending deliveries.'),
  handle: (ctx) =>
    queueDelivery(ctx, (endpoint) => {
      const at = new Date().toISOString();
      const payload = webhookPayload('webhook.test', at, JSON.stringify({ endpointId: endpoint.id, message: 'A test message from Gatehouse.' }), null);
      return newDelivery({ endpointId: endpoint.id, env: endpoint.env, messageId: sortableId('msg_'), kind: 'webhook.test', cursor: null, payload });
    }),
};

/** GET /v1/webhooks/config/{id}/deliveries — the delivery log, newest first, with every attempt. */
const deliveries: RouteDef = {
  method: 'GET',
  path: `${BASE}/{id}/deliveries`,
  operationId: 'listWebhookDeliveries',
  summary: 'The endpoint\'s deliveries, newest first: status, and every attempt with its HTTP status, latency and response excerpt.',
  scope: 'webhooks:manage',
  audited: true,
  query: ListDeliveriesQuery,
  responses: { 200: { description: 'One page; `nextCursor` is null on the last.', schema: DeliveryPage }, 400: problemResponse('Invalid query.'), ...REFUSALS, ...NOT_FOUND },
  handle(ctx) {
    const { limit, cursor } = ctx.queryValues as ListDeliveriesQuery;
    const page = ctx.services.webhooks.deliveries.list(load(ctx).id, limit ?? 50, cursor);
    return json(200, { data: page.data.map(deliveryView), nextCursor: page.nextCursor });
  },
};

/** POST /v1/webhooks/config/{id}/deliveries/{deliveryId}/replay — send a delivery's message again. */
const replay: RouteDef = {
  method: 'POST',
  path: `${BASE}/{id}/deliveries/{deliveryId}/replay`,
  operationId: 'replayWebhookDelivery',
  summary: 'Queue a delivery\'s message again (same `webhook-id` and body, a fresh signature), behind the endpoint\'s pending deliveries.',
  scope: 'webhooks:manage',
  audited: true,
  responses: queuedResponses('The new delivery.'),
  handle: (ctx) =>
    queueDelivery(ctx, (endpoint) => {
      const original = ctx.services.webhooks.deliveries.get(endpoint.id, ctx.params.deliveryId!);
      const { endpointId, env, messageId, kind, cursor, payload } = original;
      return newDelivery({ endpointId, env, messageId, kind, cursor, payload, replayOf: original.id });
    }),
};

export const webhookRoutes: RouteDef[] = [create, list, get, update, remove, rotate, test, deliveries, replay];
