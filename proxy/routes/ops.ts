import { GatehouseError } from '../../core/errors.ts';
import { json } from '../http/reply.ts';
import { openApiDocument } from '../openapi.ts';
import { problemResponse, type RouteDef } from '../route.ts';
import { Health, Readiness } from '../schemas.ts';

/**
 * Operations endpoints: liveness, readiness, Prometheus metrics and the API description. They
 * need no key. The probes and metrics are scraped constantly, so they stay out of the audit log;
 * the OpenAPI document is a /v1 call like any other and is recorded.
 */

/** GET /healthz — the process is up and serving. */
const healthz: RouteDef = {
  method: 'GET',
  path: '/healthz',
  operationId: 'healthz',
  summary: 'Liveness: the process answers.',
  scope: null,
  audited: false,
  responses: { 200: { description: 'Alive.', schema: Health } },
  handle: () => json(200, { status: 'ok' }),
};

/**
 * GET /readyz — policies loaded and the store open; 503 otherwise. A policy file that did not
 * compile or load is listed with why, and the answer is `degraded`: the others serve. So is a
 * cluster whose other instances serve other policies (core/cluster/policy-census.ts).
 */
const readyz: RouteDef = {
  method: 'GET',
  path: '/readyz',
  operationId: 'readyz',
  summary: 'Readiness: policies are loaded and the store is open.',
  scope: null,
  audited: false,
  responses: {
    200: { description: 'Ready to serve decisions with the policies listed.', schema: Readiness },
    503: problemResponse('Not ready; `detail` says why.'),
  },
  handle(ctx) {
    const { store, evaluator, draining } = ctx.services;
    const policies = evaluator.names();
    if (!store.isOpen) throw new GatehouseError('not_ready', 'the store is closed');
    if (draining()) throw new GatehouseError('not_ready', 'the server is shutting down');
    const notLoaded = [...(evaluator.loadFailures?.() ?? [])].map(([file, reason]) => ({ file, reason }));
    if (policies.length === 0) throw new GatehouseError('not_ready', 'no policies are loaded', { notLoaded });
    const clusterDifferences = ctx.services.policyDifferences();
    const degraded = notLoaded.length > 0 || clusterDifferences.length > 0;
    return json(200, { status: degraded ? 'degraded' : 'ready', policies, notLoaded, ...(clusterDifferences.length ? { clusterDifferences } : {}) });
  },
};

/** GET /metrics — Prometheus text exposition. */
const metrics: RouteDef = {
  method: 'GET',
  path: '/metrics',
  operationId: 'metrics',
  summary: 'Prometheus metrics: request counts and latency by route and status, policy evaluation, audit append, rate-limit refusals.',
  scope: null,
  audited: false,
  responses: { 200: { description: 'Prometheus text format.', contentType: 'text/plain; version=0.0.4' } },
  async handle(ctx) {
    const { metrics } = ctx.services;
    return { status: 200, headers: { 'content-type': metrics.registry.contentType }, body: await metrics.exposition() };
  },
};

/** GET /v1/openapi.json — this API described as OpenAPI 3.1, built from the route table. */
const openapi: RouteDef = {
  method: 'GET',
  path: '/v1/openapi.json',
  operationId: 'openapi',
  summary: 'The OpenAPI 3.1 document for this API, generated from the schemas that validate requests.',
  scope: null,
  audited: true,
  responses: { 200: { description: 'OpenAPI 3.1 JSON.' } },
  handle: () => json(200, openApiDocument()),
};

export const opsRoutes: RouteDef[] = [healthz, readyz, metrics, openapi];
