import { Type } from '@sinclair/typebox';
import { json } from '../http/reply.ts';
import { keyRefusals, type RouteDef } from '../route.ts';

/**
 * GET /v1/policies — the policies this server has loaded, with the version their name carries,
 * the module hash decisions and audit entries record, and what the module was built from: what a
 * reviewer checks a decision's `policy` and `moduleHash` against.
 */
export const PolicyList = Type.Object({
  data: Type.Array(
    Type.Object({
      name: Type.String({ examples: ['spend-approval-v1'] }),
      family: Type.String({ description: 'The name without its version suffix.', examples: ['spend-approval'] }),
      version: Type.Union([Type.Integer(), Type.Null()], { description: 'The number of the `-v<N>` suffix; null for a name without one.' }),
      moduleHash: Type.String(),
      origin: Type.Union([Type.String(), Type.Null()], { description: '`rego` (built here) or `bundle` (`opa build -t wasm`); null when the engine does not say.' }),
      sources: Type.Array(Type.String(), { description: 'The Rego files compiled into the module, or the bundle file.' }),
      revision: Type.Union([Type.String(), Type.Null()], { description: "A bundle's revision from its `.manifest`; null otherwise." }),
    }),
  ),
});

const VERSIONED = /^(.*)-v(\d+)$/;

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
      if (!info) return [];
      const versioned = VERSIONED.exec(name);
      return [
        {
          name,
          family: versioned ? versioned[1]! : name,
          version: versioned ? Number(versioned[2]) : null,
          moduleHash: info.moduleHash,
          origin: info.origin ?? null,
          sources: [...(info.sources ?? [])],
          revision: info.revision ?? null,
        },
      ];
    });
    return json(200, { data });
  },
};

export const policyRoutes: RouteDef[] = [list];
