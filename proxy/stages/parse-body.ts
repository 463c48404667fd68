import { GatehouseError } from '../../core/errors.ts';
import type { RequestContext } from '../context.ts';
import { repeatedMember } from '../http/json-members.ts';
import { inexactInteger, MAX_JSON_DEPTH, scanJsonText } from '../http/json-text.ts';
import { decodePathParams } from './path-params.ts';
import { validate, validateQuery } from '../validation.ts';

/**
 * Validation, between rate limiting and idempotency (as Fastify validates before handlers): path
 * parameters must be ids (proxy/stages/path-params.ts); a body must be JSON, fit the size limit,
 * nest at most MAX_JSON_DEPTH levels, hold only integers a JavaScript number keeps exactly, name
 * each member once, match the route's schema and pass the route's own `checkBody`; the query must
 * match its schema. A refused body is never claimed for idempotency, so a corrected retry with the
 * same key runs.
 */
const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i;

export function parseBody(ctx: RequestContext): void {
  const route = ctx.route;
  if (!route) return;
  decodePathParams(ctx, route);
  if (route.query) ctx.queryValues = validateQuery(route.query, ctx.query);
  if (ctx.bodyTooLarge) {
    ctx.closeConnection = true;
    throw new GatehouseError('payload_too_large', `the body exceeds ${ctx.services.limits.bodyBytes} bytes`, {
      limit: ctx.services.limits.bodyBytes,
    });
  }
  if (!route.body) return;
  const raw = ctx.rawBody;
  if (!raw || raw.length === 0) {
    if (route.bodyOptional) {
      ctx.body = validate(route.body, {}, 'body');
      return;
    }
    throw new GatehouseError('invalid_request', 'this route needs a JSON body');
  }
  const type = ctx.headers['content-type'] ?? '';
  if (!JSON_TYPE.test(type)) {
    throw new GatehouseError('unsupported_media_type', `send the body as application/json (got ${type || 'no content type'})`);
  }
  const text = raw.toString('utf8');
  const scanned = scanJsonText(text, MAX_JSON_DEPTH);
  if (scanned.tooDeep) {
    throw new GatehouseError('invalid_request', `the body nests deeper than ${MAX_JSON_DEPTH} levels`, {
      errors: [{ path: 'body', message: `Expected at most ${MAX_JSON_DEPTH} levels of nested arrays and objects` }],
    });
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new GatehouseError('invalid_request', `the body is not valid JSON: ${(error as Error).message}`);
  }
  const inexact = scanned.longDigits ? inexactInteger(text) : null;
  if (inexact) {
    throw new GatehouseError('invalid_request', `the body holds the integer ${inexact.slice(0, 64)}, beyond the ±2^53 a JSON number holds exactly (RFC 7493 §2.2): send it as a string`, {
      errors: [{ path: 'body', message: 'Expected an integer a 64-bit float holds exactly (every one within ±9007199254740991 is)' }],
    });
  }
  const repeated = repeatedMember(text, parsed, scanned.members);
  if (repeated) {
    const at = `body${repeated.pointer}`.slice(0, 256);
    throw new GatehouseError('invalid_request', `the body names a member twice in one object (${at}): JSON readers disagree on which one counts`, {
      errors: [{ path: at, message: 'Expected each member name once per object' }],
    });
  }
  ctx.body = validate(route.body, parsed, 'body');
  route.checkBody?.(ctx.body);
}
