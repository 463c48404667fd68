import { Type } from '@sinclair/typebox';
import type { PolicyInfo } from '../../core/policy-evaluator.ts';
import { GatehouseError } from '../../core/errors.ts';
import { json } from '../http/reply.ts';
import { keyRefusals, problemResponse, type RouteDef } from '../route.ts';

/**
 * GET /v1/policies — the policies this server has loaded, with the version their name carries,
 * the module hash decisions and audit entries record, and what the module was built from: what a
 * reviewer checks a decision's `policy` and `moduleHash` against.
 */
const PolicySummary = Type.Object({
  name: Type.String({ examples: ['spend-approval-v1'] }),
  family: Type.String({ description: 'The name without its version suffix.', examples: ['spend-approval'] }),
  version: Type.Union([Type.Integer(), Type.Null()], { description: 'The number of the `-v<N>` suffix; null for a name without one.' }),
  moduleHash: Type.String(),
  origin: Type.Union([Type.String(), Type.Null()], { description: '`rego` (built here) or `bundle` (`opa build -t wasm`); null when the engine does not say.' }),
  sources: Type.Array(Type.String(), { description: 'The Rego files compiled into the module, or the bundle file.' }),
  revision: Type.Union([Type.String(), Type.Null()], { description: "A bundle's revision from its `.manifest`; null otherwise." }),
});

export const PolicyList = Type.Object({ data: Type.Array(PolicySummary) });

/** One policy with the Rego text its module was compiled from (OPA's `GET /v1/policies/{id}` calls it `raw`). */
export const PolicyDetail = Type.Composite([
  PolicySummary,
  Type.Object({
    modules: Type.Array(Type.Object({ path: Type.String({ examples: ['spend-approval-v1.rego'] }), text: Type.String() }), {
      description:
        "The Rego modules the module was compiled from, as they were at that build (a build's libraries included), or those a bundle carries; empty when the engine kept none (a bundle without sources).",
    }),
  }),
]);

const VERSIONED = /^(.*)-v(\d+)$/;

function summaryOf(name: string, info: PolicyInfo) {
  const versioned = VERSIONED.exec(name);
  return {
    name,
    family: versioned ? versioned[1]! : name,
    version: versioned ? Number(versioned[2]) : null,
    moduleHash: info.moduleHash,
    origin: info.origin ?? null,
    sources: [...(info.sources ?? [])],
    revision: info.revision ?? null,
  };
}

const list: RouteDef = {
  method: 'GET',
  path: '/v1/policies',
  operationId: 'listPolicies',
  summary: 'The loaded policies: name, version, module hash and the sources each module was built from.',
  scope: 'decisions:read',
  audited: true,
  responses: {
    200: { description: 'Every loaded policy, by name.', schema: PolicyList },
    ...keyRefusals('decisions:read'),
  },
  handle(ctx) {
    const { evaluator } = ctx.services;
    const data = evaluator.names().flatMap((name) => {
      const info = evaluator.info(name);
      return info ? [summaryOf(name, info)] : [];
    });
    return json(200, { data });
  },
};

/**
 * GET /v1/policies/{name} — one loaded policy with the Rego it was compiled from: what a reviewer
 * reads to know why a decision went the way it did. The text is the build's copy, so it is what
 * the module holding `moduleHash` was compiled from even after the files on disk change.
 */
const get: RouteDef = {
  method: 'GET',
  path: '/v1/policies/{name}',
  operationId: 'getPolicy',
  summary: 'A loaded policy with the Rego text of the modules it was compiled from.',
  scope: 'decisions:read',
  audited: true,
  responses: {
    200: { description: 'The policy and its sources.', schema: PolicyDetail },
    ...keyRefusals('decisions:read'),
    404: problemResponse('No policy of that name is loaded.'),
  },
  handle(ctx) {
    const name = ctx.params.name!;
    const { evaluator } = ctx.services;
    const info = evaluator.has(name) ? evaluator.info(name) : undefined;
    if (!info) throw new GatehouseError('not_found', `no policy ${name} is loaded`);
    return json(200, { ...summaryOf(name, info), modules: info.modules ?? [] });
  },
};

export const policyRoutes: RouteDef[] = [list, get];
