import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { GatehouseError } from '../errors.ts';

/**
 * Tool inputs are described by JSON Schema (draft 2020-12's core vocabulary as ajv implements
 * draft-07 and later) and checked with ajv. A tool's schema is checked twice when it is
 * registered: against the meta-schema, and by compiling it in ajv's strict mode, which refuses
 * unknown keywords that would otherwise be silently ignored and let anything through. The input
 * of a call must be an object, so a policy can read its fields.
 */
const ajv = new Ajv({ allErrors: true, strict: true });

/** Validators by the canonical text of their schema: the same schema compiles once. */
const compiled = new Map<string, ValidateFunction>();

function compile(schema: object): ValidateFunction {
  const key = JSON.stringify(schema);
  let validate = compiled.get(key);
  if (!validate) {
    validate = ajv.compile(schema);
    compiled.set(key, validate);
  }
  return validate;
}

/** Refuses (400) a tool's `inputSchema` that is not a valid JSON Schema for an object. */
export function checkInputSchema(schema: Record<string, unknown>): void {
  const refuse = (message: string) =>
    new GatehouseError('invalid_request', `inputSchema is not a valid JSON Schema: ${message}`, { errors: [{ path: 'body/inputSchema', message }] });
  if (schema.type !== 'object') throw refuse('its type must be "object" (a tool takes a JSON object)');
  if (!ajv.validateSchema(schema)) throw refuse(ajv.errorsText(ajv.errors));
  try {
    compile(schema);
  } catch (error) {
    throw refuse((error as Error).message);
  }
}

/**
 * Refuses (400) an input that does not match the tool's schema, naming each failure by the
 * JSON pointer of the offending value inside the request body (`/input/amount`).
 */
export function validateToolInput(tool: string, schema: Record<string, unknown>, input: unknown): void {
  const validate = compile(schema);
  if (validate(input)) return;
  const errors = (validate.errors ?? []).slice(0, 10).map((error: ErrorObject) => ({
    pointer: `/input${error.instancePath}`,
    message: error.message ?? error.keyword,
    keyword: error.keyword,
  }));
  throw new GatehouseError('invalid_request', `the input does not match the schema of tool ${tool}: ${errors.map((e) => `${e.pointer} ${e.message}`).join('; ')}`, { errors });
}
