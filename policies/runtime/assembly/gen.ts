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
