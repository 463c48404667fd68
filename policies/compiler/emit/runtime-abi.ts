/**
 * The contract between the precompiled AssemblyScript runtime (`policies/runtime/assembly/`) and
 * the code the emitter generates for each policy. The emitter reads the runtime module with
 * binaryen, replaces the `gen.*` placeholder imports with generated functions, and calls the
 * runtime through the exports below. All value references are i32 pointers; 0 means undefined.
 *
 * OPA ABI exports (what `@open-policy-agent/opa-wasm` calls), implemented by the runtime:
 *   globals opa_wasm_abi_version = 1, opa_wasm_abi_minor_version = 3
 *   opa_malloc(size) → ptr, opa_free(ptr), opa_heap_ptr_get() → ptr, opa_heap_ptr_set(ptr)
 *   opa_json_parse(ptr, len) → value, opa_value_parse(ptr, len) → value
 *   opa_json_dump(value) → NUL-terminated string ptr, opa_value_dump(value) → same
 *   opa_eval_ctx_new() → ctx, opa_eval_ctx_set_input(ctx, v), opa_eval_ctx_set_data(ctx, v),
 *   opa_eval_ctx_set_entrypoint(ctx, id), opa_eval_ctx_get_result(ctx) → value, eval(ctx) → 0
 *   opa_eval(reserved, entrypoint, data, inputPtr, inputLen, heapPtr, format) → result JSON ptr
 *   builtins() → value, entrypoints() → value
 * The runtime imports env.memory, env.opa_abort(ptr) and env.opa_println(ptr).
 */

/** Placeholder imports (module "gen") the emitter replaces with generated functions. */
export const PLACEHOLDERS = {
  /** () → void. Runs once when the module is instantiated: builds the constants. */
  init: { params: 0, result: false },
  /** (entrypoint, input, data) → result set value (a set of {"result": …} objects). */
  eval: { params: 3, result: true },
  /** () → object value {builtinName: id} of the host builtins the module calls. */
  builtins: { params: 0, result: true },
  /** () → object value {entrypointName: id}. */
  entrypoints: { params: 0, result: true },
  /**
   * (unixSeconds, zone) → number value of the zone's UTC offset in seconds, or 0: the host builtin
   * ZONE_OFFSET_BUILTIN (compiler/builtins.ts) in a policy calling a builtin that takes a zone.
   */
  zone_offset: { params: 2, result: true },
} as const;

export type PlaceholderName = keyof typeof PLACEHOLDERS;

/**
 * Runtime exports the generated code calls. [name, parameter count, returns a value].
 * Functions whose result is "boolean" return 1 or 0.
 */
export const RUNTIME_FUNCTIONS = {
  /** (ptr, len): parse the JSON array of constants written at ptr and keep it. */
  rt_set_consts: [2, false],
  /** (index) → the constant value. */
  rt_const: [1, true],
  rt_make_array: [1, true], // (capacity)
  rt_make_object: [0, true],
  rt_make_set: [0, true],
  rt_array_append: [2, false], // (array, value)
  rt_object_insert: [3, false], // (object, key, value)
  rt_object_insert_once: [3, true], // (object, key, value) → 1 inserted/equal, 0 conflict
  rt_set_add: [2, false], // (set, value)
  rt_dot: [2, true], // (collection, key) → value or 0
  rt_len: [1, true], // (value) → number value or 0
  rt_iter_count: [1, true], // (value) → element count as a plain i32 (0 for scalars)
  rt_iter_key: [2, true], // (collection, i) → key of the i-th element (index number for arrays)
  rt_iter_value: [2, true], // (collection, i) → value of the i-th element
  rt_equal: [2, true], // (a, b) → 1/0
  rt_is_array: [1, true],
  rt_is_object: [1, true],
  rt_is_set: [1, true],
  rt_result_set_add: [2, false], // (resultSet, value): adds {"result": value}
  /** (value) → a set of an array's elements (a host builtin's answer that is a set); else as it is. */
  rt_set_of: [1, true],
  /** (stringValue): calls env.opa_abort with the message; does not return. */
  rt_abort: [1, false],
} as const;

export type RuntimeFunction = keyof typeof RUNTIME_FUNCTIONS;
