import type { TSchema } from '@sinclair/typebox';
import { TypeCompiler, type TypeCheck } from '@sinclair/typebox/compiler';
import { ValueErrorType } from '@sinclair/typebox/errors';
import { Value } from '@sinclair/typebox/value';
import { GatehouseError } from '../core/errors.ts';

/**
 * Validates request bodies, queries and path parameters against the route's schema. Validators
 * are compiled once per schema. Failures are 400 `invalid_request` listing where and what, at most ten.
 */
const compiled = new WeakMap<TSchema, TypeCheck<TSchema>>();

function checker(schema: TSchema): TypeCheck<TSchema> {
  let check = compiled.get(schema);
  if (!check) {
    check = TypeCompiler.Compile(schema);
    compiled.set(schema, check);
  }
  return check;
}

export function validate<T>(schema: TSchema, value: unknown, where: 'body' | 'query' | 'params'): T {
  const check = checker(schema);
  if (check.Check(value)) return value as T;
  const errors: { path: string; message: string }[] = [];
  for (const error of check.Errors(value)) {
    const message = error.type === ValueErrorType.ArrayUniqueItems ? `${error.message}: ${repeatedItem(error.value as unknown[])} is given twice` : error.message;
    errors.push({ path: `${where}${error.path}`, message });
    if (errors.length === 10) break;
  }
  throw new GatehouseError('invalid_request', `the request ${where} does not match the schema`, { errors });
}

/** The first item of `items` equal to an earlier one, as JSON: what a `uniqueItems` failure names. */
function repeatedItem(items: unknown[]): string {
  const seen = new Set<string>();
  for (const item of items) {
    const text = JSON.stringify(item);
    if (seen.has(text)) return text;
    seen.add(text);
  }
  return 'an item';
}

/**
 * Query strings carry text; convert numbers and booleans the schema asks for before checking. A
 * parameter given twice is refused: keeping either value would hide the other.
 */
export function validateQuery<T>(schema: TSchema, query: URLSearchParams): T {
  const raw: Record<string, string> = {};
  for (const [key, value] of query) {
    if (Object.hasOwn(raw, key)) {
      throw new GatehouseError('invalid_request', `the query gives ${key} twice: give each parameter once`, {
        errors: [{ path: `query/${key}`, message: 'Expected each parameter once' }],
      });
    }
    raw[key] = value;
  }
  return validate<T>(schema, Value.Convert(schema, raw), 'query');
}
