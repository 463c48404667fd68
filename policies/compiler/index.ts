/**
 * The Rego → OPA-ABI WebAssembly compiler: parse → check → plan → emit.
 */
export interface SourceFile {
  path: string;
  text: string;
}

export interface CompileOptions {
  /**
   * Entrypoints as slash paths below `data`: `pkg/sub/rule` for a rule, `pkg/sub` for the whole
   * package document. The first is entrypoint 0 (what `evaluate(input)` uses by default).
   */
  entrypoints: string[];
}

export interface CompiledModule {
  /** An OPA-ABI Wasm module loadable with `loadPolicy` from `@open-policy-agent/opa-wasm`. */
  wasm: Uint8Array;
  entrypoints: string[];
  /** The plan (IR) printed for debugging. */
  ir: string;
}
