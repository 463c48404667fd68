// The OPA Wasm ABI (version 1.3) as `@open-policy-agent/opa-wasm` calls it, on top of the
// placeholder functions the emitter generates for each policy (module "gen").

import { alloc, heapTop, heapReset } from "./heap";
import { Value, UNDEFINED, ByteBuffer, parseJSON, dumpJSON, newSet } from "./value";
import { gen_eval, gen_builtins, gen_entrypoints } from "./gen";
import { dumpResultSet } from "./result-set";

export const opa_wasm_abi_version: i32 = 1;
export const opa_wasm_abi_minor_version: i32 = 3;

export function opa_malloc(size: usize): usize {
  return alloc(size);
}

/** Memory is reclaimed only by resetting the heap pointer. */
export function opa_free(ptr: usize): void {}

export function opa_heap_ptr_get(): usize {
  return heapTop();
}

export function opa_heap_ptr_set(ptr: usize): void {
  heapReset(ptr);
}

export function opa_json_parse(ptr: usize, len: i32): Value {
  return parseJSON(ptr, len);
}

/** Values have no text form beyond JSON here: sets are written as arrays in both. */
export function opa_value_parse(ptr: usize, len: i32): Value {
  return parseJSON(ptr, len);
}

export function opa_json_dump(v: Value): usize {
  const out = ByteBuffer.create(256);
  dumpJSON(out, v, false);
  return out.toCString();
}

export function opa_value_dump(v: Value): usize {
  return opa_json_dump(v);
}

@unmanaged class EvalContext {
  entrypoint: i32;
  input: Value;
  data: Value;
  result: Value;
}

export function opa_eval_ctx_new(): usize {
  const ctx = changetype<EvalContext>(alloc(offsetof<EvalContext>()));
  ctx.entrypoint = 0;
  ctx.input = UNDEFINED;
  ctx.data = UNDEFINED;
  ctx.result = UNDEFINED;
  return changetype<usize>(ctx);
}

export function opa_eval_ctx_set_input(ctx: usize, input: Value): void {
  changetype<EvalContext>(ctx).input = input;
}

export function opa_eval_ctx_set_data(ctx: usize, data: Value): void {
  changetype<EvalContext>(ctx).data = data;
}

export function opa_eval_ctx_set_entrypoint(ctx: usize, entrypoint: i32): void {
  changetype<EvalContext>(ctx).entrypoint = entrypoint;
}

export function opa_eval_ctx_get_result(ctx: usize): Value {
  return changetype<EvalContext>(ctx).result;
}

/** The ABI's `eval(ctx)`, exported under that name (not a usable identifier in the source). */
function evaluate(ctx: usize): i32 {
  const c = changetype<EvalContext>(ctx);
  c.result = resultSetOf(gen_eval(c.entrypoint, c.input, c.data));
  return 0;
}
export { evaluate as eval };

/**
 * ABI 1.2 fast path: one call per evaluation. The host has written the input JSON at inputPtr
 * and passes the heap pointer just past it; the result set's JSON is returned.
 */
export function opa_eval(
  reserved: usize, entrypoint: i32, data: Value, inputPtr: usize, inputLen: i32, heapPtr: usize, format: i32,
): usize {
  heapReset(heapPtr);
  const input = inputLen > 0 ? parseJSON(inputPtr, inputLen) : UNDEFINED;
  return dumpResultSet(resultSetOf(gen_eval(entrypoint, input, data)));
}

// An evaluation that produced nothing still has a result set: an empty one.
// @ts-ignore: decorator
@inline
function resultSetOf(v: Value): Value {
  return v ? v : newSet(0);
}

export function builtins(): Value {
  return gen_builtins();
}

export function entrypoints(): Value {
  return gen_entrypoints();
}
