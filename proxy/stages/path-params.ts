import { Type, type TSchema } from '@sinclair/typebox';
import { GatehouseError } from '../../core/errors.ts';
import type { RequestContext } from '../context.ts';
import { PathParam } from '../id-schema.ts';
import type { RouteDef } from '../route.ts';
import { paramNames } from '../route-table.ts';
import { validate } from '../validation.ts';

/**
 * Path parameters arrive as sent; validation (proxy/stages/parse-body.ts) percent-decodes them
 * here, and each must be a PathParam. A malformed escape (`%ff`) or an id longer than any real
 * one is 400, never a thrown URIError. Until then they are compared undecoded (an API key's own
 * routes, `RouteDef.selfService`): ids never need escaping.
 */
const schemas = new WeakMap<RouteDef, TSchema>();

function schemaOf(route: RouteDef): TSchema {
  let schema = schemas.get(route);
  if (!schema) {
    schema = Type.Object(Object.fromEntries(paramNames(route.path).map((name) => [name, PathParam])));
    schemas.set(route, schema);
  }
  return schema;
}

export function decodePathParams(ctx: RequestContext, route: RouteDef): void {
  const params = ctx.params;
  for (const name in params) {
    try {
      params[name] = decodeURIComponent(params[name]!);
    } catch {
      throw new GatehouseError('invalid_request', `the path parameter ${name} is not valid percent-encoded UTF-8`, {
        errors: [{ path: `params/${name}`, message: 'Expected valid percent-encoding' }],
      });
    }
  }
  validate(schemaOf(route), params, 'params');
}
