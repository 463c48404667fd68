// The placeholder imports (module "gen") that the emitter replaces with each policy's generated
// functions (compiler/emit/runtime-abi.ts, PLACEHOLDERS).

/** Builds the policy's constants; runs once when the module is instantiated. */
@external("gen", "init")
export declare function gen_init(): void;

/** Evaluates an entrypoint and returns the result set (a set of {"result": …} objects). */
@external("gen", "eval")
export declare function gen_eval(entrypoint: i32, input: usize, data: usize): usize;

/** Object {builtinName: id} of the host builtins the policy calls. */
@external("gen", "builtins")
export declare function gen_builtins(): usize;

/** Object {entrypointName: id}. */
@external("gen", "entrypoints")
export declare function gen_entrypoints(): usize;

/**
 * The UTC offset, in seconds east, of the named time zone (a string value) at a Unix time in whole
 * seconds (a number value): a number value, or 0 for a zone the host does not know. The emitter
 * makes it a call of the host builtin `gatehouse.time.zone_offset` (compiler/builtins.ts,
 * ZONE_OFFSET_BUILTIN) in a policy whose time builtins may be given a zone.
 */
@external("gen", "zone_offset")
export declare function gen_zone_offset(unixSeconds: usize, zone: usize): usize;
